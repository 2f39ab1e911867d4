"""The pass/fail checks of a run (issue 10, section 3), each a pure function of the result.

  conditions  every job the server accepted has a condition within the timeout (60 s)
  no-pods     a job that ended Failed/JobValidFailed never had a pod, by label or owner;
              one failed on a child the API server refused (InvalidPodTemplate, ...: a
              422 or 400) may have the pods created before the refusal: counted apart
  alive       the controller process (same pid) lived throughout and /healthz was always 200
  foreign     pods owned by someone else (a live ConfigMap) kept their uid and
              resourceVersion, and the pod watch saw no change to them
  no-crash    no error line carries an exception raised by the controller's own code
              (RecursionError, AttributeError, ...): only API answers (a 409, a pod the
              server rejects) may fail a reconcile, and those are retried with back-off

A failing check names its cases, so their bodies can be written out as reproductions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hack.fuzz.run import NAMESPACE, RunResult


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    cases: set[int] = field(default_factory=set)
    lines: list[str] = field(default_factory=list)


def check_conditions(result: RunResult) -> Check:
    timeout = result.options.condition_timeout
    late = [
        o for o in result.outcomes
        if o.accepted and not o.gone_early and (o.latency is None or o.latency > timeout)
    ]  # fmt: skip
    accepted = sum(o.accepted and not o.gone_early for o in result.outcomes)
    gone = sum(o.gone_early for o in result.outcomes)
    lines = [
        f"{o.name} (case {o.case.index}): "
        + ("no condition" if o.latency is None else f"first condition after {o.latency:.1f}s")
        for o in late
    ]
    return Check(
        "conditions",
        not late,
        f"{accepted - len(late)} of {accepted} accepted jobs had a condition within "
        f"{timeout:.0f}s ({gone} more were garbage-collected first: their owner never was)",
        {o.case.index for o in late},
        lines,
    )


def check_no_pods(result: RunResult) -> Check:
    failed = [o for o in result.outcomes if o.accepted and o.invalid]
    invalid = [o for o in failed if not o.refused]
    refused = [o for o in failed if o.refused]
    bad = [o for o in invalid if o.pods]
    return Check(
        "no-pods",
        not bad,
        f"{len(invalid) - len(bad)} of {len(invalid)} invalid jobs never had a pod; "
        f"{len(refused)} more failed on a child the API server refused (422 or 400), "
        f"{sum(bool(o.pods) for o in refused)} of them after their first pods",
        {o.case.index for o in bad},
        [f"{o.name} (case {o.case.index}): pods {sorted(o.pods)}" for o in bad],
    )


def check_alive(result: RunResult) -> Check:
    health = result.health
    problems = list(dict.fromkeys(health.failures))
    if not result.controller_alive_at_end:
        problems.append("controller not running at the end")
    if result.controller_exit not in (0,):
        problems.append(f"controller exit status on SIGTERM: {result.controller_exit}")
    return Check(
        "alive",
        not problems and health.polls > 0,
        f"pid {result.controller_pid}; /healthz {health.polls - len(health.failures)} of "
        f"{health.polls} polls 200 (slowest {health.max_seconds * 1000:.0f} ms)",
        lines=problems,
    )


def check_foreign(result: RunResult) -> Check:
    lines = []
    for pod in result.foreign:
        now = result.foreign_after.get(pod.name)
        if now is None:
            lines.append(f"{NAMESPACE}/{pod.name}: gone")
            continue
        meta = now.get("metadata") or {}
        if meta.get("uid") != pod.uid:
            lines.append(f"{pod.name}: uid {pod.uid} -> {meta.get('uid')}")
        elif meta.get("resourceVersion") != pod.resource_version:
            lines.append(
                f"{pod.name}: resourceVersion {pod.resource_version} -> "
                f"{meta.get('resourceVersion')} (owner refs now {meta.get('ownerReferences')})"
            )
        events = result.foreign_events.get(pod.uid, [])
        changes = [e for e in events if e not in ("LISTED", "ADDED")]
        if changes:
            lines.append(f"{pod.name}: watch saw {changes}")
    return Check(
        "foreign",
        not lines,
        f"{len(result.foreign)} foreign pods (owned by a ConfigMap, our job-name label), "
        f"{len(result.foreign) - len({line.split(':')[0] for line in lines})} untouched",
        lines=lines,
    )


def check_no_crash(result: RunResult) -> Check:
    """No exception from the controller's own code: on stored input, every path is total."""
    crashes = {f: n for f, n in result.failures.items() if not f.from_api}
    by_key = {f"{NAMESPACE}/{o.name}": o.case.index for o in result.outcomes if o.accepted}
    by_name = {o.name: o.case.index for o in result.outcomes if o.accepted}
    cases = {by_key.get(f.where, by_name.get(f.where.split("/")[-1], -1)) for f in crashes}
    where = {f.where for f in crashes}
    return Check(
        "no-crash",
        not crashes,
        f"{sum(crashes.values())} errors raised by the controller's own code, in {len(where)} "
        "jobs or informers",
        cases - {-1},
        [
            f"{f.where}: {n} x {f.event}: {f.exc_type}: {f.message}"
            for f, n in sorted(crashes.items(), key=lambda item: (item[0].where, -item[1]))
        ],
    )


def all_checks(result: RunResult) -> list[Check]:
    return [
        check_conditions(result),
        check_no_pods(result),
        check_alive(result),
        check_foreign(result),
        check_no_crash(result),
    ]

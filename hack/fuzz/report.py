"""The printed figures of a run: what the server said, what became of the jobs, how fast.

Plain text, one figure a line, so docs/fuzz.md can quote a run and the smoke test can read
the verdict line (`RESULT: PASS` or `RESULT: FAIL`).
"""

from __future__ import annotations

import math
from collections import Counter

from hack.fuzz.checks import Check
from hack.fuzz.run import RunResult


def percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile (no interpolation: a figure that some job really had)."""
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def end_state(final: tuple[str, str]) -> str:
    kind, reason = final
    if not kind:
        return "no condition"
    return f"{kind}({reason})" if kind == "Failed" else kind


def counts_line(counter: Counter[str]) -> str:
    return ", ".join(f"{k} {n}" for k, n in counter.most_common())


def figures(result: RunResult) -> list[str]:
    o = result.options
    outcomes = result.outcomes
    accepted = [x for x in outcomes if x.accepted]
    codes = Counter(str(x.code) for x in outcomes)
    rejected = Counter(
        f"{x.code} {x.reason}".strip() for x in outcomes if not x.accepted
    )  # fmt: skip
    ends = Counter("deleted (GC)" if x.gone_early else end_state(x.final) for x in accepted)
    latencies = [x.latency for x in accepted if x.latency is not None]
    ops = Counter(op for x in outcomes for op in x.case.operators)
    ops_accepted = Counter(op for x in accepted for op in x.case.operators)
    pods_valid = sum(len(x.pods) for x in accepted if not x.invalid)
    lines = [
        f"backend          {o.backend} ({o.nodes} simulated nodes)",
        f"cases            {len(outcomes)} POSTed at {o.rate:g}/s in {result.submit_seconds:.1f}s",
        f"server           {counts_line(codes)}",
        f"  rejected       {counts_line(rejected) or '-'}",
        *server_errors(result),
        f"accepted         {len(accepted)}",
        f"  ended          {counts_line(ends) or '-'}",
    ]
    if latencies:
        lines.append(
            f"first condition  p50 {percentile(latencies, 50):.2f}s, "
            f"p99 {percentile(latencies, 99):.2f}s, max {max(latencies):.2f}s "
            f"({len(latencies)} jobs)"
        )
    by_name = {x.name: x for x in accepted}
    for pod in result.foreign:
        job = by_name.get(pod.job_label)
        what = end_state(job.final) if job else "no such job"
        lines.append(f"foreign pod      {pod.name} (job-name {pod.job_label}: {what})")
    lines += [
        f"pods             {pods_valid} for valid jobs; {result.pods_seen} pods seen in all",
        f"mutations        {counts_line(ops)}",
        f"  of accepted    {counts_line(ops_accepted) or '-'}",
        f"controller       pid {result.controller_pid}, CPU {result.controller_cpu:.1f}s, "
        f"log levels {dict(sorted(result.log_levels.items()))}, "
        f"exit on SIGTERM {result.controller_exit}",
        controller_work(result),
        api_retries(result),
        f"fuzzer process   CPU {result.fuzzer_cpu:.1f}s"
        + (" (the local API server and kubelet run in it)" if o.backend == "local" else ""),
        f"watches          {result.pod_relists} re-lists"
        + (f", errors: {result.observer_errors[:3]}" if result.observer_errors else ""),
        f"machine          {_cores()} cores, load average "
        f"{_load(result.load_before)} before, {_load(result.load_after)} after",
        f"wall time        {result.wall_seconds:.0f}s",
    ]
    return lines


def controller_work(result: RunResult) -> str:
    """Requests, reconciles and queue wait from the controller's own /metrics at the end."""
    m = result.metrics
    if not m:
        return "  work           (no /metrics)"
    waited = m.get("workqueue_queue_duration_seconds_sum", 0.0)
    queued = m.get("workqueue_queue_duration_seconds_count", 0.0) or 1.0
    return (
        f"  work           {m.get('rest_client_requests_total', 0):.0f} API requests, "
        f"{m.get('controller_runtime_reconcile_total', 0):.0f} reconciles, "
        f"{m.get('workqueue_retries_total', 0):.0f} retries, "
        f"mean queue wait {waited / queued:.2f}s"
    )


def api_retries(result: RunResult) -> str:
    """Jobs retried on API answers (by design, with back-off), by the kind of answer."""
    threshold = result.options.retry_threshold
    per_key: Counter[str] = Counter()
    kinds: dict[str, str] = {}
    for failure, n in result.failures.items():
        if failure.from_api:
            per_key[failure.where] += n
            kinds[failure.where] = _answer(failure.message)
    often = [k for k, n in per_key.items() if n >= threshold]
    by_kind = Counter(kinds[k] for k in often)
    return (
        f"  API retries    {sum(per_key.values())} failed reconciles on API answers; "
        f"{len(often)} jobs {threshold}+ times ({counts_line(by_kind) or '-'})"
    )


def _answer(message: str) -> str:
    """'create Pod x: 422 Invalid: ...' -> 'create Pod 422'; 'status: 409 ...' -> 'status 409'."""
    head, _, rest = message.partition(": ")
    code = rest.split(" ", 1)[0] if rest[:1].isdigit() else "?"
    what = " ".join(head.split(" ")[:2]) if head.startswith("create") else head
    return f"{what} {code}"


def server_errors(result: RunResult) -> list[str]:
    """The 5xx replies by message: the API server failing, not refusing (worth a look)."""
    errors = Counter(x.message or "(no message)" for x in result.outcomes if x.code >= 500)
    return [f"  5xx            {n} x {message}" for message, n in errors.most_common()]


def _load(load: tuple[float, float, float]) -> str:
    return "/".join(f"{v:.2f}" for v in load)


def _cores() -> int:
    import os

    return os.cpu_count() or 0


def verdict(checks: list[Check]) -> list[str]:
    lines = []
    for check in checks:
        lines.append(f"{'ok  ' if check.ok else 'FAIL'} {check.name:<11} {check.detail}")
        lines.extend(f"       {line}" for line in check.lines[:20])
        if len(check.lines) > 20:
            lines.append(f"       ... and {len(check.lines) - 20} more")
    passed = all(c.ok for c in checks)
    lines.append(f"RESULT: {'PASS' if passed else 'FAIL'}")
    return lines


def repro_lines(result: RunResult, failing: set[int]) -> list[str]:
    if not failing:
        return []
    seed = result.options.seed
    only = ",".join(str(i) for i in sorted(failing))
    files = " ".join(f"{result.out_dir}/case-{i:04d}.json" for i in sorted(failing)[:3])
    again = f"--seed {seed} --only {only}" if not result.options.replay else ""
    lines = [
        f"reproductions    {result.out_dir}/case-NNNN.json (the exact bytes POSTed)",
        f"  replay         python -m hack.fuzz {again or '--replay ' + files}",
    ]
    if again:
        lines.append(f"  or the bytes   python -m hack.fuzz --replay {files}")
    by_index = {x.case.index: x for x in result.outcomes}
    for index in sorted(failing)[:10]:
        case = by_index[index].case
        lines.append(f"  case {index:<5} {case.sample}: {'; '.join(case.mutations) or '(none)'}")
    return lines

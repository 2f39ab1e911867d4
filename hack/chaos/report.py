"""The figures of a run: a text report for people, a JSON document for tests and docs.

The last line of the text is `chaos: PASSED` or `chaos: FAILED (<n> problems)`, so a script
(or the smoke test) can tell without parsing the rest.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

from hack.chaos.jobs import KINDS
from hack.chaos.run import Result

MAX_SHOWN = 40  # problems listed in the text; the JSON has them all


def _seconds(values: list[float]) -> str:
    if not values:
        return "none measured"
    return (
        f"median {statistics.median(values):.2f} s, min {min(values):.2f}, "
        f"max {max(values):.2f} (n={len(values)})"
    )


def _quantiles(values: list[float]) -> str:
    if not values:
        return "none finished"
    ranked = sorted(values)
    p95 = ranked[min(len(ranked) - 1, round(0.95 * (len(ranked) - 1)))]
    return f"p50 {statistics.median(ranked):.1f} s, p95 {p95:.1f} s, max {ranked[-1]:.1f} s"


def _faults_line(result: Result) -> str:
    faults = result.faults
    if not faults:
        return "faults: never started"
    injected = faults["injected"]
    failed = sum(injected.values())
    seen = faults["consulted"]
    share = 100.0 * failed / seen if seen else 0.0
    codes = ", ".join(f"{code} x{n}" for code, n in sorted(injected.items()))
    return (
        f"faults: {failed} of {seen} API requests failed on purpose "
        f"({share:.1f}%: {codes}); "
        f"{faults['watch_drops']} watch drops, {faults['forced_410']} forced 410s, "
        f"{faults['resets']} proxy resets ({faults['connections_reset']} connections cut)"
    )


def _partition_line(result: Result) -> str:
    part = result.partition
    if part is None:
        return "partition: not run"
    stall = "never" if part.stall is None else f"{part.stall:.1f} s"
    lease = "kept" if part.leader_kept_lease else "lost"
    return (
        f"partition: {part.connections} open connections of the leader ({part.slot}) went "
        f"dead; a job created then got its first pod after {stall}; the leader {lease} its lease"
    )


def _bed_lines(result: Result) -> list[str]:
    """The real backend's own counts: what the fault proxy relayed, and the monitor's relists
    (any relist is also listed as a problem: the monitor has a gap)."""
    extra = result.bed_extra
    if not extra:
        return []
    lines = [
        f"  fault proxy: {extra['proxy_requests']} requests and {extra['proxy_watches']} "
        f"watches relayed, {extra['proxy_upstream_errors']} upstream errors; monitor "
        f"relists: {extra['monitor_relists']}"
    ]
    for what, spread in extra.get("proxy_latency", {}).items():
        lines.append(
            f"  proxy arrival -> answer ({what}, n={spread['n']}): p50 {spread['p50']:.3f} s, "
            f"p99 {spread['p99']:.3f} s, max {spread['max']:.3f} s"
        )
    return lines


def _kinds_lines(result: Result) -> list[str]:
    verdict = result.verdict
    lines = []
    for kind in KINDS:
        total = verdict.by_kind[kind.name]
        exact = verdict.exact_by_kind[kind.name]
        lines.append(
            f"  {kind.name:<14} {exact:>4}/{total:<4} exact  "
            f"(expect {kind.state}/{kind.reason}, restartCount {kind.restarts}, {kind.pods} pods)"
        )
    return lines


def text(result: Result) -> str:
    cfg = result.config
    verdict = result.verdict
    total = sum(verdict.by_kind.values())
    times = cfg.times
    lines = [
        "",
        f"chaos: {cfg.backend} backend, seed {cfg.seed}, {total} jobs, "
        f"{len(result.kills)} leader kills, 2 replicas, "
        f"lease {times.lease:g}s / renew {times.renew:g}s / retry {times.retry:g}s",
        "jobs by kind (state, reason, restartCount and pods created all exact):",
        *_kinds_lines(result),
        f"outcomes exact: {verdict.outcome_exact}/{total}; pods created exact: "
        f"{verdict.pods_exact}/{total}; stuck: {len(verdict.stuck)}",
        _faults_line(result),
        f"  faulted clients: {result.faulted}",
        *_bed_lines(result),
        f"failover (SIGKILL -> lease names the other replica): {_seconds(result.failovers)}",
        f"job creation -> finished: {_quantiles(result.job_seconds)}",
        _partition_line(result),
        f"replica exits the run did not cause: {len(result.exits)}",
        *(f"  {e.slot} pid {e.pid} exit {e.code}: {e.why}" for e in result.exits),
        f"wall time {result.wall:.1f} s (jobs submitted over {result.submit_seconds:.1f} s); "
        f"CPU: this process {result.cpu_bed:.0f} s, controllers {result.cpu_controllers:.0f} s"
        + (f", control plane {result.cpu_server:.0f} s" if result.cpu_server else ""),
        "load average before {:.2f} {:.2f} {:.2f}, after {:.2f} {:.2f} {:.2f}".format(
            *result.load_before, *result.load_after
        ),
    ]
    problems = result.notes + verdict.failures
    if problems:
        lines.append(f"problems ({len(problems)}):")
        lines += [f"  {p}" for p in problems[:MAX_SHOWN]]
        if len(problems) > MAX_SHOWN:
            lines.append(f"  ... and {len(problems) - MAX_SHOWN} more (see the JSON report)")
        lines.append(f"logs and kubeconfigs kept in {result.workdir}")
    lines.append("chaos: PASSED" if result.passed else f"chaos: FAILED ({len(problems)} problems)")
    return "\n".join(lines)


def document(result: Result) -> dict[str, Any]:
    cfg = result.config
    verdict = result.verdict
    failovers = result.failovers
    return {
        "passed": result.passed,
        "backend": cfg.backend,
        "seed": cfg.seed,
        "jobs": sum(verdict.by_kind.values()),
        "by_kind": dict(verdict.by_kind),
        "exact_by_kind": dict(verdict.exact_by_kind),
        "outcome_exact": verdict.outcome_exact,
        "pods_exact": verdict.pods_exact,
        "stuck": verdict.stuck,
        "kills": len(result.kills),
        "failovers": failovers,
        "failover_median": statistics.median(failovers) if failovers else None,
        "partition": None if result.partition is None else vars(result.partition),
        "unplanned_exits": [vars(e) for e in result.exits],
        "faults": result.faults,
        "faulted_clients": result.faulted,
        "bed": result.bed_extra,
        "requests": result.requests,
        "driver_retries": result.driver_retries,
        "wall_seconds": result.wall,
        "submit_seconds": result.submit_seconds,
        "job_seconds_p50": statistics.median(result.job_seconds) if result.job_seconds else None,
        "job_seconds_max": max(result.job_seconds) if result.job_seconds else None,
        "cpu_seconds": {
            "bed": result.cpu_bed,
            "controllers": result.cpu_controllers,
            "control_plane": result.cpu_server,
        },
        "load_before": result.load_before,
        "load_after": result.load_after,
        "problems": result.notes + verdict.failures,
        "workdir": str(result.workdir),
    }


def write_json(result: Result, path: Path) -> None:
    path.write_text(json.dumps(document(result), indent=2, default=str) + "\n")

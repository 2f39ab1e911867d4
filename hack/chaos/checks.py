"""The verdicts of a chaos run, as pure functions of what was planned and what was seen.

Per job: the state and reason of its last condition and its exact `status.restartCount`
(from a LIST after the run), and how many pods it ever got (the monitor counts every pod
object created, so a spurious re-creation shows even if it was deleted again). Per run: the
monitor's violations (two live pods for one replica index, more live pods than replicas, a pod
created for a finished job, a finished job that changed, a restart count that fell) and no
Pending or Running pod left behind by a finished job (cleanPodPolicy Running).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ascendjob_controller.job.types import LABEL_JOB_NAME
from hack.chaos.jobs import PlannedJob
from hack.chaos.monitor import JobTrace

LIVE_PHASES = ("", "Pending", "Running")


@dataclass(frozen=True)
class Outcome:
    """What a job ended as: (state, reason, restartCount) of the stored object."""

    state: str | None
    reason: str | None
    restarts: int | None

    @classmethod
    def of(cls, job: dict[str, Any] | None) -> Outcome:
        if job is None:
            return cls("<missing>", None, None)
        status = job.get("status") or {}
        conditions = status.get("conditions") or []
        last = conditions[-1] if conditions else {}
        count = status.get("restartCount")
        return cls(last.get("type"), last.get("reason"), count if isinstance(count, int) else None)


@dataclass
class Verdict:
    failures: list[str] = field(default_factory=list)
    by_kind: Counter[str] = field(default_factory=Counter)  # kind -> jobs
    exact_by_kind: Counter[str] = field(default_factory=Counter)  # kind -> jobs all exact
    outcome_exact: int = 0
    pods_exact: int = 0
    stuck: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.failures


def check_job(planned: PlannedJob, job: dict[str, Any] | None, trace: JobTrace | None) -> list[str]:
    """The problems of one job, empty when it ended exactly as planned."""
    kind = planned.kind
    got = Outcome.of(job)
    want = Outcome(kind.state, kind.reason, kind.restarts)
    problems = []
    if got != want:
        problems.append(
            f"{planned.name}: ended {got.state}/{got.reason} restartCount {got.restarts}, "
            f"expected {want.state}/{want.reason} restartCount {want.restarts}"
        )
    pods = trace.pods_created if trace is not None else 0
    if pods != kind.pods:
        problems.append(f"{planned.name}: {pods} pods created, expected {kind.pods}")
    return problems


def leftover_pods(pods: list[dict[str, Any]], finished: set[str]) -> list[str]:
    """Pods still Pending or Running (not being deleted) of jobs that have finished."""
    out = []
    for pod in pods:
        meta = pod.get("metadata") or {}
        job = (meta.get("labels") or {}).get(LABEL_JOB_NAME)
        phase = (pod.get("status") or {}).get("phase") or ""
        if job in finished and phase in LIVE_PHASES and not meta.get("deletionTimestamp"):
            out.append(f"{job}: pod {meta.get('name')} left {phase or 'unscheduled'}")
    return out


def judge(
    planned: list[PlannedJob],
    jobs: dict[str, dict[str, Any]],
    traces: dict[str, JobTrace],
    pods: list[dict[str, Any]],
    violations: list[str],
) -> Verdict:
    """Every check of the module docstring over the whole run."""
    verdict = Verdict()
    finished = set()
    for plan in planned:
        job = jobs.get(plan.name)
        trace = traces.get(plan.name)
        verdict.by_kind[plan.kind.name] += 1
        got = Outcome.of(job)
        if got.state in ("Succeeded", "Failed"):
            finished.add(plan.name)
        else:
            verdict.stuck.append(f"{plan.name} ({plan.kind.name}): {got.state}/{got.reason}")
        problems = check_job(plan, job, trace)
        verdict.failures += problems
        if got == Outcome(plan.kind.state, plan.kind.reason, plan.kind.restarts):
            verdict.outcome_exact += 1
        if trace is not None and trace.pods_created == plan.kind.pods:
            verdict.pods_exact += 1
        if not problems:
            verdict.exact_by_kind[plan.kind.name] += 1
    verdict.failures += violations
    verdict.failures += leftover_pods(pods, finished)
    return verdict

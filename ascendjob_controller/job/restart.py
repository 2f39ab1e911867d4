"""Restart-policy and backoff decisions (design section 4, "Restart policy and backoff").

One counting rule for every policy: a restart is each in-place container restart kubelet
performs, plus each pod the controller recreates. `backoffLimit: N` allows N restarts; the
failure that would need restart N+1 fails the job with BackoffLimitExceeded. The limit is
`runPolicy.backoffLimit`, else MindCluster's job label `fault-retry-times` (`backoff_limit`).

The count must survive pod re-creation and controller restarts while `plan` stays a pure
function of (job, pods), so the bookkeeping lives in the job's status (the `RestartLedger`):
- `restartCount`: the running total, what `kubectl get acjob` prints as RESTARTS;
- `countedContainerRestarts`: pod uid -> the container restarts of that live pod already added
  to the total, so a pod's kubelet counter is folded in exactly once, however often we look;
- `recreatedPods`: uids of failed pods already counted as recreated, so a failed pod that is
  still in the cache on the next reconcile (deletion not yet observed) is not counted twice.
Entries for pods no longer listed are pruned: their restarts are already in the total, and a
uid never comes back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from ascendjob_controller.job.types import (
    ALWAYS,
    EXIT_CODE,
    LABEL_FAULT_RETRY_TIMES,
    LABEL_REPLICA_TYPE,
    NEVER,
    ON_FAILURE,
    TRAINING_CONTAINER,
    JobView,
    as_dict,
    as_int,
    as_list,
    dicts,
    dig,
)

STATUS_TOTAL = "restartCount"
STATUS_CONTAINER_COUNTS = "countedContainerRestarts"
STATUS_RECREATED = "recreatedPods"
_INT32_MAX = 2**31 - 1
#: The reasons of the events MindCluster's operator emits when it retries an ExitCode pod.
MINDCLUSTER_EXITED = "ExitedWithCode"
MINDCLUSTER_RESTARTING = "jobRestarting"


class FailureAction(Enum):
    """What to do with a pod that ended in phase Failed."""

    RECREATE = "recreate"
    FAIL_JOB = "fail-job"


def training_status(pod: dict[str, Any]) -> dict[str, Any] | None:
    """The containerStatus of the `ascend` container, else the first one."""
    statuses = dicts(dig(pod, "status", "containerStatuses"))
    for status in statuses:
        if status.get("name") == TRAINING_CONTAINER:
            return dict(status)
    return dict(statuses[0]) if statuses else None


def exit_code(pod: dict[str, Any]) -> int | None:
    """The training container's exit code, None when it never terminated (evicted, node lost)."""
    status = training_status(pod)
    if status is None:
        return None
    return as_int(dig(status, "state", "terminated", "exitCode"))


def last_exit_code(pod: dict[str, Any]) -> int | None:
    """The exit code of the training container's previous run (after an in-place restart)."""
    status = training_status(pod)
    if status is None:
        return None
    return as_int(dig(status, "lastState", "terminated", "exitCode"))


def container_restarts(pod: dict[str, Any]) -> int:
    """In-place restarts kubelet reports for every container of the pod."""
    total = 0
    for status in dicts(dig(pod, "status", "containerStatuses")):
        total += max(as_int(status.get("restartCount")) or 0, 0)
    return total


def on_pod_failure(policy: str, code: int | None) -> FailureAction:
    """The policy's answer to a pod in phase Failed.

    - Never: the job fails.
    - ExitCode: no exit code (evicted, node lost) or >= 128 (killed by a signal: 137, 143...)
      is retryable; 0-127 is the program's own verdict and fails the job. (0 only occurs
      when another container failed the pod; the training code did not ask for a retry.)
    - OnFailure / Always: kubelet already restarts containers in place, so a pod that still
      ends Failed was lost as a whole (eviction, node loss) and is recreated.
    """
    if policy in (ON_FAILURE, ALWAYS):
        return FailureAction.RECREATE
    if policy == EXIT_CODE and (code is None or code >= 128):
        return FailureAction.RECREATE
    if policy in (NEVER, EXIT_CODE):
        return FailureAction.FAIL_JOB
    return FailureAction.FAIL_JOB


def _count(value: Any) -> int:
    """A non-negative count from an int or a decimal string; 0 for anything else."""
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return max(as_int(value) or 0, 0)


def backoff_exceeded(limit: int | None, restarts: int) -> bool:
    """N allowed restarts: exceeded at restart N+1. None means unlimited."""
    return limit is not None and restarts > limit


def backoff_limit(job: dict[str, Any]) -> int | None:
    """`runPolicy.backoffLimit`, else the job label `fault-retry-times`, else None (unlimited).

    MindCluster reads the label when the field is unset, and jobs written for it set only the
    label. A label value that is not a whole number in 0..2^31-1 (the field's int32 range) is
    ignored, not an error: a label is free text, and a job must not fail, or the controller
    raise, over it. An invalid field is left to validation, which fails the job.
    """
    declared = dig(job, "spec", "runPolicy", "backoffLimit")
    if declared is not None:
        return as_int(declared)
    raw = dig(job, "metadata", "labels", LABEL_FAULT_RETRY_TIMES)
    if not isinstance(raw, str) or not raw.isascii() or not raw.isdigit():
        return None
    value = int(raw)
    return value if value <= _INT32_MAX else None


def mindcluster_restart_events(view: JobView, pod: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the events MindCluster emits when it recreates `pod`.

    We emit these beside our own (which say more, and under our CamelCase reason) so that
    alerts and scripts written against MindCluster's events keep matching: a Normal
    `ExitedWithCode` "Pod: <ns>.<pod> exited with code <n>" (only when the container has an
    exit code, as there), and a Warning `jobRestarting` "Job <job> is restarting because
    <Type> replica(s) failed.".
    """
    events: list[tuple[str, str, str]] = []
    code = exit_code(pod)
    name = f"{dig(pod, 'metadata', 'namespace')}.{dig(pod, 'metadata', 'name')}"
    if code is not None:
        events.append(("Normal", MINDCLUSTER_EXITED, f"Pod: {name} exited with code {code}"))
    label = dig(pod, "metadata", "labels", LABEL_REPLICA_TYPE)
    rtype = next((s.rtype for s in view.replicas if s.rtype.lower() == label), str(label))
    message = f"Job {view.name} is restarting because {rtype} replica(s) failed."
    events.append(("Warning", MINDCLUSTER_RESTARTING, message))
    return events


@dataclass(frozen=True)
class RestartLedger:
    """The persisted restart bookkeeping (see the module docstring)."""

    total: int = 0
    container_counts: dict[str, int] = field(default_factory=dict)
    recreated: frozenset[str] = frozenset()

    @classmethod
    def from_status(cls, status: Any) -> RestartLedger:
        """Read the bookkeeping; entries of the wrong type (a hand-edited status) are ignored,
        and a count written as a decimal string is still honoured rather than lost."""
        status = as_dict(status)
        counts = as_dict(status.get(STATUS_CONTAINER_COUNTS))
        parsed = {str(k): _count(v) for k, v in counts.items()}
        return cls(
            total=_count(status.get(STATUS_TOTAL)),
            container_counts={k: v for k, v in parsed.items() if v > 0},
            recreated=frozenset(
                uid for uid in as_list(status.get(STATUS_RECREATED)) if isinstance(uid, str)
            ),
        )

    def to_status(self) -> dict[str, Any]:
        """The status fields; empty bookkeeping is left out to keep the object small."""
        out: dict[str, Any] = {STATUS_TOTAL: self.total}
        if self.container_counts:
            out[STATUS_CONTAINER_COUNTS] = dict(sorted(self.container_counts.items()))
        if self.recreated:
            out[STATUS_RECREATED] = sorted(self.recreated)
        return out

    def observe_containers(
        self, pods: list[dict[str, Any]]
    ) -> tuple[RestartLedger, list[tuple[dict[str, Any], int]]]:
        """Fold in container restarts not yet counted; returns the pods that restarted anew.

        A kubelet counter that went down (it never should) is taken as the new baseline
        rather than subtracted: the total never decreases.
        """
        counts = dict(self.container_counts)
        total = self.total
        fresh: list[tuple[dict[str, Any], int]] = []
        for pod in pods:
            uid = dig(pod, "metadata", "uid")
            if not uid:
                continue
            seen = container_restarts(pod)
            delta = seen - counts.get(uid, 0)
            if delta > 0:
                total += delta
                fresh.append((pod, delta))
            if seen > 0:
                counts[uid] = seen
        return RestartLedger(total, counts, self.recreated), fresh

    def count_recreation(self, uid: str) -> RestartLedger:
        """Count the re-creation of failed pod `uid` (idempotent)."""
        if uid in self.recreated:
            return self
        return RestartLedger(self.total + 1, self.container_counts, self.recreated | {uid})

    def prune(self, live_uids: set[str]) -> RestartLedger:
        """Forget pods that are gone; their restarts stay in the total."""
        return RestartLedger(
            self.total,
            {uid: n for uid, n in self.container_counts.items() if uid in live_uids},
            frozenset(uid for uid in self.recreated if uid in live_uids),
        )

"""The job state machine as pure functions (design section 4, "Status").

States are conditions; the current state is the LAST condition (kubectl prints
`.status.conditions[-1:].type`), so a condition that becomes True moves to the end of the list.

The rows of the machine, first match wins (`decide`):

  1. spec invalid                                  -> Failed     JobValidFailed
  2. activeDeadlineSeconds passed since startTime  -> Failed     DeadlineExceeded
  3. restarts exceed backoffLimit                  -> Failed     BackoffLimitExceeded
  4. a pod failed and its policy does not restore  -> Failed     JobFailed
  5. every desired pod Succeeded (AllWorkers)      -> Succeeded  JobSucceeded
  6. a failed pod is being recreated by its policy -> Restarting JobRestarting
  7. every desired pod Running or Succeeded        -> Running    JobRunning
  8. was Running or Restarting, some pod not up    -> unchanged  (a pod deleted by someone else,
     or the replacement of a restarted pod, is on its way; no flapping back to Created)
  9. gang scheduling and the PodGroup not admitted -> Created    PodGroupPending
 10. otherwise                                     -> Created    JobCreated
A job already Succeeded or Failed never changes state again (terminal).

Condition rules: Running and Restarting exclude each other (setting one True sets the other
False if present); on Succeeded/Failed, Running and Restarting are set False and
`completionTime` is stamped; a condition whose status does not change keeps its
`lastTransitionTime`, and one that does not change at all keeps `lastUpdateTime` too, so that
an idle reconcile produces a status equal to the stored one and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ascendjob_controller.job.desired import selector_labels
from ascendjob_controller.job.restart import (
    STATUS_CONTAINER_COUNTS,
    STATUS_RECREATED,
    STATUS_TOTAL,
    RestartLedger,
)
from ascendjob_controller.job.types import (
    CREATED,
    FAILED,
    LABEL_JOB_NAME,
    LABEL_REPLICA_TYPE,
    REASON_BACKOFF,
    REASON_CREATED,
    REASON_DEADLINE,
    REASON_FAILED,
    REASON_PODGROUP_PENDING,
    REASON_RESTARTING,
    REASON_RUNNING,
    REASON_SUCCEEDED,
    REASON_VALID_FAILED,
    RESTARTING,
    RUNNING,
    SUCCEEDED,
    TERMINAL_STATES,
    JobView,
    as_dict,
    dicts,
    dig,
    format_time,
    json_copy,
    parse_time,
)

LAST_RECONCILE = "lastReconcileTime"


@dataclass(frozen=True)
class Verdict:
    """The state the job should be in, with the reason and message of its condition."""

    state: str
    reason: str
    message: str

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES


@dataclass(frozen=True)
class Observation:
    """What plan() learned from the job and its pods, the inputs of `decide`.

    Each optional text is None when that row does not apply, else the condition message.
    """

    job_key: str
    desired: int = 0
    running: int = 0
    succeeded: int = 0
    invalid: str | None = None
    deadline_exceeded: str | None = None
    backoff_exceeded: str | None = None
    failure: str | None = None
    restarting: str | None = None
    podgroup_pending: str | None = None
    #: The Created reason for `podgroup_pending`: PodGroupPending, or PodGroupNotInitialized
    #: while Volcano has not given the PodGroup a phase.
    podgroup_reason: str = REASON_PODGROUP_PENDING


# --- reading the current status ----------------------------------------------------------------
def conditions_of(status: Any) -> list[dict[str, Any]]:
    """The readable conditions: objects with a string type and status.

    Status can be edited by hand (or written under a looser CRD); an entry we cannot read is
    dropped, and optional fields of the wrong type are left out, so the status we write back
    always passes the CRD schema (a 422 would be retried forever).
    """
    out: list[dict[str, Any]] = []
    for condition in dicts(as_dict(status).get("conditions")):
        if not isinstance(condition.get("type"), str) or not isinstance(
            condition.get("status"), str
        ):
            continue
        out.append(
            {k: v for k, v in condition.items() if k in _CONDITION_FIELDS or isinstance(v, str)}
        )
    return out


_CONDITION_FIELDS = frozenset({"type", "status"})


def find_condition(status: Any, ctype: str) -> dict[str, Any] | None:
    for condition in conditions_of(status):
        if condition.get("type") == ctype:
            return condition
    return None


def current_state(status: Any) -> str | None:
    """The last True condition's type (what kubectl shows), None before the first reconcile.

    A True terminal condition wins wherever it sits, so a status edited by hand cannot bring a
    finished job back to life.
    """
    for condition in conditions_of(status):
        if condition.get("type") in TERMINAL_STATES and condition.get("status") == "True":
            return str(condition["type"])
    for condition in reversed(conditions_of(status)):
        if condition.get("status") == "True":
            return str(condition.get("type"))
    return None


def is_finished(status: Any) -> bool:
    return any(
        c.get("type") in TERMINAL_STATES and c.get("status") == "True"
        for c in conditions_of(status)
    )


# --- the machine -------------------------------------------------------------------------------
def decide(previous: str | None, obs: Observation, status: dict[str, Any] | None) -> Verdict:
    """Rows 1-10 of the module docstring; a terminal `previous` is returned unchanged."""
    key = obs.job_key
    if previous in TERMINAL_STATES:
        held = find_condition(status, previous) or {}
        return Verdict(previous, held.get("reason", ""), held.get("message", ""))
    if obs.invalid is not None:
        return Verdict(FAILED, REASON_VALID_FAILED, obs.invalid)
    if obs.deadline_exceeded is not None:
        return Verdict(FAILED, REASON_DEADLINE, obs.deadline_exceeded)
    if obs.backoff_exceeded is not None:
        return Verdict(FAILED, REASON_BACKOFF, obs.backoff_exceeded)
    if obs.failure is not None:
        return Verdict(FAILED, REASON_FAILED, obs.failure)
    if obs.desired > 0 and obs.succeeded == obs.desired:
        return Verdict(SUCCEEDED, REASON_SUCCEEDED, f"AscendJob {key} successfully completed.")
    if obs.restarting is not None:
        return Verdict(RESTARTING, REASON_RESTARTING, obs.restarting)
    if obs.desired > 0 and obs.running + obs.succeeded == obs.desired:
        return Verdict(RUNNING, REASON_RUNNING, f"AscendJob {key} is running.")
    if previous in (RUNNING, RESTARTING):
        held = find_condition(status, previous) or {}
        return Verdict(previous, held.get("reason", ""), held.get("message", ""))
    if obs.podgroup_pending is not None:
        return Verdict(CREATED, obs.podgroup_reason, obs.podgroup_pending)
    return Verdict(CREATED, REASON_CREATED, f"AscendJob {key} is created.")


def set_condition(
    conditions: list[dict[str, Any]],
    ctype: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
) -> list[dict[str, Any]]:
    """Return a new list with condition `ctype` set; see the module docstring for the rules."""
    stamp = format_time(now)
    out = [dict(c) for c in conditions]
    position = next((i for i, c in enumerate(out) if c.get("type") == ctype), None)
    old = out[position] if position is not None else None
    if old is not None and (old.get("status"), old.get("reason"), old.get("message")) == (
        status,
        reason,
        message,
    ):
        return out
    transitioned = old is None or old.get("status") != status
    kept = old.get("lastTransitionTime") if old is not None and not transitioned else None
    since = kept if isinstance(kept, str) else stamp
    new = {
        "type": ctype,
        "status": status,
        "reason": reason,
        "message": message,
        "lastUpdateTime": stamp,
        "lastTransitionTime": since,
    }
    if position is not None and not (transitioned and status == "True"):
        out[position] = new
        return out
    if position is not None:
        del out[position]
    out.append(new)
    return out


def _set_false_if_present(
    conditions: list[dict[str, Any]], ctype: str, reason: str, message: str, now: datetime
) -> list[dict[str, Any]]:
    if not any(c.get("type") == ctype for c in conditions):
        return conditions
    return set_condition(conditions, ctype, "False", reason, message, now)


def apply_verdict(
    conditions: list[dict[str, Any]], verdict: Verdict, job_key: str, now: datetime
) -> list[dict[str, Any]]:
    """Conditions after moving to `verdict` (Created is always present once seen)."""
    out = conditions
    if not any(c.get("type") == CREATED for c in out):
        out = set_condition(
            out, CREATED, "True", REASON_CREATED, f"AscendJob {job_key} is created.", now
        )
    if verdict.state == CREATED:
        return set_condition(out, CREATED, "True", verdict.reason, verdict.message, now)
    if verdict.state == RUNNING:
        out = _set_false_if_present(out, RESTARTING, verdict.reason, verdict.message, now)
        return set_condition(out, RUNNING, "True", verdict.reason, verdict.message, now)
    if verdict.state == RESTARTING:
        out = _set_false_if_present(out, RUNNING, verdict.reason, verdict.message, now)
        return set_condition(out, RESTARTING, "True", verdict.reason, verdict.message, now)
    # Succeeded or Failed: terminal.
    out = _set_false_if_present(out, RUNNING, verdict.reason, verdict.message, now)
    out = _set_false_if_present(out, RESTARTING, verdict.reason, verdict.message, now)
    return set_condition(out, verdict.state, "True", verdict.reason, verdict.message, now)


def replica_statuses(view: JobView, pods: list[dict[str, Any]]) -> dict[str, Any]:
    """Per replica type: active (Running, not being deleted), succeeded, failed, labelSelector.

    Recomputed from the pods every time, never accumulated, so it cannot drift.
    """
    out: dict[str, Any] = {}
    for spec in view.replicas:
        active = succeeded = failed = 0
        for pod in pods:
            labels = dig(pod, "metadata", "labels") or {}
            if labels.get(LABEL_JOB_NAME) != view.name:
                continue
            if labels.get(LABEL_REPLICA_TYPE) != spec.rtype.lower():
                continue
            phase = dig(pod, "status", "phase")
            if phase == "Running" and not dig(pod, "metadata", "deletionTimestamp"):
                active += 1
            elif phase == "Succeeded":
                succeeded += 1
            elif phase == "Failed":
                failed += 1
        out[spec.rtype] = {
            "active": active,
            "succeeded": succeeded,
            "failed": failed,
            "labelSelector": {"matchLabels": selector_labels(view, spec.rtype)},
        }
    return out


def next_status(
    old: dict[str, Any] | None,
    verdict: Verdict,
    *,
    job_key: str,
    now: datetime,
    replicas: dict[str, Any] | None,
    ledger: RestartLedger,
) -> dict[str, Any]:
    """The complete new status, with `lastReconcileTime` stamped.

    `replicas` None keeps the stored replicaStatuses (an invalid job has no view to
    recompute them from). Fields we do not own are carried over untouched.
    """
    new = json_copy(as_dict(old))
    for key in (STATUS_CONTAINER_COUNTS, STATUS_RECREATED):
        new.pop(key, None)
    # Stamps we cannot read are dropped (and set afresh below) rather than written back.
    for key in ("startTime", "completionTime"):
        if key in new and parse_time(new[key]) is None:
            del new[key]
    new.update(ledger.to_status())
    new.setdefault(STATUS_TOTAL, 0)
    new["conditions"] = apply_verdict(conditions_of(old), verdict, job_key, now)
    if replicas is not None:
        new["replicaStatuses"] = replicas
    elif not isinstance(new.get("replicaStatuses"), dict):
        new["replicaStatuses"] = {}
    new.setdefault("startTime", format_time(now))
    if verdict.terminal and not new.get("completionTime"):
        new["completionTime"] = format_time(now)
    new[LAST_RECONCILE] = format_time(now)
    return new


def same_status(a: Any, b: dict[str, Any] | None) -> bool:
    """Equal but for lastReconcileTime: such a write would only wake our own watch."""
    return _strip(a) == _strip(b)


def _strip(status: Any) -> dict[str, Any]:
    return {k: v for k, v in as_dict(status).items() if k != LAST_RECONCILE}

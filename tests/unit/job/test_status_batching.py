"""hold_status_for(): only a status write that moves counts alone may wait, for one period."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from ascendjob_controller.job.plan import ChildRef, EventSpec, Plan
from ascendjob_controller.job.status_batching import hold_status_for, only_counts_change

RUNNING_CONDITION = {"type": "Running", "status": "True", "reason": "JobRunning"}
OLD: dict[str, Any] = {
    "conditions": [RUNNING_CONDITION],
    "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 1}},
    "lastReconcileTime": "2026-12-03T10:00:00Z",
    "restartCount": 0,
}
COUNTS = {
    **OLD,
    "replicaStatuses": {"Master": {"succeeded": 1}, "Worker": {"active": 1}},
    "lastReconcileTime": "2026-12-03T10:00:01Z",
}
#: A status holding the restart ledger's bookkeeping (job/restart.py) for pods a and b.
LEDGER: dict[str, Any] = {
    **OLD,
    "restartCount": 2,
    "recreatedPods": ["a", "b"],
    "countedContainerRestarts": {"a": 2, "b": 1},
}
COUNTS_ONLY = Plan(status=COUNTS, previous_state="Running", state="Running")
POD = ChildRef("Pod", "ns", "p", "u")


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        (None, False),
        (COUNTS, True),
        ({**OLD, "lastReconcileTime": "2026-12-03T10:00:05Z"}, True),
        ({**COUNTS, "restartCount": 1}, False),
        ({**COUNTS, "conditions": [{**RUNNING_CONDITION, "reason": "Other"}]}, False),
        ({k: v for k, v in COUNTS.items() if k != "restartCount"}, False),
        ({**COUNTS, "completionTime": "2026-12-03T10:00:01Z"}, False),
    ],
    ids=[
        "no write",
        "counts",
        "only lastReconcileTime",
        "restart counted",
        "condition changed",
        "field removed",
        "field added",
    ],
)
def test_only_counts_change(new: dict[str, Any] | None, expected: bool) -> None:
    assert only_counts_change(OLD, new) is expected


def _without(key: str) -> dict[str, Any]:
    return {k: v for k, v in LEDGER.items() if k != key}


@pytest.mark.parametrize(
    ("new", "expected"),
    [
        ({**LEDGER, "recreatedPods": ["a"]}, True),
        ({**LEDGER, "recreatedPods": []}, True),
        (_without("recreatedPods"), True),
        ({**LEDGER, "recreatedPods": ["a", "b", "c"]}, False),
        ({**LEDGER, "recreatedPods": ["c"]}, False),
        ({**LEDGER, "recreatedPods": "a"}, False),
        ({**LEDGER, "countedContainerRestarts": {"a": 2}}, True),
        (_without("countedContainerRestarts"), True),
        ({**LEDGER, "countedContainerRestarts": {"a": 3, "b": 1}}, False),
        ({**LEDGER, "countedContainerRestarts": {"a": 2, "c": 1}}, False),
        ({**LEDGER, "recreatedPods": ["a"], "restartCount": 3}, False),
    ],
    ids=[
        "a recreated pod pruned",
        "every recreated pod pruned",
        "the recreated list left out",
        "a recreated pod added",
        "a recreated pod replaced",
        "the list turned into a string",
        "a container count pruned",
        "the container counts left out",
        "a container count raised",
        "a container count added",
        "pruned, but a restart counted too",
    ],
)
def test_the_ledger_may_be_pruned_later(new: dict[str, Any], expected: bool) -> None:
    """Dropping entries for pods that are gone may wait; adding or changing one may not."""
    assert only_counts_change(LEDGER, new) is expected


def test_malformed_old_status_reads_as_empty() -> None:
    assert only_counts_change("garbage", {"replicaStatuses": {}}) is True
    assert only_counts_change(None, {"replicaStatuses": {}, "restartCount": 0}) is False


@pytest.mark.parametrize(
    ("plan", "held_for", "period", "expected"),
    [
        (COUNTS_ONLY, None, 1.0, 1.0),  # the first hold: a whole period
        (COUNTS_ONLY, 0.25, 1.0, 0.75),
        (COUNTS_ONLY, 1.0, 1.0, None),  # held long enough: write now
        (COUNTS_ONLY, 5.0, 1.0, None),
        (COUNTS_ONLY, None, 0.0, None),  # batching off
        (replace(COUNTS_ONLY, status=None), None, 1.0, None),
        (replace(COUNTS_ONLY, state="Succeeded"), 0.25, 1.0, None),
        (replace(COUNTS_ONLY, previous_state=None, state=None), 0.25, 1.0, 0.75),
        (replace(COUNTS_ONLY, creates=({"kind": "Pod"},)), 0.25, 1.0, 0.75),
        (replace(COUNTS_ONLY, deletes=(POD,)), 0.25, 1.0, 0.75),
        (replace(COUNTS_ONLY, force_deletes=(POD,)), 0.25, 1.0, 0.75),
        (replace(COUNTS_ONLY, deletes_after_status=(POD,)), 0.25, 1.0, None),
        (replace(COUNTS_ONLY, adopts=(POD,)), 0.25, 1.0, 0.75),
        (replace(COUNTS_ONLY, events=(EventSpec("Normal", "R", "m"),)), 0.25, 1.0, None),
        (replace(COUNTS_ONLY, podgroup_patch={"spec": {}}), 0.25, 1.0, 0.75),
        (replace(COUNTS_ONLY, delete_job=True), 0.25, 1.0, None),
        (replace(COUNTS_ONLY, restarted=1), 0.25, 1.0, None),
        (replace(COUNTS_ONLY, status={**COUNTS, "restartCount": 1}), None, 1.0, None),
    ],
    ids=[
        "first hold",
        "held a while",
        "period over",
        "long over",
        "batching off",
        "no status to write",
        "state change",
        "same unknown state",
        "a create still holds",
        "a delete still holds",
        "a force-delete still holds",
        "a delete after status",
        "an adoption still holds",
        "an event",
        "a podgroup patch still holds",
        "the job deleted",
        "a restart",
        "more than counts",
    ],
)
def test_hold_status_for(
    plan: Plan, held_for: float | None, period: float, expected: float | None
) -> None:
    held = hold_status_for(plan, OLD, held_for, period)
    assert held == (None if expected is None else pytest.approx(expected))

"""The reconciler's follow-up plans: what a delete's answer says, and when to plan again.

A failed pod's replacement is created in the reconcile that records its restart only when
the delete's answer shows the pod gone and the next plan starts from the job holding that
restart; these tests pin both conditions (the integration tests run the whole path)."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.job.plan import Plan
from ascendjob_controller.reconciler import (
    _follow_up,
    _Outcome,
    _removed_at_once,
    slow_start_batches,
)


def _pod(uid: str, **meta: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": f"p-{uid}", "uid": uid, **meta}}


@pytest.mark.parametrize(
    ("answer", "removed"),
    [
        (None, True),  # a retried delete found it gone
        (_pod("a", deletionTimestamp="2026-01-01T00:00:00Z", deletionGracePeriodSeconds=0), True),
        (_pod("a"), True),  # a kind without graceful deletion
        ({"kind": "Status", "status": "Success"}, True),
        (_pod("a", deletionTimestamp="2026-01-01T00:00:30Z", deletionGracePeriodSeconds=30), False),
        (
            _pod(
                "a",
                deletionTimestamp="2026-01-01T00:00:00Z",
                deletionGracePeriodSeconds=0,
                finalizers=["x/y"],
            ),
            False,
        ),
        ({"kind": "Status", "status": "Failure"}, False),
        ("garbage", False),
    ],
)
def test_removed_at_once(answer: Any, removed: bool) -> None:
    assert _removed_at_once(answer) is removed


def _children() -> dict[str, list[dict[str, Any]]]:
    return {"Pod": [_pod("a"), _pod("b")], "Service": []}


def test_a_pod_removed_at_once_is_planned_without() -> None:
    outcome = _Outcome(removed_pods=["a"], job={"metadata": {"resourceVersion": "2"}})
    follow = _follow_up(_children(), Plan(status={"x": 1}, state="Restarting"), outcome)
    assert follow is not None
    assert [p["metadata"]["uid"] for p in follow["Pod"]] == ["b"]


def test_a_created_service_is_planned_with() -> None:
    service = {"kind": "Service", "metadata": {"name": "s", "uid": "s"}}
    outcome = _Outcome(services=[service])
    follow = _follow_up(_children(), Plan(state="Created"), outcome)
    assert follow is not None and follow["Service"] == [service]
    assert len(follow["Pod"]) == 2


@pytest.mark.parametrize(
    ("plan", "outcome"),
    [
        # Nothing learnt from the answers.
        (Plan(state="Running"), _Outcome()),
        # A write failed: the retry with back-off re-plans from the caches.
        (Plan(state="Restarting"), _Outcome(removed_pods=["a"], failures=["status: 409"])),
        # Status written but no job came back: planning from the older job would count the
        # restart again.
        (Plan(status={"x": 1}, state="Restarting"), _Outcome(removed_pods=["a"])),
        # A finished job's cleanup: nothing to replace.
        (Plan(state="Succeeded"), _Outcome(removed_pods=["a"])),
    ],
)
def test_no_follow_up(plan: Plan, outcome: _Outcome) -> None:
    assert _follow_up(_children(), plan, outcome) is None


@pytest.mark.parametrize(
    ("count", "sizes"),
    [
        (0, []),
        (1, [1]),
        (2, [1, 1]),
        (3, [1, 2]),
        (7, [1, 2, 4]),
        (41, [1, 2, 4, 8, 16, 10]),
        (1001, [1, 2, 4, 8, 16, 32, 64, 128, 256, 490]),
    ],
)
def test_slow_start_batches_double_past_the_pool_size(count: int, sizes: list[int]) -> None:
    """As the Kubernetes Job controller's: 1, 2, 4, ... with no cap; the pool bounds the
    requests in flight, not the batch."""
    assert slow_start_batches(count) == sizes
    assert sum(sizes) == count

"""Which pod updates may have their job's sync batched (`pod_view.progress_only`).

A table of kubelet writes, and the property the batching rests on: a live pod's progress
never changes what the planner does, only what it writes into the job's status. Anything that
can call for a create, a delete or a restart must be synced at once (P4: a failed pod's
replacement waits for no batch).
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from typing import Any

import pytest

from ascendjob_controller.job.plan import Plan
from ascendjob_controller.job.pod_view import planner_view, progress_only

from .factories import job, replica, set_phase, with_restarts
from .world import World

DEVICES = "huawei.com/Ascend910"


def created_world(policy: str = "ExitCode") -> World:
    """A job whose pods were just created (no status yet) and whose plans are done."""
    world = World(job("pytorch", {"Master": replica(1, policy), "Worker": replica(2, policy)}))
    world.settle()
    return world


def a_pod() -> dict[str, Any]:
    return copy.deepcopy(next(iter(created_world().pods.values())))


def scheduled(pod: dict[str, Any]) -> dict[str, Any]:
    pod = set_phase(pod, "Pending")
    pod["status"].update(podIP="10.0.0.7", hostIP="172.18.0.2")
    return pod


def with_devices(pod: dict[str, Any]) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"].setdefault("annotations", {})[DEVICES] = "Ascend910-0,Ascend910-1"
    return pod


def running(pod: dict[str, Any]) -> dict[str, Any]:
    return set_phase(pod, "Running")


def terminated_in_place(pod: dict[str, Any]) -> dict[str, Any]:
    pod = set_phase(pod, "Running")
    pod["status"]["containerStatuses"][0]["state"] = {"terminated": {"exitCode": 1}}
    return pod


def deleting(pod: dict[str, Any]) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return pod


def relabelled(pod: dict[str, Any]) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"]["labels"] = {**pod["metadata"]["labels"], "extra": "x"}
    return pod


def orphaned(pod: dict[str, Any]) -> dict[str, Any]:
    pod = copy.deepcopy(pod)
    pod["metadata"]["ownerReferences"] = []
    return pod


def unknown(pod: dict[str, Any]) -> dict[str, Any]:
    pod = running(pod)
    pod["status"]["phase"] = "Unknown"
    return pod


Step = Callable[[dict[str, Any]], dict[str, Any]]

PROGRESS: list[tuple[str, Step, Step]] = [
    ("created -> Pending with an IP", lambda p: p, scheduled),
    ("created -> devices", lambda p: p, with_devices),
    ("Pending -> Pending with devices", scheduled, lambda p: with_devices(scheduled(p))),
    ("Pending -> Running", scheduled, running),
    ("created -> Running", lambda p: p, running),
]

URGENT: list[tuple[str, Step, Step]] = [
    ("Running -> Succeeded", running, lambda p: set_phase(p, "Succeeded", 0)),
    ("Running -> Failed", running, lambda p: set_phase(p, "Failed", 1)),
    ("Pending -> Failed, evicted", scheduled, lambda p: set_phase(p, "Failed")),
    ("a container restarted", running, lambda p: with_restarts(running(p), 1)),
    ("a container terminated in place", running, terminated_in_place),
    ("deleting", running, lambda p: deleting(running(p))),
    ("labels", scheduled, lambda p: relabelled(scheduled(p))),
    ("owner references", scheduled, lambda p: orphaned(scheduled(p))),
    ("Running -> Unknown (node lost)", running, unknown),
    ("Succeeded -> Running", lambda p: set_phase(p, "Succeeded", 0), running),
]


@pytest.mark.parametrize(("name", "before", "after"), PROGRESS, ids=[c[0] for c in PROGRESS])
def test_a_live_pods_progress_may_wait(name: str, before: Step, after: Step) -> None:
    pod = a_pod()
    assert progress_only(planner_view(before(pod)), planner_view(after(pod))), name


@pytest.mark.parametrize(("name", "before", "after"), URGENT, ids=[c[0] for c in URGENT])
def test_what_may_call_for_an_action_is_synced_at_once(
    name: str, before: Step, after: Step
) -> None:
    pod = a_pod()
    assert not progress_only(planner_view(before(pod)), planner_view(after(pod))), name


def actions(plan: Plan) -> tuple[Any, ...]:
    """Everything a plan does besides writing the job's status and announcing it."""
    return (
        plan.creates,
        plan.deletes,
        plan.deletes_after_status,
        plan.force_deletes,
        plan.adopts,
        plan.podgroup_patch,
        plan.delete_job,
    )


@pytest.mark.parametrize("policy", ["ExitCode", "OnFailure", "Never", "Always"])
@pytest.mark.parametrize(
    "step", [s for _, _, s in PROGRESS[:2]] + [lambda p: set_phase(p, "Running")]
)
def test_progress_never_changes_what_the_planner_does(policy: str, step: Step) -> None:
    """Every subset of the pods making the same progress: the planner acts exactly as before
    (nothing: the world had settled), whatever it now writes into the status."""
    world = created_world(policy)
    names = sorted(world.pods)
    for size in range(1, len(names) + 1):
        for subset in itertools.combinations(names, size):
            moved = copy.deepcopy(world)
            for name in subset:
                old = moved.pods[name]
                moved.pods[name] = step(old)
                assert progress_only(planner_view(old), planner_view(moved.pods[name]))
            assert actions(moved.plan()) == actions(world.plan()), subset

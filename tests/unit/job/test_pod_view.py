"""`planner_view`: pods equal in it get equal plans; every field a decision reads is in it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendjob_controller.job.pod_view import compact_pod, planner_view

from .factories import job, replica, with_restarts
from .world import World


def running_world(policy: str = "ExitCode") -> World:
    world = World(job("pytorch", {"Master": replica(1, policy), "Worker": replica(2, policy)}))
    world.settle()
    world.all_pods("Running")
    world.settle()
    return world


def noise(pod: dict[str, Any], seed: int) -> dict[str, Any]:
    """The pod with everything outside the planner's view changed, as a kubelet might."""
    pod = copy.deepcopy(pod)
    pod["metadata"]["resourceVersion"] = str(1000 + seed)
    pod["metadata"]["managedFields"] = [{"manager": f"kubelet-{seed}"}]
    pod.setdefault("spec", {})["nodeName"] = f"node-{seed}"  # the binding
    status = pod.setdefault("status", {})
    status["conditions"] = [{"type": "Ready", "status": "True" if seed % 2 else "False"}]
    status["startTime"] = f"2026-01-01T00:00:{seed % 60:02d}Z"
    status["qosClass"] = ["Guaranteed", "Burstable"][seed % 2]
    for cs in status.get("containerStatuses") or []:
        cs["ready"] = bool(seed % 2)
        cs["started"] = bool(seed % 3)
        cs["imageID"] = f"sha256:{seed:064d}"
        cs["containerID"] = f"containerd://{seed}"
    return pod


@pytest.mark.parametrize("phase", ["Pending", "Running", "Succeeded", "Failed"])
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(min_value=0, max_value=10_000))
def test_pods_equal_in_the_view_get_the_same_plan(phase: str, seed: int) -> None:
    world = running_world()
    world.kubelet(
        "j1-worker-1" if "j1-worker-1" in world.pods else next(iter(world.pods)), phase, 137
    )
    before = world.plan()
    noisy = copy.deepcopy(world)
    noisy.pods = {name: noise(pod, seed) for name, pod in world.pods.items()}
    assert all(planner_view(noisy.pods[n]) == planner_view(world.pods[n]) for n in world.pods)
    after = noisy.plan()
    assert after == before


@pytest.mark.parametrize(
    "change",
    [
        lambda p: p["status"].update(phase="Failed"),
        lambda p: p["status"].update(podIP="10.0.0.99"),
        lambda p: p["status"].update(hostIP="10.1.0.1"),
        lambda p: p["status"].update(reason="Evicted"),
        lambda p: p["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z"),
        lambda p: p["metadata"].update(labels={"job-name": "other"}),
        lambda p: p["metadata"].update(ownerReferences=[]),
        lambda p: (
            p["metadata"]
            .setdefault("annotations", {})
            .update({"ascend.kubectl.kubernetes.io/ascend-910-configuration": "{}"})
        ),
        lambda p: p.update(with_restarts(p, 1)),
    ],
)
def test_every_field_a_decision_reads_changes_the_view(change: Any) -> None:
    world = running_world()
    pod = next(iter(world.pods.values()))
    changed = copy.deepcopy(pod)
    change(changed)
    assert planner_view(changed) != planner_view(pod)


def test_malformed_pods_have_a_view() -> None:
    for pod in (None, {}, {"metadata": "x", "status": []}, {"status": {"containerStatuses": "y"}}):
        assert isinstance(planner_view(pod), str)


@pytest.mark.parametrize("phase", ["Pending", "Running", "Succeeded", "Failed"])
@pytest.mark.parametrize("policy", ["ExitCode", "OnFailure", "Never"])
def test_a_planner_fed_compact_pods_decides_as_one_fed_the_full_pods(
    phase: str, policy: str
) -> None:
    world = running_world(policy)
    name = sorted(world.pods)[-1]
    world.kubelet(name, phase, 137 if phase == "Failed" else 0)
    full = copy.deepcopy(world)
    full.pods = {n: noise(p, 7) for n, p in world.pods.items()}  # what the server sends
    compact = copy.deepcopy(full)
    compact.pods = {n: compact_pod(p) for n, p in full.pods.items()}
    assert compact.plan() == full.plan()
    assert all(planner_view(compact.pods[n]) == planner_view(full.pods[n]) for n in full.pods)


def test_compact_pods_are_small_and_keep_what_is_read() -> None:
    import json

    world = running_world()
    pod = noise(next(iter(world.pods.values())), 3)
    pod["spec"]["containers"][0]["env"] = [{"name": f"V{i}", "value": "x" * 50} for i in range(40)]
    pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = "{}" * 500
    small = compact_pod(pod)
    assert len(json.dumps(small)) < len(json.dumps(pod)) / 3
    assert small["metadata"]["ownerReferences"] == pod["metadata"]["ownerReferences"]
    assert small["metadata"]["resourceVersion"] == pod["metadata"]["resourceVersion"]
    assert (
        "kubectl.kubernetes.io/last-applied-configuration" not in small["metadata"]["annotations"]
    )
    assert small["spec"]["containers"][0]["resources"] == {
        k: v for k, v in pod["spec"]["containers"][0]["resources"].items()
    }

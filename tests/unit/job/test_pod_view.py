"""`planner_view`: pods equal in it get equal plans; every field a decision reads is in it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import example, given, settings
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
        view = planner_view(pod)
        assert isinstance(view, dict)
        assert view == planner_view(copy.deepcopy(pod))  # comparable, whatever the input


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


# --- what compact_pod keeps, on arbitrary kubelet output -----------------------------------
_stamps = st.sampled_from(["2026-01-01T00:00:00Z", "2026-01-01T00:00:09Z", None])
_terminated = st.fixed_dictionaries(
    {},
    optional={
        "exitCode": st.one_of(st.integers(-1, 255), st.text(max_size=3)),
        "reason": st.sampled_from(["Error", "OOMKilled", "Completed", ""]),
        "finishedAt": _stamps,
        "startedAt": _stamps,
        "message": st.text(max_size=10),
        "signal": st.integers(0, 15),
        "containerID": st.text(max_size=10),
    },
)
_state = st.dictionaries(
    st.sampled_from(["waiting", "running", "terminated"]),
    st.one_of(_terminated, st.fixed_dictionaries({}, optional={"reason": st.text(max_size=8)})),
    max_size=2,
)
_container_status = st.fixed_dictionaries(
    {"name": st.sampled_from(["ascend", "sidecar", ""])},
    optional={
        "restartCount": st.one_of(st.integers(0, 5), st.none()),
        "state": _state,
        "lastState": _state,
        "ready": st.booleans(),
        "imageID": st.text(max_size=8),
    },
)


@settings(max_examples=60, deadline=None)
@given(
    statuses=st.lists(_container_status, max_size=3),
    phase=st.sampled_from(["Pending", "Running", "Succeeded", "Failed"]),
    reason=st.sampled_from([None, "Evicted", "NodeLost"]),
    extra_labels=st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=5), max_size=3),
    annotations=st.dictionaries(st.text(min_size=1, max_size=5), st.text(max_size=5), max_size=3),
    policy=st.sampled_from(["ExitCode", "OnFailure", "Never"]),
)
def test_compact_pods_decide_as_full_ones_whatever_the_kubelet_wrote(
    statuses: list[dict[str, Any]],
    phase: str,
    reason: str | None,
    extra_labels: dict[str, str],
    annotations: dict[str, str],
    policy: str,
) -> None:
    world = running_world(policy)
    name = sorted(world.pods)[-1]
    pod = noise(world.pods[name], 5)
    pod["status"].update(phase=phase, containerStatuses=statuses)
    if reason:
        pod["status"]["reason"] = reason
    pod["metadata"]["labels"] = {**extra_labels, **pod["metadata"].get("labels", {})}
    pod["metadata"].setdefault("annotations", {}).update(annotations)
    world.pods[name] = pod
    compact = copy.deepcopy(world)
    compact.pods = {n: compact_pod(p) for n, p in world.pods.items()}
    assert planner_view(compact.pods[name]) == planner_view(pod)
    assert compact.plan() == world.plan()
    assert compact_pod(compact.pods[name]) == compact.pods[name]  # a fixed point


def test_value_equal_parts_are_shared_and_different_ones_are_not() -> None:
    world = running_world()
    first, second = (noise(p, 1) for p in list(world.pods.values())[:2])
    first["status"]["containerStatuses"] = [{"name": "ascend", "state": {"running": {}}}]
    second["status"]["containerStatuses"] = [{"name": "ascend", "state": {"running": {"x": 1}}}]
    a, b = compact_pod(copy.deepcopy(first)), compact_pod(copy.deepcopy(second))
    assert a["status"]["containerStatuses"] is b["status"]["containerStatuses"]  # same view
    assert a["spec"]["containers"] is b["spec"]["containers"]
    second["status"]["containerStatuses"][0]["restartCount"] = 1
    c = compact_pod(second)
    assert c["status"]["containerStatuses"] is not a["status"]["containerStatuses"]
    assert c["status"]["containerStatuses"][0]["restartCount"] == 1
    assert a["status"]["containerStatuses"][0].get("restartCount") is None


def test_the_table_of_shared_parts_is_bounded() -> None:
    from ascendjob_controller.job import pod_view

    pod = noise(next(iter(running_world().pods.values())), 2)
    for i in range(pod_view._SHARED_LIMIT + 10):
        pod["metadata"]["annotations"] = {"n": str(i)}
        compact_pod(pod)
    assert len(pod_view._shared._table) <= pod_view._SHARED_LIMIT


#: At most one top-level section of a pod replaced by a value of the wrong type (or an
#: unknown key added): the decoders must then fall back and still agree with a full decode.
_malformed_section = st.dictionaries(
    st.sampled_from(["metadata", "spec", "status", "x"]),
    st.one_of(st.none(), st.integers(), st.text(max_size=3), st.lists(st.integers())),
    max_size=1,
)


@settings(max_examples=60, deadline=None)
@given(
    statuses=st.lists(_container_status, max_size=3),
    phase=st.sampled_from(["Pending", "Running", "Failed"]),
    extra=_malformed_section,
)
def test_the_pod_list_decoder_gives_compact_pod_what_the_full_decode_does(
    statuses: list[dict[str, Any]], phase: str, extra: dict[str, Any]
) -> None:
    """decode_pod_list skips what compact_pod drops; on any page, valid or malformed, the
    compact pods are those of a full json.loads (a page that does not fit falls back)."""
    import json

    from ascendjob_controller.job.pod_view import decode_pod_list

    world = running_world()
    pods = [noise(p, i) for i, p in enumerate(world.pods.values())]
    pods[0]["status"].update(phase=phase, containerStatuses=statuses)
    pods[-1].update(extra)  # a malformed field replaces a whole section
    pods[-1]["metadata"] = pods[-1].get("metadata") or {"name": "x"}
    page = {"kind": "PodList", "metadata": {"resourceVersion": "7", "continue": "t"}}
    data = json.dumps({**page, "items": pods}).encode()
    fast, full = decode_pod_list(data), json.loads(data)
    assert fast["metadata"] == full["metadata"]
    assert [compact_pod(p) for p in fast["items"]] == [compact_pod(p) for p in full["items"]]


@settings(max_examples=60, deadline=None)
@given(
    statuses=st.lists(_container_status, max_size=3),
    phase=st.sampled_from(["Pending", "Running", "Failed"]),
    kind=st.sampled_from(["ADDED", "MODIFIED", "DELETED"]),
    extra=_malformed_section,
)
def test_the_pod_event_decoder_gives_compact_pod_what_the_full_decode_does(
    statuses: list[dict[str, Any]], phase: str, kind: str, extra: dict[str, Any]
) -> None:
    """decode_pod_event decodes a watch event's pod as decode_pod_list decodes a page's: the
    compact pod and the event type are those of a full json.loads, malformed pods included."""
    import json

    from ascendjob_controller.job.pod_view import decode_pod_event

    pod = noise(next(iter(running_world().pods.values())), 3)
    pod["status"].update(phase=phase, containerStatuses=statuses)
    pod.update(extra)
    line = json.dumps({"type": kind, "object": pod}).encode()
    fast, full = decode_pod_event(line), json.loads(line)
    assert fast["type"] == kind
    assert compact_pod(fast["object"]) == compact_pod(full["object"])


@pytest.mark.parametrize(
    "event",
    [
        # A Status, whose code the informer reads (410: list again): kept whole.
        {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
         "status": "Failure", "message": "too old resource version: 1 (5)",
         "reason": "Expired", "code": 410}},
        {"type": "ERROR", "object": {"kind": "Status", "reason": "Expired", "code": 410}},
        {"type": "BOOKMARK", "object": {"kind": "Pod", "apiVersion": "v1", "metadata": {
            "resourceVersion": "12", "annotations": {"k8s.io/initial-events-end": "true"}}}},
        {"type": "ADDED"},  # no object at all
        {"type": ["not", "a", "string"], "object": {}},
        {"object": {"metadata": {"name": "x"}}, "type": "SOMETHING-NEW"},
    ],
)  # fmt: skip
def test_other_watch_events_are_decoded_whole(event: dict[str, Any]) -> None:
    import json

    from ascendjob_controller.job.pod_view import decode_pod_event

    assert decode_pod_event(json.dumps(event).encode()) == event


def test_the_pod_event_decoder_skips_what_compact_pod_drops() -> None:
    import json

    from ascendjob_controller.job.pod_view import decode_pod_event

    pod = noise(next(iter(running_world().pods.values())), 4)
    pod["metadata"]["managedFields"] = [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]
    decoded = decode_pod_event(json.dumps({"type": "MODIFIED", "object": pod}).encode())
    assert "managedFields" not in decoded["object"]["metadata"]
    assert decoded["object"]["metadata"]["name"] == pod["metadata"]["name"]


_small_json = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.sampled_from([0, 1, 2**70, 0.0, 1.0, float("nan")]),
        st.sampled_from(["", "a", "null", "1"]),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "null"]), inner, max_size=2),
        st.dictionaries(st.sampled_from([1, 2]), inner, min_size=1, max_size=1),
    ),
    max_leaves=6,
)


@settings(max_examples=400, deadline=None)
@given(_small_json, _small_json)
@example(float("nan"), None)  # orjson writes both as null
@example([float("nan")], [None])
@example({"a": float("inf")}, {"a": None})
@example(1, 1.0)
@example(1, True)
@example({1: "a"}, {"1": "a"})  # a key orjson refuses beside the string it would become
@example(2**70, float(2**70))
def test_a_sharing_key_is_equal_only_for_the_same_json_value(a: Any, b: Any) -> None:
    """Sharing two parts under one key would make one pod show the other's values."""
    from ascendjob_controller.job import pod_view

    if pod_view._hashable(a) == pod_view._hashable(b):
        assert pod_view._nested_key(a) == pod_view._nested_key(b)
        assert repr(a) == repr(b)  # types too: 1 is not 1.0 is not True, NaN is not None
    if "nan" not in repr(a):
        assert pod_view._hashable(a) == pod_view._hashable(copy.deepcopy(a))

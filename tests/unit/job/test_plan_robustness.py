"""plan() is total: malformed but JSON-shaped input never makes it raise.

Why this matters: the reconciler retries a job whose plan() raised forever, with back-off, and
never gives it a condition; the user sees nothing. So every input the API server could deliver
must yield a plan. The CRD types most spec fields, but the pod `template` is
x-kubernetes-preserve-unknown-fields, status can be edited by hand, and an older or looser CRD
may be installed, so the property test replaces, deletes and renames arbitrary parts of a
realistic job (and of its pods, Service and PodGroup) with arbitrary JSON.

Properties:
- plan() never raises;
- its status and every body it creates are JSON-serialisable, and the status fields the
  controller owns have the types the CRD schema requires (else the status write is refused
  with 422 forever, the same endless retry by another route);
- with an invalid spec there are no creates, and the status ends Failed/JobValidFailed with a
  "<Reason>: <text>" message (unless the job had already finished).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ascendjob_controller.job.plan import Plan, PlanOptions, plan
from ascendjob_controller.job.types import TERMINAL_STATES
from ascendjob_controller.job.validation import validate

from .factories import T0, at, container, job, replica
from .world import World

MESSAGE = re.compile(r"^Invalid[A-Za-z]+: \S")
Path = tuple[str | int, ...]

NASTY: list[Any] = [
    None,
    [],
    {},
    "",
    " ",
    "abc",
    "1.5",
    "2Gi",
    "-1",
    "0",
    -1,
    0,
    1,
    1.5,
    -2.5,
    10**12,
    2**63,
    True,
    False,
    "MASTER",
    "worker",
    "None",
    "Never",
    "ExitCode",
    "Running",
    "Failed",
    "Succeeded",
    "Unknown",
    "2026-01-01T12:00:00Z",
    "not-a-time",
    [None],
    [1, "x"],
    ["a"],
    {"a": None},
    {"name": 1},
    {"": ""},
    {"name": None, "value": 3},
    [{"name": "X"}],
    [{"value": "v"}],
]

JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
JUNK = st.one_of(st.sampled_from(NASTY), JSON)
#: Label values and keys are strings whatever the CRD says: the API server enforces that.
LABEL_VALUES = st.one_of(
    st.sampled_from(["", "pytorch", "PyTorch", "MINDSPORE", "tensorflow", "TensorFlow ", "x"]),
    st.text(max_size=12),
)
KEYS = st.one_of(
    st.sampled_from(["", "master", "MASTER", "Worker", "wOrKeR", "Chief", "scheduler", "x"]),
    st.text(max_size=8),
)


# --- realistic starting points -------------------------------------------------------------------
def _rich_job() -> dict[str, Any]:
    """A volcano job using every spec field the controller reads."""
    leader = replica(1, "ExitCode")
    leader["template"]["metadata"] = {"labels": {"app": "x"}, "annotations": {"a": "b"}}
    worker = replica(
        2,
        "ExitCode",
        containers=[
            container(
                2,
                env=[{"name": "A", "value": "1"}, {"name": "RANK", "value": "9"}],
                ports=[{"name": "ascendjob-port", "containerPort": 2222}],
            ),
            container(None, name="sidecar", resources={"requests": {"cpu": "500m"}}),
        ],
    )
    worker["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] = "2Gi"
    return job(
        specs={"Master": leader, "Worker": worker},
        scheduler="volcano",
        run_policy={
            "backoffLimit": 5,
            "activeDeadlineSeconds": 3600,
            "ttlSecondsAfterFinished": 60,
            "cleanPodPolicy": "Running",
            "schedulingPolicy": {"minAvailable": 3, "queue": "q", "priorityClass": "high"},
        },
    )


def _fresh_world() -> World:
    """Service and PodGroup ready, no pods yet: the next plan builds every pod body."""
    world = World(_rich_job())
    world.reconcile()
    world.admit_podgroup()
    return world


def _running_world() -> World:
    """Pods up, one restarted in place, one failed and being recreated (ledger populated)."""
    world = _fresh_world()
    world.reconcile()
    world.all_pods("Running")
    world.kubelet("job1-worker-0", "Running", restarts=1)
    world.kubelet("job1-worker-1", "Failed", 137)
    failed = copy.deepcopy(world.pods["job1-worker-1"])
    world.reconcile()
    # Its delete is not in the cache yet: the failed pod, its restart recorded, is listed.
    world.pods["job1-worker-1"] = failed
    status = world.job["status"]
    assert status["restartCount"] == 2 and status["recreatedPods"]
    return world


def _finished_world() -> World:
    """Succeeded with cleanPodPolicy Running: the finished-job path, with pods still listed."""
    world = _fresh_world()
    world.reconcile()
    world.all_pods("Succeeded", 0)
    world.reconcile()
    assert world.state == "Succeeded"
    return world


def _mindspore_world() -> World:
    """MindSpore workers alone (no leader, no Service), about to create pods."""
    world = World(job("mindspore", {"Worker": replica(2, "OnFailure")}))
    world.reconcile()
    return world


BASES = {
    "fresh": _fresh_world(),
    "running": _running_world(),
    "finished": _finished_world(),
    "mindspore": _mindspore_world(),
}


# --- mutations ----------------------------------------------------------------------------------
def _paths(obj: Any, prefix: Path = ()) -> Iterator[Path]:
    yield prefix
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(obj, list):
        for index, value in enumerate(obj):
            yield from _paths(value, (*prefix, index))


def _mutable(path: Path) -> bool:
    """Whatever the API server itself guarantees stays intact: object metadata other than
    labels and deletionTimestamp (names, uids, ownerReferences), and the root object."""
    if not path:
        return False
    if path[0] in ("apiVersion", "kind"):
        return False
    if path[0] == "metadata":
        return len(path) >= 2 and path[1] in ("labels", "deletionTimestamp")
    return True


def _values_for(path: Path) -> st.SearchStrategy[Any]:
    if path[0] == "metadata":
        if path == ("metadata", "labels"):
            return st.dictionaries(KEYS, LABEL_VALUES, max_size=3)
        if path[1] == "deletionTimestamp":
            return st.sampled_from(["2026-01-01T11:50:00Z", "2026-01-01T12:00:00Z"])
        return LABEL_VALUES
    return JUNK


def _parent(obj: Any, path: Path) -> Any:
    for step in path[:-1]:
        present = step in obj if isinstance(obj, dict) else False
        if isinstance(obj, list):
            present = isinstance(step, int) and step < len(obj)
        if not present:
            return None
        obj = obj[step]
    return obj


@st.composite
def mutated(draw: st.DrawFn, base: Any) -> Any:
    """`base` with 1-4 random replacements, deletions or key renames."""
    obj = copy.deepcopy(base)
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        candidates = [p for p in _paths(obj) if _mutable(p)]
        if not candidates:
            break
        path = draw(st.sampled_from(candidates))
        parent, last = _parent(obj, path), path[-1]
        if parent is None:
            continue
        action = draw(st.sampled_from(["replace", "replace", "delete", "rename"]))
        if action == "replace":
            # A copy: NASTY's lists and dicts are shared, and a later mutation may edit inside.
            parent[last] = copy.deepcopy(draw(_values_for(path)))
        elif action == "delete" and isinstance(parent, dict):
            del parent[last]
        elif action == "delete" and isinstance(parent, list):
            parent.pop(last)  # type: ignore[arg-type]
        elif action == "rename" and isinstance(parent, dict):
            parent[draw(KEYS)] = parent.pop(last)
    return obj


# --- the properties ------------------------------------------------------------------------------
def _last_condition(plan_status: dict[str, Any]) -> dict[str, Any]:
    conditions = plan_status["conditions"]
    assert isinstance(conditions, list) and conditions
    assert all(isinstance(c, dict) for c in conditions)
    return dict(conditions[-1])


def _api_shaped(body: dict[str, Any]) -> None:
    """A created body the API server would take: string maps, containers with string env."""
    meta = body["metadata"]
    for field in ("labels", "annotations"):
        assert all(isinstance(v, str) for v in meta.get(field, {}).values()), (field, meta)
    if body["kind"] != "Pod":
        return
    for container_body in body["spec"]["containers"]:
        assert isinstance(container_body, dict) and isinstance(container_body["name"], str)
        for item in container_body.get("env", []):
            assert isinstance(item["name"], str), item
            assert isinstance(item.get("value", ""), str), item


def _deletes_name_inputs(result: Plan, children: dict[str, list[dict[str, Any]]]) -> None:
    """Every delete names an object plan() was given, of the same kind."""
    for ref in (*result.deletes, *result.force_deletes):
        names = {o.get("metadata", {}).get("name") for o in children.get(ref.kind, [])}
        assert ref.name in names, ref


def check(job_obj: dict[str, Any], result: Plan) -> None:
    """The properties of the module docstring, for one (job, plan)."""
    for body in result.creates:
        _api_shaped(body)
    json.dumps(result.status)
    json.dumps(list(result.creates))
    json.dumps(result.podgroup_patch)
    status = result.status
    if status is not None:
        assert isinstance(status, dict)
        for condition in status["conditions"]:
            assert isinstance(condition, dict)
            assert isinstance(condition.get("type"), str)
            assert isinstance(condition.get("status"), str)
            for field in ("reason", "message", "lastUpdateTime", "lastTransitionTime"):
                assert isinstance(condition.get(field, ""), str), (field, condition)
        assert isinstance(status.get("restartCount"), int)
        assert not isinstance(status.get("restartCount"), bool)
        assert isinstance(status.get("replicaStatuses", {}), dict)
        assert isinstance(status.get("countedContainerRestarts", {}), dict)
        assert all(
            isinstance(v, int) and not isinstance(v, bool)
            for v in status.get("countedContainerRestarts", {}).values()
        )
        assert isinstance(status.get("recreatedPods", []), list)
        assert all(isinstance(v, str) for v in status.get("recreatedPods", []))
        for field in ("startTime", "completionTime", "lastReconcileTime"):
            assert isinstance(status.get(field, ""), str), field
    if validate(job_obj):
        assert result.creates == () and result.podgroup_patch is None
        if result.previous_state not in TERMINAL_STATES:
            assert result.state == "Failed"
            if status is not None:
                last = _last_condition(status)
                assert (last["type"], last["status"]) == ("Failed", "True")
                assert last["reason"] == "JobValidFailed"
                assert MESSAGE.match(last["message"]), last["message"]


def run(
    job_obj: dict[str, Any],
    pods: list[dict[str, Any]],
    services: list[dict[str, Any]],
    podgroup: dict[str, Any] | None,
    seconds: float = 10,
    options: PlanOptions | None = None,
) -> Plan:
    inputs = copy.deepcopy((job_obj, pods, services, podgroup))
    result = plan(job_obj, pods, services, podgroup, at(seconds), options or PlanOptions())
    assert inputs == (job_obj, pods, services, podgroup), "plan() mutated its inputs"
    check(job_obj, result)
    groups = [] if podgroup is None else [podgroup]
    _deletes_name_inputs(result, {"Pod": pods, "Service": services, "PodGroup": groups})
    return result


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data(), base=st.sampled_from(sorted(BASES)), target=st.sampled_from("jjjjpsg"))
def test_plan_is_total_on_malformed_input(data: st.DataObject, base: str, target: str) -> None:
    world = BASES[base]
    job_obj = copy.deepcopy(world.job)
    pods = copy.deepcopy(list(world.pods.values()))
    services = copy.deepcopy(list(world.services.values()))
    podgroup = copy.deepcopy(world.podgroup)
    if target == "j":
        job_obj = data.draw(mutated(job_obj), label="job")
    elif target == "p" and pods:
        which = data.draw(st.integers(min_value=0, max_value=len(pods) - 1))
        pods[which] = data.draw(mutated(pods[which]), label="pod")
    elif target == "s":
        services = [data.draw(mutated(s), label="service") for s in services]
    elif target == "g" and podgroup is not None:
        podgroup = data.draw(mutated(podgroup), label="podgroup")
    seconds = data.draw(st.sampled_from([10, 7200]))
    live = data.draw(st.sampled_from([None, frozenset({"node-1"})]))
    run(job_obj, pods, services, podgroup, seconds, PlanOptions(live_nodes=live))


# --- specific nasty cases ------------------------------------------------------------------------
def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `obj` with the dotted `path` set (`~` deletes; digits index lists)."""
    out = copy.deepcopy(obj)
    steps: list[str | int] = [int(s) if s.isdigit() else s for s in path.split(".")]
    cur: Any = out
    for step in steps[:-1]:
        cur = cur.setdefault(step, {}) if isinstance(cur, dict) else cur[step]
    if value == "~":
        del cur[steps[-1]]
    else:
        cur[steps[-1]] = value
    return out


W = "spec.replicaSpecs.Worker"
WT = f"{W}.template.spec.containers.0"
M = "spec.replicaSpecs.Master"

#: (job path, value, whether the job must be rejected by validation)
JOB_CASES: list[tuple[str, Any, bool]] = [
    (f"{W}.template", None, True),
    (f"{W}.template", [], True),
    (f"{W}.template", "x", True),
    (f"{W}.template.spec", [1], True),
    (f"{W}.template.spec.containers", {"name": "ascend"}, True),
    (f"{W}.template.spec.containers", ["ascend"], True),
    (f"{W}.template.spec.containers", [None], True),
    (f"{W}.template.metadata", [], True),
    (f"{W}.template.metadata.labels", ["a"], True),
    (f"{W}.template.metadata.annotations", "x", True),
    (f"{WT}.env", [{"value": "v"}], True),
    (f"{WT}.env", [{"name": 1, "value": 2}], True),
    (f"{WT}.env", ["A=1"], True),
    (f"{WT}.env", {"A": "1"}, True),
    (f"{WT}.resources", "2", True),
    (f"{WT}.resources.requests", ["x"], True),
    (f"{WT}.resources.requests.huawei.com/Ascend910", "abc", True),
    (f"{WT}.resources.requests.huawei.com/Ascend910", "1.5", True),
    (f"{WT}.resources.requests.huawei.com/Ascend910", "2Gi", True),
    (f"{WT}.resources.requests.huawei.com/Ascend910", -1, True),
    (f"{WT}.resources.requests.huawei.com/Ascend910", None, True),
    (f"{WT}.resources.requests.huawei.com/Ascend910", 2.5, True),
    (f"{WT}.resources.requests.huawei.com/Ascend910", 10**30, True),
    (f"{WT}.resources.requests.huawei.com/Ascend910", "1e400", True),
    (f"{WT}.resources.requests.huawei.com/Ascend910", "Infinity", True),
    (f"{WT}.resources.requests.huawei.com/Ascend910", "NaN", True),
    (f"{WT}.resources.requests.cpu", "NaN", True),
    (f"{WT}.resources.requests.cpu", "Infinity", True),
    (f"{WT}.resources.requests.cpu", "1e999999999", True),
    (f"{WT}.ports", [{"name": "ascendjob-port", "containerPort": "2222"}], True),
    (f"{WT}.ports", "2222", True),
    (f"{WT}.ports", [2222], True),
    (f"{WT}.name", None, True),
    (f"{WT}.name", 7, True),
    (f"{M}.template.spec.containers.0.ports", [None, "x", {"containerPort": "a"}], True),
    (f"{M}.template.spec.containers.0.ports", {"containerPort": 1}, True),
    (f"{M}.template.spec.containers.0.resources.requests.huawei.com/Ascend910", "x", True),
    (f"{WT}.resources.requests.huawei.com/Ascend910", "2", False),
    (f"{WT}.resources.requests.cpu", "500m", False),
    (
        f"{WT}.env",
        [{"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
        False,
    ),
    (f"{WT}.ports", [{"containerPort": 8080, "protocol": "UDP"}], False),
    (f"{W}.replicas", None, False),
    (f"{W}.replicas", -1, True),
    (f"{W}.replicas", 10**12, True),
    (f"{W}.replicas", "2", True),
    (f"{W}.replicas", 2.0, True),
    (f"{W}.replicas", True, True),
    (f"{W}.restartPolicy", None, False),
    (f"{W}.restartPolicy", 3, True),
    (f"{W}.restartPolicy", ["Never"], True),
    (f"{W}.restartPolicy", "never", True),
    (W, None, True),
    (W, [], True),
    ("spec.replicaSpecs", [], True),
    ("spec.replicaSpecs", "x", True),
    ("spec.replicaSpecs", None, True),
    ("spec", None, True),
    ("spec", [], True),
    ("spec", "~", True),
    ("spec.runPolicy", None, False),
    ("spec.runPolicy", [], True),
    ("spec.runPolicy", "x", True),
    ("spec.runPolicy.backoffLimit", None, False),
    ("spec.runPolicy.backoffLimit", "3", True),
    ("spec.runPolicy.backoffLimit", -1, True),
    ("spec.runPolicy.activeDeadlineSeconds", "60", True),
    ("spec.runPolicy.activeDeadlineSeconds", 10**30, True),
    ("spec.runPolicy.activeDeadlineSeconds", -5, True),
    ("spec.runPolicy.ttlSecondsAfterFinished", 10**30, True),
    ("spec.runPolicy.cleanPodPolicy", 1, True),
    ("spec.runPolicy.cleanPodPolicy", ["All"], True),
    ("spec.runPolicy.schedulingPolicy", [], True),
    ("spec.runPolicy.schedulingPolicy", "x", True),
    ("spec.runPolicy.schedulingPolicy.minAvailable", "2", True),
    ("spec.runPolicy.schedulingPolicy.minAvailable", -3, True),
    ("spec.runPolicy.schedulingPolicy.minResources", ["cpu"], True),
    ("spec.runPolicy.schedulingPolicy.minResources", "x", True),
    ("spec.runPolicy.schedulingPolicy.queue", ["q"], True),
    ("spec.runPolicy.schedulingPolicy.priorityClass", {"a": 1}, True),
    ("spec.schedulerName", ["volcano"], True),
    ("spec.schedulerName", None, False),
    ("spec.successPolicy", None, False),
    ("spec.successPolicy", 1, True),
    ("spec.successPolicy", ["AllWorkers"], True),
    ("metadata.labels", "~", True),
    ("metadata.labels.framework", "PyTorch", False),
    ("metadata.labels.framework", "", True),
    ("metadata.labels.framework", "caffe", True),
    ("status", None, False),
    ("status", [], False),
    ("status", "x", False),
    ("status.conditions", "Running", False),
    ("status.conditions", {"type": "Running"}, False),
    ("status.conditions", [None, "x", 3], False),
    ("status.conditions", [{"type": None, "status": "True"}], False),
    ("status.conditions", [{"type": 5, "status": "True", "reason": 1, "message": []}], False),
    ("status.conditions", [{"type": "Running", "status": True}], False),
    ("status.conditions.0.lastTransitionTime", 5, False),
    ("status.restartCount", "3", False),
    ("status.restartCount", None, False),
    ("status.restartCount", -4, False),
    ("status.restartCount", 1.5, False),
    ("status.countedContainerRestarts", ["a"], False),
    ("status.countedContainerRestarts", "x", False),
    ("status.countedContainerRestarts", {"u": "3", "v": 2.5, "w": None}, False),
    ("status.recreatedPods", "uid", False),
    ("status.recreatedPods", {"a": 1}, False),
    ("status.recreatedPods", [None, 1, ["x"]], False),
    ("status.replicaStatuses", "x", False),
    ("status.startTime", 5, False),
    ("status.startTime", "yesterday", False),
    ("status.completionTime", ["x"], False),
    ("status.lastReconcileTime", {}, False),
    ("status.unknownKey", {"x": [1]}, False),
]


@pytest.mark.parametrize("base", ["fresh", "running", "finished"])  # the PyTorch ones
@pytest.mark.parametrize(("path", "value", "invalid"), JOB_CASES)
def test_nasty_job_field(base: str, path: str, value: Any, invalid: bool) -> None:
    world = BASES[base]
    if path.startswith("status") and "status" not in world.job and path != "status":
        pytest.skip("no status to corrupt")
    job_obj = (
        _set(world.job, path, value) if "/" not in path else _set_resource(world.job, path, value)
    )
    assert bool(validate(job_obj)) == invalid, validate(job_obj)
    pods, services = list(world.pods.values()), list(world.services.values())
    run(job_obj, pods, services, world.podgroup)
    run(job_obj, pods, services, world.podgroup, seconds=7200)


def _set_resource(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """`_set` for a path ending in a resource name with dots and a slash in it."""
    head, _, resource = path.rpartition(".huawei.com/")
    out = copy.deepcopy(obj)
    cur: Any = out
    for step in head.split("."):
        cur = cur[int(step)] if step.isdigit() else cur.setdefault(step, {})
    cur["huawei.com/" + resource] = value
    return out


POD = "status.containerStatuses.0"
#: (pod path, value) applied to one pod of the running world.
POD_CASES: list[tuple[str, Any]] = [
    ("status", "~"),
    ("status", None),
    ("status", []),
    ("status.phase", None),
    ("status.phase", "Weird"),
    ("status.phase", 3),
    ("status.phase", "Failed"),
    ("status.containerStatuses", None),
    ("status.containerStatuses", "x"),
    ("status.containerStatuses", [None, "x"]),
    ("status.containerStatuses", {"name": "ascend"}),
    (f"{POD}.state", "~"),
    (f"{POD}.state", None),
    (f"{POD}.state", "terminated"),
    (f"{POD}.state", {"terminated": None}),
    (f"{POD}.state", {"terminated": {"exitCode": "137"}}),
    (f"{POD}.state", {"terminated": {"exitCode": 1.5}}),
    (f"{POD}.lastState", {"terminated": {"exitCode": "1"}}),
    (f"{POD}.lastState", "x"),
    (f"{POD}.restartCount", "4"),
    (f"{POD}.restartCount", -1),
    (f"{POD}.restartCount", None),
    (f"{POD}.restartCount", 2.5),
    (f"{POD}.name", None),
    (f"{POD}.name", 1),
    ("status.reason", ["Evicted"]),
    ("spec", "~"),
    ("spec", None),
    ("spec.containers", "x"),
    ("spec.containers", [None]),
    ("spec.nodeName", ["n"]),
    ("metadata.deletionTimestamp", "2026-01-01T11:00:00Z"),
    ("metadata.labels", "~"),
    ("metadata.deletionTimestamp", "garbage"),
]


@pytest.mark.parametrize(("path", "value"), POD_CASES)
@pytest.mark.parametrize("phase", ["Running", "Failed"])
def test_nasty_pod(path: str, value: Any, phase: str) -> None:
    world = BASES["running"]
    pods = copy.deepcopy(world.pods)
    victim = "job1-worker-1" if phase == "Failed" else "job1-master-0"
    if path.startswith(POD) and not (pods[victim].get("status") or {}).get("containerStatuses"):
        pods[victim]["status"]["containerStatuses"] = [{"name": "ascend"}]
        if path.endswith(".state") and value == "~":
            pytest.skip("nothing to delete")
    pods[victim] = _set(pods[victim], path, value)
    live = PlanOptions(live_nodes=frozenset({"node-1"}))
    for base_job in (world.job, _set(world.job, "status.restartCount", 0)):
        run(base_job, list(pods.values()), list(world.services.values()), world.podgroup)
        run(base_job, list(pods.values()), [], None, seconds=7200, options=live)


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("spec", "~"),
        ("spec", None),
        ("spec.clusterIP", None),
        ("spec.clusterIP", 5),
        ("spec.clusterIP", ["10.0.0.1"]),
        ("spec.clusterIP", "None"),
        ("metadata.labels", "~"),
    ],
)
def test_nasty_service(path: str, value: Any) -> None:
    world = BASES["fresh"]
    services = [_set(s, path, value) for s in world.services.values()]
    result = run(world.job, [], services, world.podgroup)
    if path.startswith("spec"):
        assert not any(body["kind"] == "Pod" for body in result.creates)


@pytest.mark.parametrize(
    ("path", "value"),
    [("status", "~"), ("status", None), ("status", "x"), ("status.phase", 3), ("spec", None)],
)
def test_nasty_podgroup(path: str, value: Any) -> None:
    for world in (BASES["fresh"], BASES["running"]):
        assert world.podgroup is not None
        group = _set(world.podgroup, path, value)
        run(world.job, list(world.pods.values()), list(world.services.values()), group)


@pytest.mark.parametrize("node", [["n"], {"n": 1}, None, 5])
def test_terminating_pod_with_an_odd_node_name(node: Any) -> None:
    """Regression: a list nodeName raised TypeError (unhashable) against live_nodes."""
    world = BASES["running"]
    pods = copy.deepcopy(world.pods)
    pod = pods["job1-master-0"]
    pod["metadata"]["deletionTimestamp"] = "2026-01-01T11:00:00Z"
    pod["spec"]["nodeName"] = node
    live = PlanOptions(live_nodes=frozenset({"node-1"}))
    result = run(world.job, list(pods.values()), [], None, options=live)
    assert [ref.name for ref in result.force_deletes] == ["job1-master-0"]


@pytest.mark.parametrize("containers", ["x", [None], [], None])
def test_failed_pod_without_container_statuses_or_containers(containers: Any) -> None:
    """Regression: the exit event read the first container's name from a non-dict."""
    world = BASES["running"]
    pods = copy.deepcopy(world.pods)
    pod = pods["job1-worker-1"]
    pod["status"] = {"phase": "Failed", "reason": "Evicted"}
    pod["spec"]["containers"] = containers
    job_obj = _set(world.job, "status", {})
    result = run(job_obj, list(pods.values()), [], None)
    assert any(e.reason == "ExitedWithCode" for e in result.events)


@pytest.mark.parametrize("ttl", [-5, -1])
def test_negative_ttl_does_not_delete_the_job_it_invalidates(ttl: int) -> None:
    """Regression: the invalid-spec path honoured ttlSecondsAfterFinished -5, deleting the job
    (and the Failed condition that explains it) as soon as it failed."""
    world = BASES["running"]
    broken = _set(world.job, "spec.runPolicy.ttlSecondsAfterFinished", ttl)
    result = run(broken, list(world.pods.values()), [], None)
    assert result.state == "Failed" and not result.delete_job
    later = copy.deepcopy(broken)
    later["status"] = result.status
    assert not run(later, list(world.pods.values()), [], None, seconds=9999).delete_job


def test_terminal_status_is_not_revived_by_an_invalid_spec() -> None:
    """A finished job whose spec is then broken stays finished (terminal means terminal)."""
    world = BASES["running"]
    done = _set(world.job, "status.conditions", [{"type": "Succeeded", "status": "True"}])
    broken = _set(done, "spec.replicaSpecs", "x")
    result = run(broken, list(world.pods.values()), [], None)
    assert result.state == "Succeeded" and result.creates == ()


def test_starting_points_are_what_the_properties_assume() -> None:
    """Guard the fixtures: the fresh world would create pods, the running one is Restarting."""
    fresh = BASES["fresh"]
    result = plan(fresh.job, [], list(fresh.services.values()), fresh.podgroup, T0)
    assert sum(body["kind"] == "Pod" for body in result.creates) == 3
    assert BASES["running"].state == "Restarting"

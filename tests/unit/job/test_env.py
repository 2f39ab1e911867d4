"""Per-framework environment and rank numbering (design section 4, "Environment"), and the
variables MindCluster's operator adds (ascend-parity.md section 2)."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.job.desired import desired_pod
from ascendjob_controller.job.env import (
    JobViewWithMeta,
    _read_npu_request,
    clear_npu_cache,
    npu_resource,
    npus_of,
    parse_job_with_meta,
)
from ascendjob_controller.job.types import JobView, parse_job

from .factories import UID, container, job, replica

NPU = "huawei.com/Ascend910"

IP = "10.96.0.10"
POD_IP = {"fieldRef": {"fieldPath": "status.podIP"}}
DEVICES_910 = {"fieldRef": {"fieldPath": "metadata.annotations['huawei.com/Ascend910']"}}


def env_of(body: dict[str, Any], rtype: str, index: int, view: JobView | None = None) -> Any:
    """The training container's variables (value or valueFrom) plus the rank annotation."""
    view = parse_job_with_meta(body) if view is None else view
    pod = desired_pod(view, rtype, index, IP, gang=False)
    main = next(c for c in pod["spec"]["containers"] if c["name"] == "ascend")
    out: dict[str, Any] = {}
    for item in main.get("env", []):
        out[item["name"]] = item.get("value", item.get("valueFrom"))
    out["@rank"] = pod["metadata"]["annotations"]["hccl/rankIndex"]
    return out


def with_meta(
    body: dict[str, Any],
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    body["metadata"]["labels"].update(labels or {})
    if annotations is not None:
        body["metadata"]["annotations"] = annotations
    return body


def pt(leader_npus: int | None, workers: int = 2, npus: int = 4) -> dict[str, Any]:
    return job(
        "pytorch", {"Master": replica(1, npus=leader_npus), "Worker": replica(workers, npus=npus)}
    )


# --- whole environments, per framework -----------------------------------------------------------
def test_pytorch_leader_with_npus_counts_every_replica() -> None:
    body = pt(4)
    assert env_of(body, "Master", 0) == {
        "ASCEND_VISIBLE_DEVICES": DEVICES_910,
        "MINDX_TASK_ID": UID,
        "HostNetwork": "false",
        "HCCL_LOGIC_SUPERPOD_ID": "0",
        "REPLICA_TYPE": "Master",
        "MASTER_ADDR": IP,
        "MASTER_PORT": "2222",
        "WORLD_SIZE": "12",
        "LOCAL_WORLD_SIZE": "4",
        "RANK": "0",
        "LOCAL_RANK": "0,1,2,3",
        "@rank": "0",
    }
    for index in range(2):
        worker = env_of(body, "Worker", index)
        assert worker["RANK"] == worker["@rank"] == str(index + 1)
        assert worker["WORLD_SIZE"] == "12"
        assert worker["REPLICA_TYPE"] == "Worker"


def test_pytorch_leader_without_npus_workers_from_zero() -> None:
    body = pt(None)
    assert [env_of(body, "Worker", i)["RANK"] for i in range(2)] == ["0", "1"]
    assert env_of(body, "Worker", 1)["WORLD_SIZE"] == "8"
    assert env_of(body, "Master", 0) == {
        "MINDX_TASK_ID": UID,
        "HostNetwork": "false",
        "REPLICA_TYPE": "Master",
        "MASTER_ADDR": IP,
        "MASTER_PORT": "2222",
        "WORLD_SIZE": "8",
        "LOCAL_WORLD_SIZE": "0",
        "RANK": "0",
        "@rank": "0",
    }


def test_no_npus_on_worker_leaves_framework_vars_out() -> None:
    body = job("pytorch", {"Master": replica(1, npus=None), "Worker": replica(2, npus=None)})
    assert env_of(body, "Worker", 1) == {
        "MINDX_TASK_ID": UID,
        "HostNetwork": "false",
        "REPLICA_TYPE": "Worker",
        "@rank": "1",
    }


def test_mindspore_env() -> None:
    body = job("mindspore", {"Scheduler": replica(1, npus=None), "Worker": replica(2, npus=8)})
    assert env_of(body, "Scheduler", 0) == {
        "MINDX_TASK_ID": UID,
        "HostNetwork": "false",
        "REPLICA_TYPE": "Scheduler",
        "MS_SCHED_HOST": POD_IP,
        "MS_SCHED_PORT": "2222",
        "MS_ROLE": "MS_SCHED",
        "MS_WORKER_NUM": "16",
        "MS_LOCAL_WORKER": "0",
        "MS_NODE_RANK": "0",
        "MS_SERVER_NUM": "0",
        "NPU_POD": "false",
        "@rank": "0",
    }
    assert env_of(body, "Worker", 1) == {
        "ASCEND_VISIBLE_DEVICES": DEVICES_910,
        "MINDX_TASK_ID": UID,
        "HostNetwork": "false",
        "HCCL_LOGIC_SUPERPOD_ID": "0",
        "REPLICA_TYPE": "Worker",
        "MS_SCHED_HOST": IP,
        "MS_SCHED_PORT": "2222",
        "MS_ROLE": "MS_WORKER",
        "MS_WORKER_NUM": "16",
        "MS_LOCAL_WORKER": "8",
        "MS_NODE_RANK": "1",
        "MS_SERVER_NUM": "0",
        "NPU_POD": "true",
        "@rank": "1",
    }


def test_mindspore_scheduler_with_npus_takes_rank_zero() -> None:
    body = job("mindspore", {"Scheduler": replica(1, npus=8), "Worker": replica(2, npus=8)})
    assert env_of(body, "Worker", 0)["MS_NODE_RANK"] == "1"
    assert env_of(body, "Worker", 0)["MS_WORKER_NUM"] == "24"
    assert env_of(body, "Scheduler", 0)["NPU_POD"] == "true"


def test_mindspore_without_scheduler_has_no_sched_host() -> None:
    body = job("mindspore", {"Worker": replica(2, npus=8)})
    worker = env_of(body, "Worker", 0)
    assert "MS_SCHED_HOST" not in worker
    assert worker["MS_NODE_RANK"] == "0"


def test_tensorflow_env() -> None:
    body = job("tensorflow", {"Chief": replica(1, npus=2), "Worker": replica(1, npus=2)})
    chief = env_of(body, "Chief", 0)
    assert chief["CM_CHIEF_IP"] == POD_IP
    assert chief["CM_RANK"] == "0"
    assert chief["REPLICA_TYPE"] == "Chief"
    assert env_of(body, "Worker", 0) == {
        "ASCEND_VISIBLE_DEVICES": DEVICES_910,
        "MINDX_TASK_ID": UID,
        "HostNetwork": "false",
        "HCCL_LOGIC_SUPERPOD_ID": "0",
        "REPLICA_TYPE": "Worker",
        "CM_CHIEF_IP": IP,
        "CM_CHIEF_PORT": "2222",
        "CM_CHIEF_DEVICE": "0",
        "CM_WORKER_SIZE": "4",
        "CM_LOCAL_WORKER": "2",
        "CM_RANK": "1",
        "CM_WORKER_IP": POD_IP,
        "@rank": "1",
    }


def test_template_env_is_left_alone() -> None:
    main = container(
        2, env=[{"name": "RANK", "value": "7"}, {"name": "ASCEND_VISIBLE_DEVICES", "value": "0"}]
    )
    body = job("pytorch", {"Master": replica(1), "Worker": replica(1, containers=[main])})
    env = env_of(body, "Worker", 0)
    assert env["RANK"] == "7"
    assert env["ASCEND_VISIBLE_DEVICES"] == "0"
    assert env["WORLD_SIZE"] == "4"


def test_custom_leader_port_is_used() -> None:
    leader = container(2, ports=[{"name": "ascendjob-port", "containerPort": 3000}])
    body = job("pytorch", {"Master": replica(1, containers=[leader]), "Worker": replica(1)})
    assert env_of(body, "Worker", 0)["MASTER_PORT"] == "3000"


@pytest.mark.parametrize("resource", ["huawei.com/Ascend910", "huawei.com/Ascend310P"])
def test_npu_resource_names(resource: str) -> None:
    main = {"name": "ascend", "image": "x", "resources": {"limits": {resource: "4"}}}
    body = job(
        "pytorch", {"Master": replica(1, npus=None), "Worker": replica(1, containers=[main])}
    )
    assert env_of(body, "Worker", 0)["LOCAL_WORLD_SIZE"] == "4"


def test_training_container_is_ascend_else_first() -> None:
    side = {"name": "side", "image": "x"}
    body = job(
        "pytorch", {"Master": replica(1), "Worker": replica(1, containers=[side, container(2)])}
    )
    pod = desired_pod(parse_job(body), "Worker", 0, IP, gang=False)
    assert "env" not in pod["spec"]["containers"][0]
    assert pod["spec"]["containers"][1]["env"]
    body = job(
        "pytorch",
        {"Master": replica(1), "Worker": replica(1, containers=[container(2, name="main"), side])},
    )
    pod = desired_pod(parse_job(body), "Worker", 0, IP, gang=False)
    assert pod["spec"]["containers"][0]["env"]


# --- ASCEND_VISIBLE_DEVICES ----------------------------------------------------------------------
def _annotation(name: str) -> dict[str, Any]:
    return {"fieldRef": {"fieldPath": f"metadata.annotations['{name}']"}}


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        ({"requests": {"huawei.com/Ascend910": 2}}, _annotation("huawei.com/Ascend910")),
        ({"limits": {"huawei.com/npu": "8"}}, _annotation("huawei.com/npu")),
        ({"limits": {"huawei.com/Ascend310P": 1}}, _annotation("huawei.com/Ascend310P")),
        ({"requests": {"huawei.com/Ascend310": 1}}, _annotation("huawei.com/Ascend310")),
        # cpu and memory requests do not make it "virtual" (they do in MindCluster).
        (
            {"requests": {"cpu": "4", "memory": "8Gi", "huawei.com/Ascend910": 8}},
            _annotation("huawei.com/Ascend910"),
        ),
        # Requests win over limits, as the API server defaults one from the other.
        (
            {"requests": {"huawei.com/npu": 2}, "limits": {"huawei.com/Ascend910": 2}},
            _annotation("huawei.com/npu"),
        ),
        # Virtual resources (vNPU slices) get none, alone or beside a whole device.
        ({"requests": {"huawei.com/Ascend910-4c": 1}}, None),
        ({"requests": {"huawei.com/Ascend910": 1, "huawei.com/Ascend310P-2c": 1}}, None),
        ({"requests": {"huawei.com/Ascend910": 0}}, None),
        ({"requests": {"cpu": "1"}}, None),
        ({}, None),
    ],
)
def test_ascend_visible_devices(resources: dict[str, Any], expected: Any) -> None:
    main = {"name": "ascend", "image": "x", "resources": resources}
    body = job("pytorch", {"Master": replica(1, containers=[main]), "Worker": replica(1)})
    assert env_of(body, "Master", 0).get("ASCEND_VISIBLE_DEVICES") == expected


def test_ascend_visible_devices_only_on_the_training_container() -> None:
    side = container(2, name="side")
    body = job("pytorch", {"Master": replica(1, containers=[side, container(2)])})
    pod = desired_pod(parse_job_with_meta(body), "Master", 0, IP, gang=False)
    assert "env" not in pod["spec"]["containers"][0]
    names = [item["name"] for item in pod["spec"]["containers"][1]["env"]]
    assert names[:5] == [
        "ASCEND_VISIBLE_DEVICES",
        "MINDX_TASK_ID",
        "HostNetwork",
        "HCCL_LOGIC_SUPERPOD_ID",
        "REPLICA_TYPE",
    ]


# --- HostNetwork, REPLICA_TYPE -------------------------------------------------------------------
@pytest.mark.parametrize(("value", "expected"), [(True, "true"), (False, "false"), (None, "false")])
def test_host_network(value: bool | None, expected: str) -> None:
    spec = replica(1)
    if value is not None:
        spec["template"]["spec"]["hostNetwork"] = value
    body = job("pytorch", {"Master": spec, "Worker": replica(1)})
    assert env_of(body, "Master", 0)["HostNetwork"] == expected
    assert env_of(body, "Worker", 0)["HostNetwork"] == "false"


@pytest.mark.parametrize(
    ("framework", "key", "rtype", "expected"),
    [
        ("pytorch", "master", "Master", "Master"),
        ("pytorch", "WORKER", "Worker", "Worker"),
        ("mindspore", "scheduler", "Scheduler", "Scheduler"),
        ("tensorflow", "chief", "Chief", "Chief"),
    ],
)
def test_replica_type_is_the_normalised_spec_spelling(
    framework: str, key: str, rtype: str, expected: str
) -> None:
    """MindCluster normalises keys to CamelCase too, then sets REPLICA_TYPE to that."""
    body = job(framework, {key: replica(1)})
    assert env_of(body, rtype, 0)["REPLICA_TYPE"] == expected


# --- HCCL_LOGIC_SUPERPOD_ID ----------------------------------------------------------------------
def _superpod_job(sp_block: str | None, npus: int = 8) -> dict[str, Any]:
    """Master (rank 0) and 4 Workers (ranks 1..4), `npus` each."""
    body = job("pytorch", {"Master": replica(1, npus=npus), "Worker": replica(4, npus=npus)})
    return with_meta(body, annotations=None if sp_block is None else {"sp-block": sp_block})


@pytest.mark.parametrize(
    ("sp_block", "npus", "ids"),
    [
        (None, 8, ["0", "0", "0", "0", "0"]),
        ("16", 8, ["0", "0", "1", "1", "2"]),  # 2 servers per logical super-pod
        ("32", 8, ["0", "0", "0", "0", "1"]),
        ("8", 8, ["0", "1", "2", "3", "4"]),  # one server each
        ("4", 8, ["0", "1", "2", "3", "4"]),  # smaller than a server: still one each
        ("16", 16, ["0", "1", "2", "3", "4"]),
        ("16", 2, ["0", "0", "0", "0", "0"]),  # 8 servers per super-pod
        ("0", 8, ["0", "0", "0", "0", "0"]),
        ("-16", 8, ["0", "0", "0", "0", "0"]),
        ("abc", 8, ["0", "0", "0", "0", "0"]),
    ],
)
def test_logic_superpod_id(sp_block: str | None, npus: int, ids: list[str]) -> None:
    body = _superpod_job(sp_block, npus)
    pods = [("Master", 0)] + [("Worker", i) for i in range(4)]
    assert [env_of(body, r, i)["HCCL_LOGIC_SUPERPOD_ID"] for r, i in pods] == ids


def test_logic_superpod_id_only_for_pods_with_npus() -> None:
    body = with_meta(pt(None, workers=4, npus=8), annotations={"sp-block": "16"})
    assert "HCCL_LOGIC_SUPERPOD_ID" not in env_of(body, "Master", 0)
    ids = [env_of(body, "Worker", i)["HCCL_LOGIC_SUPERPOD_ID"] for i in range(4)]
    assert ids == ["0", "0", "1", "1"]  # Workers are ranks 0..3 here


def test_plain_view_reads_as_a_job_without_metadata() -> None:
    body = _superpod_job("16")
    assert env_of(body, "Worker", 3, view=parse_job(body))["HCCL_LOGIC_SUPERPOD_ID"] == "0"


# --- process-level recovery (recover-strategy) and pod rescheduling ----------------------------
RECOVER_VARS = (
    "PROCESS_RECOVER",
    "ELASTIC_PROCESS_RECOVER_ENABLE",
    "ENABLE_RESTART_FAULT_PROCESS",
    "HIGH_AVAILABILITY",
    "HCCL_ASYNC_ERROR_HANDLING",
    "MS_ENABLE_TFT",
    "MINDIO_FOR_MINDSPORE",
    "MS_ENABLE_THM",
)
PT_ON = {"PROCESS_RECOVER": "on", "ELASTIC_PROCESS_RECOVER_ENABLE": "1"}
MS_ON = {
    **PT_ON,
    "MINDIO_FOR_MINDSPORE": "1",
    "MS_ENABLE_THM": "{HCCL_WATCHDOG:0}",
}


def recover_env(
    framework: str, strategy: str | None, rescheduling: str | None = None
) -> dict[str, str]:
    leader = {"pytorch": "Master", "mindspore": "Scheduler", "tensorflow": "Chief"}[framework]
    body = job(framework, {leader: replica(1), "Worker": replica(1)})
    with_meta(
        body,
        labels={} if rescheduling is None else {"pod-rescheduling": rescheduling},
        annotations={} if strategy is None else {"recover-strategy": strategy},
    )
    env = env_of(body, "Worker", 0)
    return {k: env[k] for k in RECOVER_VARS if k in env}


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (None, {}),
        ("", {}),
        ("nonsense", {}),  # no known strategy: nothing (MindCluster sets the watchdog anyway)
        ("recover", {**PT_ON, "HIGH_AVAILABILITY": "recover", "HCCL_ASYNC_ERROR_HANDLING": "0"}),
        ("retry", {**PT_ON, "HIGH_AVAILABILITY": "retry", "HCCL_ASYNC_ERROR_HANDLING": "0"}),
        ("dump", {**PT_ON, "HIGH_AVAILABILITY": "dump", "HCCL_ASYNC_ERROR_HANDLING": "0"}),
        ("exit", {**PT_ON, "HIGH_AVAILABILITY": "recover", "HCCL_ASYNC_ERROR_HANDLING": "0"}),
        (
            "recover-in-place",
            {
                **PT_ON,
                "ENABLE_RESTART_FAULT_PROCESS": "on",
                "HIGH_AVAILABILITY": "recover",
                "HCCL_ASYNC_ERROR_HANDLING": "0",
            },
        ),
        (
            "elastic-training",
            {
                "PROCESS_RECOVER": "on",
                "HIGH_AVAILABILITY": "elastic-training",
                "HCCL_ASYNC_ERROR_HANDLING": "0",
            },
        ),
        (
            "retry, dump,recover,exit,bogus,recover",
            {**PT_ON, "HIGH_AVAILABILITY": "dump,recover,retry", "HCCL_ASYNC_ERROR_HANDLING": "0"},
        ),
        (
            "elastic-training,recover-in-place",
            {
                **PT_ON,
                "ENABLE_RESTART_FAULT_PROCESS": "on",
                "HIGH_AVAILABILITY": "elastic-training,recover",
                "HCCL_ASYNC_ERROR_HANDLING": "0",
            },
        ),
    ],
)
def test_pytorch_recover_strategy(strategy: str | None, expected: dict[str, str]) -> None:
    assert recover_env("pytorch", strategy) == expected
    # pod-rescheduling is MindSpore's only.
    assert recover_env("pytorch", strategy, rescheduling="on") == expected


@pytest.mark.parametrize(
    ("strategy", "rescheduling", "expected"),
    [
        (None, None, {}),
        (None, "on", {"MS_ENABLE_TFT": "{RSC:1}"}),
        (None, "off", {}),
        ("elastic-training", None, {}),  # PyTorch-only
        ("elastic-training", "on", {"MS_ENABLE_TFT": "{RSC:1}"}),
        ("recover", None, {**MS_ON, "MS_ENABLE_TFT": "{ARF:1}"}),
        ("exit", None, {**MS_ON, "MS_ENABLE_TFT": "{ARF:1}"}),
        ("retry", None, {**MS_ON, "MS_ENABLE_TFT": "{HCCE:1,UCE:1}"}),
        ("dump", None, {**MS_ON, "MS_ENABLE_TFT": "{TTP:1}"}),
        (
            "recover-in-place",
            None,
            {**MS_ON, "ENABLE_RESTART_FAULT_PROCESS": "on", "MS_ENABLE_TFT": "{ARF:1}"},
        ),
        (
            "dump,retry,recover",
            "on",
            {**MS_ON, "MS_ENABLE_TFT": "{ARF:1,HCCE:1,RSC:1,TTP:1,UCE:1}"},
        ),
    ],
)
def test_mindspore_recover_strategy_and_rescheduling(
    strategy: str | None, rescheduling: str | None, expected: dict[str, str]
) -> None:
    assert recover_env("mindspore", strategy, rescheduling) == expected


def test_tensorflow_gets_no_recover_env() -> None:
    assert recover_env("tensorflow", "recover,retry", rescheduling="on") == {}


def test_recover_env_needs_npus_and_yields_to_the_template() -> None:
    body = job("pytorch", {"Master": replica(1, npus=None), "Worker": replica(1, npus=None)})
    with_meta(body, annotations={"recover-strategy": "recover"})
    assert "PROCESS_RECOVER" not in env_of(body, "Worker", 0)
    main = container(2, env=[{"name": "MS_ENABLE_TFT", "value": "{TTP:1}"}])
    body = job("mindspore", {"Worker": replica(1, containers=[main])})
    with_meta(body, labels={"pod-rescheduling": "on"}, annotations={"recover-strategy": "retry"})
    assert env_of(body, "Worker", 0)["MS_ENABLE_TFT"] == "{TTP:1}"


# --- the view with metadata ---------------------------------------------------------------------
def test_parse_job_with_meta() -> None:
    body = job("pytorch")
    body["metadata"]["labels"]["fault-retry-times"] = "4"
    body["metadata"]["annotations"] = {"sp-block": "16", "odd": 7}  # a hand-made object
    view = parse_job_with_meta(body)
    assert isinstance(view, JobViewWithMeta)
    assert view.backoff_limit == 4
    assert dict(view.labels) == {"framework": "pytorch", "fault-retry-times": "4"}
    assert dict(view.annotations) == {"sp-block": "16"}
    plain = parse_job(body)
    assert plain.backoff_limit is None
    assert (view.name, view.uid, view.replicas) == (plain.name, plain.uid, plain.replicas)


def test_parse_job_with_meta_tolerates_odd_metadata() -> None:
    body = job("pytorch")
    body["metadata"]["annotations"] = ["not", "a", "map"]
    view = parse_job_with_meta(body)
    assert dict(view.annotations) == {}
    assert env_of(body, "Worker", 0)["HCCL_LOGIC_SUPERPOD_ID"] == "0"


# --- the memoised NPU request ---------------------------------------------------------------
@pytest.mark.parametrize(
    ("first", "then", "expected"),
    [
        # Equal and hash-equal in Python, not the same JSON: the memo must not mix them up.
        (1, True, 0),
        (True, 1, 1),
        (2, 2.0, 2),
        (2.5, "2", 2),
        ("1", "8", 8),
    ],
)
def test_npus_memo_keeps_each_quantity_apart(first: Any, then: Any, expected: int) -> None:
    clear_npu_cache()
    first_container = {"resources": {"requests": {NPU: first}}}
    then_container = {"resources": {"requests": {NPU: then}}}
    npus_of(first_container)  # warms the memo with the first spelling
    assert npus_of(then_container) == expected
    clear_npu_cache()
    assert npus_of(then_container) == expected  # what a cold computation says


@pytest.mark.parametrize(
    "container",
    [
        {"resources": {"requests": {NPU: [1]}}},  # unhashable: computed without the memo
        {"resources": {"requests": {}, "limits": {NPU: 4, "cpu": {"odd": 1}}}},
        {"resources": "not an object"},
        {"resources": {"requests": "nope", "limits": {NPU: 2}}},
        None,
        {},
    ],
)
def test_npus_memo_agrees_with_the_cold_path(container: Any) -> None:
    cold = _read_npu_request(container)
    assert (npu_resource(container), npus_of(container)) == cold
    assert (npu_resource(container), npus_of(container)) == cold  # the second call memoised

"""Per-framework environment and rank numbering (design section 4, "Environment")."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.job.desired import desired_pod
from ascendjob_controller.job.types import parse_job

from .factories import UID, container, job, replica

IP = "10.96.0.10"


def env_of(body: dict[str, Any], rtype: str, index: int) -> dict[str, Any]:
    pod = desired_pod(parse_job(body), rtype, index, IP, gang=False)
    main = next(c for c in pod["spec"]["containers"] if c["name"] == "ascend")
    out: dict[str, Any] = {}
    for item in main.get("env", []):
        out[item["name"]] = item.get("value", item.get("valueFrom"))
    out["@rank"] = pod["metadata"]["annotations"]["hccl/rankIndex"]
    return out


POD_IP = {"fieldRef": {"fieldPath": "status.podIP"}}


def pt(leader_npus: int | None, workers: int = 2, npus: int = 4) -> dict[str, Any]:
    return job(
        "pytorch", {"Master": replica(1, npus=leader_npus), "Worker": replica(workers, npus=npus)}
    )


def test_pytorch_leader_with_npus_counts_every_replica() -> None:
    body = pt(4)
    master = env_of(body, "Master", 0)
    assert master == {
        "MINDX_TASK_ID": UID,
        "REPLICA_TYPE": "master",
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
        assert worker["REPLICA_TYPE"] == "worker"


def test_pytorch_leader_without_npus_workers_from_zero() -> None:
    body = pt(None)
    assert [env_of(body, "Worker", i)["RANK"] for i in range(2)] == ["0", "1"]
    assert env_of(body, "Worker", 1)["WORLD_SIZE"] == "8"
    master = env_of(body, "Master", 0)
    assert master["@rank"] == "0"
    assert master["LOCAL_WORLD_SIZE"] == "0"
    assert "LOCAL_RANK" not in master


def test_no_npus_on_worker_leaves_framework_vars_out() -> None:
    body = job("pytorch", {"Master": replica(1, npus=None), "Worker": replica(2, npus=None)})
    assert env_of(body, "Worker", 1) == {
        "MINDX_TASK_ID": UID,
        "REPLICA_TYPE": "worker",
        "@rank": "1",
    }


def test_mindspore_env() -> None:
    body = job("mindspore", {"Scheduler": replica(1, npus=None), "Worker": replica(2, npus=8)})
    sched = env_of(body, "Scheduler", 0)
    assert sched["MS_SCHED_HOST"] == POD_IP
    assert sched["MS_ROLE"] == "MS_SCHED"
    assert sched["MS_WORKER_NUM"] == "16"
    worker = env_of(body, "Worker", 1)
    assert worker == {
        "MINDX_TASK_ID": UID,
        "REPLICA_TYPE": "worker",
        "MS_SCHED_HOST": IP,
        "MS_SCHED_PORT": "2222",
        "MS_ROLE": "MS_WORKER",
        "MS_WORKER_NUM": "16",
        "MS_LOCAL_WORKER": "8",
        "MS_NODE_RANK": "1",
        "MS_SERVER_NUM": "0",
        "@rank": "1",
    }


def test_mindspore_scheduler_with_npus_takes_rank_zero() -> None:
    body = job("mindspore", {"Scheduler": replica(1, npus=8), "Worker": replica(2, npus=8)})
    assert env_of(body, "Worker", 0)["MS_NODE_RANK"] == "1"
    assert env_of(body, "Worker", 0)["MS_WORKER_NUM"] == "24"


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
    worker = env_of(body, "Worker", 0)
    assert worker == {
        "MINDX_TASK_ID": UID,
        "REPLICA_TYPE": "worker",
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

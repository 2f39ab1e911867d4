"""Builders for raw job and pod dicts, shaped as the API returns them."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from ascendjob_controller.job.types import format_time

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
UID = "11111111-2222-3333-4444-555555555555"
SAMPLE = (
    Path(__file__).resolve().parents[3] / "manifests/samples/pytorch_multinodes_acjob_910b.yaml"
)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def container(npus: int | None = 2, name: str = "ascend", **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"name": name, "image": "train:latest"}
    if npus is not None:
        body["resources"] = {
            "requests": {"huawei.com/Ascend910": npus},
            "limits": {"huawei.com/Ascend910": npus},
        }
    body.update(extra)
    return body


def replica(
    replicas: int | None = 1,
    policy: str | None = None,
    npus: int | None = 2,
    containers: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {"spec": {"containers": containers or [container(npus)]}},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    if policy is not None:
        spec["restartPolicy"] = policy
    return spec


def job(
    framework: str | None = "pytorch",
    specs: dict[str, Any] | None = None,
    *,
    workers: int = 1,
    policy: str | None = None,
    run_policy: dict[str, Any] | None = None,
    scheduler: str | None = None,
    status: dict[str, Any] | None = None,
    name: str = "job1",
) -> dict[str, Any]:
    labels = {} if framework is None else {"framework": framework}
    leader = {"pytorch": "Master", "mindspore": "Scheduler", "tensorflow": "Chief"}.get(
        framework or "", "Master"
    )
    if specs is None:
        specs = {leader: replica(1, policy), "Worker": replica(workers, policy)}
    body: dict[str, Any] = {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {
            "name": name,
            "namespace": "ns1",
            "uid": UID,
            "labels": labels,
            "creationTimestamp": format_time(T0),
        },
        "spec": {"replicaSpecs": specs},
    }
    if run_policy is not None:
        body["spec"]["runPolicy"] = run_policy
    if scheduler is not None:
        body["spec"]["schedulerName"] = scheduler
    if status is not None:
        body["status"] = status
    return body


def sample_job() -> dict[str, Any]:
    body = yaml.safe_load(SAMPLE.read_text())
    body["metadata"].update(
        {"namespace": "default", "uid": UID, "creationTimestamp": format_time(T0)}
    )
    return body


_counter = [0]


def materialise(body: dict[str, Any], uid: str | None = None) -> dict[str, Any]:
    """What the API server returns after creating `body`: uid, timestamps, Pending."""
    obj = copy.deepcopy(body)
    _counter[0] += 1
    obj["metadata"]["uid"] = uid or f"uid-{obj['metadata']['name']}-{_counter[0]}"
    obj["metadata"]["creationTimestamp"] = format_time(T0)
    if obj["kind"] == "Pod":
        obj["status"] = {"phase": "Pending"}
    if obj["kind"] == "Service":
        obj["spec"]["clusterIP"] = "10.96.0.10"
    return obj


def set_phase(
    pod: dict[str, Any],
    phase: str,
    exit_code: int | None = None,
    restarts: int = 0,
    container_name: str = "ascend",
) -> dict[str, Any]:
    """Play kubelet: a copy of `pod` in `phase`, with the container's state to match."""
    obj = copy.deepcopy(pod)
    state: dict[str, Any]
    if phase == "Running":
        state = {"running": {"startedAt": format_time(T0)}}
    elif phase in ("Succeeded", "Failed") and exit_code is not None:
        state = {"terminated": {"exitCode": exit_code, "reason": "Error"}}
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    status: dict[str, Any] = {"phase": phase}
    if not (phase == "Failed" and exit_code is None):
        status["containerStatuses"] = [
            {"name": container_name, "restartCount": restarts, "state": state}
        ]
    else:
        status["reason"] = "Evicted"
    obj["status"] = status
    return obj


def with_restarts(pod: dict[str, Any], restarts: int, last_code: int = 1) -> dict[str, Any]:
    obj = copy.deepcopy(pod)
    statuses = obj.setdefault("status", {}).setdefault("containerStatuses", [{"name": "ascend"}])
    statuses[0]["restartCount"] = restarts
    statuses[0]["lastState"] = {"terminated": {"exitCode": last_code}}
    return obj

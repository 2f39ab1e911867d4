"""The rank table generator (docs/ranktable.md): formats, rules, and totality.

Every expected table is written out here, or derived with plain arithmetic from the rules
(rank_id = rankIndex * devices + i), never by calling the code under test.
"""

from __future__ import annotations

import copy
import json
import random
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ascendjob_controller.job.desired import desired_pod
from ascendjob_controller.job.env import npus_of
from ascendjob_controller.job.ranktable import (
    clear_annotation_cache,
    configmap_fits,
    dumps,
    is_allocated,
    logical_super_pod,
    member_uids,
    rank_table,
    rank_table_text,
    requests_npus,
    sp_block,
    table_format,
)
from ascendjob_controller.job.types import as_dict, dicts, dig, parse_job
from ascendjob_controller.job.validation import validate

from .factories import container, job, materialise, replica

DEVICES = "ascend.kubectl.kubernetes.io/ascend-910-configuration"
FALLBACK = "ascend.kubectl.kubernetes.io/ascend-npu-configuration"
INITIALIZING = {"status": "initializing"}


# --- builders --------------------------------------------------------------------------------
def devices(count: int, host: int, super_ids: bool = False) -> list[dict[str, str]]:
    """`count` devices of node `host`: ids 0.., IPs 192.168.(100+i).(100+host)."""
    out = []
    for i in range(count):
        device = {"device_id": str(i), "device_ip": f"192.168.{100 + i}.{100 + host}"}
        if super_ids:
            device["super_device_id"] = str(1000 * host + i)
        out.append(device)
    return out


def annotation(host: int, count: int, server_id: str | None = None, **extra: Any) -> dict[str, Any]:
    """What the device plugin writes for a pod on node 10.0.0.(10+host)."""
    node = f"10.0.0.{10 + host}"
    body: dict[str, Any] = {
        "pod_name": f"pod-{host}",
        "server_id": server_id or node,
        "host_ip": node,
        "devices": devices(count, host),
    }
    body.update(extra)
    return body


def pod(
    name: str,
    rank: int | None,
    npus: int | None = 2,
    info: dict[str, Any] | str | None = None,
    pod_ip: str | None = None,
    host_ip: str | None = None,
    key: str = DEVICES,
    resource: str = "huawei.com/Ascend910",
) -> dict[str, Any]:
    """A Running pod; an NPU pod carries `info` (a dict is JSON-encoded) under `key`."""
    annotations: dict[str, Any] = {}
    if rank is not None:
        annotations["hccl/rankIndex"] = str(rank)
    if info is not None:
        annotations[key] = info if isinstance(info, str) else json.dumps(info)
    main: dict[str, Any] = {"name": "ascend", "image": "train"}
    if npus is not None:
        main["resources"] = {"requests": {resource: npus}, "limits": {resource: npus}}
    status: dict[str, Any] = {"phase": "Running"}
    if pod_ip is not None:
        status["podIP"] = pod_ip
    if host_ip is not None:
        status["hostIP"] = host_ip
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns1",
            "uid": f"uid-{name}",
            "annotations": annotations,
        },
        "spec": {"containers": [main]},
        "status": status,
    }


def npu_pod(name: str, rank: int, host: int, count: int = 2, **kw: Any) -> dict[str, Any]:
    """An allocated NPU pod with rankIndex `rank` on node `host`, podIP 172.16.(host).5."""
    info = kw.pop("info", None) or annotation(host, count)
    return pod(
        name, rank, count, info, pod_ip=f"172.16.{host}.5", host_ip=f"10.0.0.{10 + host}", **kw
    )


def pytorch(
    workers: int, npus: int = 2, master_npus: int | None = 2, **meta: Any
) -> dict[str, Any]:
    body = job(
        "pytorch",
        {"Master": replica(1, npus=master_npus), "Worker": replica(workers, npus=npus)},
    )
    body["metadata"].update(meta)
    return body


def two_server_job() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The doc's v1.0 example: Master and one Worker, two devices each, on two nodes."""
    body = pytorch(1)
    master = npu_pod("job1-master-0", 0, 1)
    master["status"]["podIP"] = "172.16.3.5"
    worker = npu_pod("job1-worker-0", 1, 2)
    worker["status"]["podIP"] = "172.16.4.7"
    return body, [master, worker]


DOC_V1_0 = {
    "status": "completed",
    "server_list": [
        {
            "device": [
                {"device_id": "0", "device_ip": "192.168.100.101", "rank_id": "0"},
                {"device_id": "1", "device_ip": "192.168.101.101", "rank_id": "1"},
            ],
            "server_id": "10.0.0.11",
            "host_ip": "10.0.0.11",
            "container_ip": "172.16.3.5",
        },
        {
            "device": [
                {"device_id": "0", "device_ip": "192.168.100.102", "rank_id": "2"},
                {"device_id": "1", "device_ip": "192.168.101.102", "rank_id": "3"},
            ],
            "server_id": "10.0.0.12",
            "host_ip": "10.0.0.12",
            "container_ip": "172.16.4.7",
        },
    ],
    "server_count": "2",
    "version": "1.0",
}


# --- v1.0 --------------------------------------------------------------------------------------
def test_the_docs_v1_0_example() -> None:
    body, pods = two_server_job()
    assert rank_table(body, pods) == DOC_V1_0
    assert rank_table(body, list(reversed(pods))) == DOC_V1_0


def test_serialisation_is_compact_and_keeps_the_built_order() -> None:
    body, pods = two_server_job()
    text = dumps(rank_table(body, pods))
    assert text.startswith('{"status":"completed","server_list":[{"device":[{"device_id":"0",')
    assert text.endswith('"container_ip":"172.16.4.7"}],"server_count":"2","version":"1.0"}')
    assert " " not in text and json.loads(text) == DOC_V1_0
    assert dumps(rank_table(body, pods[:1])) == '{"status":"initializing"}'


def test_sixteen_servers_of_eight_devices_in_any_order() -> None:
    body = pytorch(15, npus=8, master_npus=8)
    pods = [npu_pod("job1-master-0", 0, 0, 8)]
    pods += [npu_pod(f"job1-worker-{w}", w + 1, w + 1, 8) for w in range(15)]
    random.Random(7).shuffle(pods)
    expected_servers = [
        {
            "device": [
                {
                    "device_id": str(i),
                    "device_ip": f"192.168.{100 + i}.{100 + s}",
                    "rank_id": str(8 * s + i),
                }
                for i in range(8)
            ],
            "server_id": f"10.0.0.{10 + s}",
            "host_ip": f"10.0.0.{10 + s}",
            "container_ip": f"172.16.{s}.5",
        }
        for s in range(16)
    ]
    table = rank_table(body, pods)
    assert table == {
        "status": "completed",
        "server_list": expected_servers,
        "server_count": "16",
        "version": "1.0",
    }
    assert [d["rank_id"] for s in table["server_list"] for d in s["device"]] == [
        str(r) for r in range(128)
    ]


def test_servers_are_ordered_by_their_first_rank_numerically() -> None:
    body = pytorch(11, master_npus=None)
    master = pod("job1-master-0", 0, None, pod_ip="172.16.99.5")
    workers = [npu_pod(f"job1-worker-{r}", r, r) for r in (10, 2, 0, 1, 9, 3, 4, 5, 6, 7, 8)]
    table = rank_table(body, [*workers, master])
    firsts = [server["device"][0]["rank_id"] for server in table["server_list"]]
    assert firsts == ["0", "2", "4", "6", "8", "10", "12", "14", "16", "18", "20"]


def _built_pods(body: dict[str, Any], master_npus: bool) -> list[dict[str, Any]]:
    """The controller's own pod bodies (so rankIndex is whatever desired.py annotates), then
    allocated by hand: pod k on node k with podIP 172.16.k.5; NPU pods get two devices."""
    view = parse_job(body)
    replicas = [("Master", 0, master_npus), ("Worker", 0, True), ("Worker", 1, True)]
    out = []
    for host, (rtype, index, npus) in enumerate(replicas):
        obj = materialise(desired_pod(view, rtype, index, "10.96.0.10", gang=False))
        obj["status"] = {
            "phase": "Running",
            "podIP": f"172.16.{host}.5",
            "hostIP": f"10.0.0.{10 + host}",
        }
        if npus:
            obj["metadata"]["annotations"][DEVICES] = json.dumps(annotation(host, 2))
        out.append(obj)
    return out


def test_a_master_with_npus_takes_rank_zero_and_shifts_the_workers() -> None:
    body = pytorch(2, master_npus=2)
    table = rank_table(body, _built_pods(body, master_npus=True))
    ranks = [(s["container_ip"], [d["rank_id"] for d in s["device"]]) for s in table["server_list"]]
    assert ranks == [
        ("172.16.0.5", ["0", "1"]),
        ("172.16.1.5", ["2", "3"]),
        ("172.16.2.5", ["4", "5"]),
    ]


def test_a_master_without_npus_is_not_a_server_but_must_have_an_ip() -> None:
    body = pytorch(2, master_npus=None)
    pods = _built_pods(body, master_npus=False)
    table = rank_table(body, pods)
    ranks = [(s["container_ip"], [d["rank_id"] for d in s["device"]]) for s in table["server_list"]]
    assert ranks == [("172.16.1.5", ["0", "1"]), ("172.16.2.5", ["2", "3"])]
    assert table["server_count"] == "2"
    del pods[0]["status"]["podIP"]
    assert rank_table(body, pods) == INITIALIZING


def test_a_mindspore_scheduler_without_npus() -> None:
    body = job("mindspore", {"Scheduler": replica(1, npus=None), "Worker": replica(2, npus=2)})
    scheduler = pod("job1-scheduler-0", 0, None)
    workers = [npu_pod("job1-worker-0", 0, 1), npu_pod("job1-worker-1", 1, 2)]
    assert rank_table(body, [scheduler, *workers]) == INITIALIZING  # no podIP yet
    scheduler["status"]["podIP"] = "172.16.0.9"
    table = rank_table(body, [scheduler, *workers])
    assert table["server_count"] == "2"
    assert [s["container_ip"] for s in table["server_list"]] == ["172.16.1.5", "172.16.2.5"]
    assert [d["rank_id"] for d in table["server_list"][1]["device"]] == ["2", "3"]


# --- server_id -------------------------------------------------------------------------------
def test_every_pod_on_its_own_node_uses_the_host_ip_as_server_id() -> None:
    body = pytorch(1)
    pods = [
        npu_pod("job1-master-0", 0, 1, info=annotation(1, 2, server_id="node-a")),
        npu_pod("job1-worker-0", 1, 2, info=annotation(2, 2, server_id="node-b")),
    ]
    table = rank_table(body, pods)
    assert [(s["server_id"], s["host_ip"]) for s in table["server_list"]] == [
        ("10.0.0.11", "10.0.0.11"),
        ("10.0.0.12", "10.0.0.12"),
    ]


def test_two_pods_on_one_node_keep_the_annotations_server_id() -> None:
    body = pytorch(2)
    shared = annotation(1, 2, server_id="node-a")
    second = annotation(1, 2, server_id="node-a-2")
    pods = [
        npu_pod("job1-master-0", 0, 1, info=shared),
        npu_pod("job1-worker-0", 1, 1, info=second),
        npu_pod("job1-worker-1", 2, 2, info=annotation(2, 2, server_id="node-b")),
    ]
    table = rank_table(body, pods)
    assert [(s["server_id"], s["host_ip"]) for s in table["server_list"]] == [
        ("node-a", "10.0.0.11"),
        ("node-a-2", "10.0.0.11"),
        ("node-b", "10.0.0.12"),
    ]


def test_host_ip_falls_back_to_the_pods_status() -> None:
    body, pods = two_server_job()
    info = annotation(1, 2)
    del info["host_ip"]
    pods[0] = npu_pod("job1-master-0", 0, 1, info=info)
    pods[0]["status"]["hostIP"] = "10.9.9.9"
    assert rank_table(body, pods)["server_list"][0]["host_ip"] == "10.9.9.9"


def test_the_fallback_annotation_key_and_the_910_key_winning() -> None:
    body, pods = two_server_job()
    moved = pods[1]["metadata"]["annotations"].pop(DEVICES)
    pods[1]["metadata"]["annotations"][FALLBACK] = moved
    assert rank_table(body, pods) == DOC_V1_0
    pods[1]["metadata"]["annotations"][DEVICES] = "not json"
    assert rank_table(body, pods) == INITIALIZING


# --- not allocated yet ---------------------------------------------------------------------------
def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set a field of the Worker's annotation (dotted path, ints index lists)."""

    def mutate(target: dict[str, Any]) -> None:
        info = json.loads(target["metadata"]["annotations"][DEVICES])
        *parents, last = path.split(".")
        node: Any = info
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value
        target["metadata"]["annotations"][DEVICES] = json.dumps(info)

    return mutate


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(target: dict[str, Any]) -> None:
        info = json.loads(target["metadata"]["annotations"][DEVICES])
        *parents, last = path.split(".")
        node: Any = info
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]
        target["metadata"]["annotations"][DEVICES] = json.dumps(info)

    return mutate


def _raw(value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(target: dict[str, Any]) -> None:
        target["metadata"]["annotations"][DEVICES] = value

    return mutate


def _meta(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(target: dict[str, Any]) -> None:
        section, key = field.split(".")
        if value is None:
            target[section].pop(key, None)
        else:
            target[section][key] = value

    return mutate


def _rank(value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(target: dict[str, Any]) -> None:
        if value is None:
            del target["metadata"]["annotations"]["hccl/rankIndex"]
        else:
            target["metadata"]["annotations"]["hccl/rankIndex"] = value

    return mutate


def _no_host(target: dict[str, Any]) -> None:
    _drop("host_ip")(target)
    del target["status"]["hostIP"]


NOT_ALLOCATED: dict[str, Callable[[dict[str, Any]], None]] = {
    "no annotation": lambda p: p["metadata"]["annotations"].pop(DEVICES),
    "bad json": _raw("{not json"),
    "truncated json": _raw('{"devices": [{"device_id": "0"'),
    "json list": _raw("[]"),
    "json null": _raw("null"),
    "json number": _raw("1"),
    "json string": _raw('"devices"'),
    "empty string": _raw(""),
    "not a string": _raw(7),
    "annotation is a dict": _raw({"devices": []}),
    "deep nesting": _raw("[" * 100_000),
    "huge number": _raw('{"devices": ' + "9" * 5000 + "}"),
    "devices missing": _drop("devices"),
    "devices a dict": _set("devices", {"0": {"device_id": "0"}}),
    "devices a string": _set("devices", "0,1"),
    "devices empty": _set("devices", []),
    "devices too many": _set("devices", devices(2, 2) * 600),
    "device not a dict": _set("devices.0", "0"),
    "device_id missing": _drop("devices.0.device_id"),
    "device_id a number": _set("devices.0.device_id", 0),
    "device_id empty": _set("devices.0.device_id", ""),
    "device_ip missing": _drop("devices.1.device_ip"),
    "device_ip null": _set("devices.1.device_ip", None),
    "device_ip -1 in v1.0": _set("devices.1.device_ip", "-1"),
    "server_id missing": _drop("server_id"),
    "server_id a number": _set("server_id", 12),
    "server_id empty": _set("server_id", ""),
    "no host ip anywhere": _no_host,
    "no podIP": _meta("status.podIP", None),
    "podIP empty": _meta("status.podIP", ""),
    "podIP not a string": _meta("status.podIP", 17216),
    "rankIndex missing": _rank(None),
    "rankIndex text": _rank("one"),
    "rankIndex negative": _rank("-1"),
    "rankIndex fractional": _rank("1.0"),
    "rankIndex spaced": _rank(" 1"),
    "rankIndex a number": _rank(1),
    "rankIndex huge": _rank("9" * 40),
    "being deleted": _meta("metadata.deletionTimestamp", "2026-01-01T12:00:00Z"),
    "failed": _meta("status.phase", "Failed"),
    "annotations not a dict": _meta("metadata.annotations", ["x"]),
    "status not a dict": lambda p: p.__setitem__("status", "Running"),
}


@pytest.mark.parametrize("case", sorted(NOT_ALLOCATED))
def test_a_worker_not_allocated_yet_keeps_the_table_initializing(case: str) -> None:
    body, pods = two_server_job()
    NOT_ALLOCATED[case](pods[1])
    assert is_allocated(pods[1]) is False
    assert rank_table(body, pods) == INITIALIZING


def test_v1_0_reads_only_the_fields_it_writes() -> None:
    body, pods = two_server_job()
    _set("devices.0.super_device_id", 5)(pods[1])
    _set("devices.0.level_list", {"level": "x"})(pods[1])
    _set("super_pod_id", "not an int")(pods[1])
    assert rank_table(body, pods) == DOC_V1_0


@pytest.mark.parametrize(
    ("version", "mutate"),
    [
        pytest.param("1.2", _set("devices.0.super_device_id", 5), id="v1.2 super_device_id number"),
        pytest.param("1.2", _drop("devices.0.device_ip"), id="v1.2 device_ip missing"),
        pytest.param("2.0", _set("devices.0.device_id", "npu0"), id="v2.0 device_id not a number"),
        pytest.param("2.0", _set("devices.0.device_id", "-1"), id="v2.0 device_id negative"),
        pytest.param("2.0", _set("devices.0.level_list", {"level": 0}), id="v2.0 levels a dict"),
        pytest.param("2.0", _set("devices.0.level_list.0", "0"), id="v2.0 level not a dict"),
        pytest.param("2.0", _drop("devices.0.level_list.0.level"), id="v2.0 level missing"),
        pytest.param("2.0", _set("devices.0.level_list.0.level", -1), id="v2.0 level negative"),
        pytest.param("2.0", _set("devices.0.level_list.0.level", True), id="v2.0 level a bool"),
        pytest.param("2.0", _set("devices.0.level_list.0.info", []), id="v2.0 info a list"),
        pytest.param(
            "2.0", _set("devices.0.level_list.0.info.ROCE", 1), id="v2.0 element a number"
        ),
        pytest.param("2.0", _raw("{}"), id="v2.0 empty annotation"),
    ],
)
def test_format_specific_fields_not_allocated(
    version: str, mutate: Callable[[dict[str, Any]], None]
) -> None:
    body, pods = _super_pod_job(**{"sp-block": "4"}) if version == "1.2" else _v2_pods("ROCE")
    mutate(pods[1])
    assert is_allocated(pods[1], version) is False
    assert rank_table(body, pods) == INITIALIZING


def test_v2_0_needs_no_server_id_host_ip_or_device_ip() -> None:
    body, pods = _v2_pods("ROCE")
    for target in pods[1:]:
        _drop("server_id")(target)
        _drop("host_ip")(target)
        _drop("devices.0.device_ip")(target)
        del target["status"]["hostIP"]
    assert rank_table(body, pods)["rank_count"] == 4


@pytest.mark.parametrize(
    "pods_of",
    [
        pytest.param(lambda pods: pods[:1], id="a pod missing"),
        pytest.param(lambda pods: [], id="no pods"),
        pytest.param(lambda pods: [*pods, npu_pod("job1-worker-9", 2, 3)], id="a pod too many"),
    ],
)
def test_the_pod_count_must_equal_the_replica_total(
    pods_of: Callable[[list[Any]], list[Any]],
) -> None:
    body, pods = two_server_job()
    assert rank_table(body, pods_of(pods)) == INITIALIZING


def test_entries_that_are_not_pods_are_ignored() -> None:
    body, pods = two_server_job()
    assert rank_table(body, [*pods, "not a pod", None, []]) == DOC_V1_0


def test_a_replacement_pod_being_deleted_is_ignored() -> None:
    body, pods = two_server_job()
    old = copy.deepcopy(pods[1])
    old["metadata"]["uid"] = "uid-old"
    old["metadata"]["deletionTimestamp"] = "2026-01-01T12:00:00Z"
    old["status"]["podIP"] = "172.16.4.1"
    assert rank_table(body, [old, *pods]) == DOC_V1_0
    assert member_uids([old, *pods]) == {"uid-job1-master-0", "uid-job1-worker-0"}


def test_an_invalid_job_is_initializing() -> None:
    body, pods = two_server_job()
    body["metadata"]["labels"]["framework"] = "caffe"
    assert rank_table(body, pods) == INITIALIZING


def test_inputs_are_not_mutated() -> None:
    body, pods = two_server_job()
    before = copy.deepcopy((body, pods))
    rank_table(body, pods)
    assert (body, pods) == before


def test_a_pod_without_npus_needs_only_an_ip() -> None:
    plain = pod("p", None, None, pod_ip="172.16.0.1")
    assert is_allocated(plain) is True
    del plain["status"]["podIP"]
    assert is_allocated(plain) is False


def _resources(**sections: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "ascend", "resources": sections}]}}


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        pytest.param(_resources(requests={"huawei.com/Ascend910": "8"}), True, id="910 string"),
        pytest.param(_resources(limits={"huawei.com/Ascend910": 8}), True, id="910 in limits"),
        pytest.param(_resources(requests={"huawei.com/npu": "2"}), True, id="npu"),
        pytest.param(_resources(requests={"huawei.com/Ascend310P": 1}), True, id="other type"),
        pytest.param(_resources(requests={"huawei.com/Ascend910": 0}), False, id="zero"),
        pytest.param(_resources(requests={"huawei.com/Ascend910": "1.5"}), False, id="fraction"),
        pytest.param(_resources(requests={"huawei.com/Ascend910": [8]}), False, id="a list"),
        pytest.param(_resources(requests={"huawei.com/Ascend910": {"n": 8}}), False, id="a dict"),
        pytest.param(_resources(requests={"cpu": "8", "memory": "1Gi"}), False, id="cpu only"),
        pytest.param(
            _resources(requests={"cpu": "1"}, limits={"huawei.com/Ascend910": "4"}),
            True,
            id="npus in limits only",
        ),
        pytest.param(_resources(requests=["huawei.com/npu"]), False, id="requests a list"),
        pytest.param({"spec": {"containers": "ascend"}}, False, id="containers a string"),
        pytest.param({"spec": None}, False, id="no spec"),
    ],
)
def test_which_pods_request_npus(target: dict[str, Any], expected: bool) -> None:
    assert requests_npus(target) is expected
    assert requests_npus(copy.deepcopy(target)) is expected  # the memoised answer agrees
    target["status"] = {"podIP": "172.16.0.1"}
    # without a device annotation: allocated exactly when it requests no NPUs
    assert is_allocated(target) is not expected


# --- formats ----------------------------------------------------------------------------------
def _with_selector(value: str) -> dict[str, Any]:
    body = pytorch(1)
    body["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"] = {
        "accelerator-type": value
    }
    return body


def _generic_npu(section: str = "requests", **annotations: str) -> dict[str, Any]:
    worker = replica(1, containers=[container(None, resources={section: {"huawei.com/npu": 8}})])
    body = job("pytorch", {"Master": replica(1, npus=None), "Worker": worker})
    body["metadata"]["annotations"] = dict(annotations)
    return body


@pytest.mark.parametrize(
    ("body", "version"),
    [
        pytest.param(pytorch(1), "1.0", id="default"),
        pytest.param(
            pytorch(1, annotations={"huawei.com/schedule_policy": "chip2-node16-sp"}),
            "1.2",
            id="chip2-node16-sp",
        ),
        pytest.param(
            pytorch(1, annotations={"huawei.com/schedule_policy": "chip2-node8-sp"}),
            "1.2",
            id="chip2-node8-sp",
        ),
        pytest.param(
            pytorch(1, annotations={"huawei.com/schedule_policy": "multilevel"}),
            "1.2",
            id="multilevel",
        ),
        pytest.param(
            pytorch(1, annotations={"huawei.com/schedule_policy": "chip4-node8"}),
            "1.0",
            id="other policy",
        ),
        pytest.param(pytorch(1, annotations={"sp-block": "32"}), "1.2", id="sp-block"),
        pytest.param(pytorch(1, annotations={"sp-block": "oops"}), "1.2", id="sp-block unreadable"),
        pytest.param(_with_selector("module-a3-16-super-pod"), "1.2", id="a3-16 selector"),
        pytest.param(_with_selector("module-a3-8-super-pod"), "1.2", id="a3-8 selector"),
        pytest.param(_with_selector("card-910b-2"), "1.0", id="other selector"),
        pytest.param(_generic_npu(), "2.0", id="huawei.com/npu"),
        pytest.param(_generic_npu("limits"), "2.0", id="huawei.com/npu in limits"),
        pytest.param(_generic_npu(**{"sp-block": "16"}), "2.0", id="npu beats sp-block"),
        pytest.param(
            _generic_npu(**{"huawei.com/schedule_policy": "multilevel"}),
            "2.0",
            id="multilevel with npu",
        ),
        pytest.param({"metadata": None, "spec": {"replicaSpecs": ["x"]}}, "1.0", id="garbage job"),
    ],
)
def test_table_format(body: dict[str, Any], version: str) -> None:
    assert table_format(body) == version


# --- v1.2 -----------------------------------------------------------------------------------------
def _super_pod_job(**annotations: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Master + 2 Workers with 2 devices each, super_device_ids 1000*node + i."""
    body = pytorch(2, annotations=dict(annotations))
    pods = []
    for rank in range(3):
        info = annotation(rank + 1, 2, super_pod_id=0)
        info["devices"] = devices(2, rank + 1, super_ids=True)
        name = "job1-master-0" if rank == 0 else f"job1-worker-{rank - 1}"
        pods.append(npu_pod(name, rank, rank + 1, info=info))
    return body, pods


def test_v1_2_adds_super_device_ids_and_logical_super_pods() -> None:
    body, pods = _super_pod_job(**{"sp-block": "4"})  # 4 chips / 2 per node: 2 nodes each
    server = [
        {
            "device": [
                {
                    "device_id": str(i),
                    "device_ip": f"192.168.{100 + i}.{101 + s}",
                    "super_device_id": str(1000 * (s + 1) + i),
                    "rank_id": str(2 * s + i),
                }
                for i in range(2)
            ],
            "server_id": f"10.0.0.{11 + s}",
            "host_ip": f"10.0.0.{11 + s}",
            "container_ip": f"172.16.{s + 1}.5",
        }
        for s in range(3)
    ]
    assert rank_table(body, pods) == {
        "status": "completed",
        "server_list": server,
        "server_count": "3",
        "version": "1.2",
        "super_pod_list": [
            {
                "super_pod_id": "0",
                "server_list": [{"server_id": "10.0.0.11"}, {"server_id": "10.0.0.12"}],
            },
            {"super_pod_id": "1", "server_list": [{"server_id": "10.0.0.13"}]},
        ],
    }


@pytest.mark.parametrize(
    ("annotations", "groups"),
    [
        pytest.param(
            {"sp-block": "2"}, [["10.0.0.11"], ["10.0.0.12"], ["10.0.0.13"]], id="one node each"
        ),
        pytest.param(
            {"sp-block": "1"}, [["10.0.0.11"], ["10.0.0.12"], ["10.0.0.13"]], id="block below chips"
        ),
        pytest.param(
            {"sp-block": "64"}, [["10.0.0.11", "10.0.0.12", "10.0.0.13"]], id="all in one"
        ),
        pytest.param({"sp-block": "x"}, [["10.0.0.11", "10.0.0.12", "10.0.0.13"]], id="unreadable"),
        pytest.param({"sp-block": "0"}, [["10.0.0.11", "10.0.0.12", "10.0.0.13"]], id="zero"),
        pytest.param(
            {"huawei.com/schedule_policy": "chip2-node16-sp"},
            [["10.0.0.11", "10.0.0.12", "10.0.0.13"]],
            id="no sp-block",
        ),
    ],
)
def test_v1_2_super_pod_grouping(annotations: dict[str, str], groups: list[list[str]]) -> None:
    body, pods = _super_pod_job(**annotations)
    table = rank_table(body, pods)
    assert table["super_pod_list"] == [
        {"super_pod_id": str(i), "server_list": [{"server_id": s} for s in group]}
        for i, group in enumerate(groups)
    ]


def test_v1_2_accepts_a_device_ip_of_minus_one_and_no_super_device_id() -> None:
    body, pods = _super_pod_job(**{"sp-block": "4"})
    _set("devices.0.device_ip", "-1")(pods[1])
    _drop("devices.1.super_device_id")(pods[1])
    device = rank_table(body, pods)["server_list"][1]["device"]
    assert device == [
        {"device_id": "0", "device_ip": "-1", "super_device_id": "2000", "rank_id": "2"},
        {"device_id": "1", "device_ip": "192.168.101.102", "rank_id": "3"},
    ]


# --- v2.0 -----------------------------------------------------------------------------------------
def _element(layer: int, port: str) -> dict[str, Any]:
    return {
        "net_layer": layer,
        "net_instance_id": f"sp-{port}",
        "net_type": "CLOS",
        "net_attr": "",
        "rank_addr_list": [
            {"addr_type": "IP", "addr": f"{port}-{layer}", "ports": [], "plane_id": "0"}
        ],
    }


def _levels(*ports: str) -> list[dict[str, Any]]:
    """Levels 0..3, each offering an element for every port type in `ports`."""
    return [{"level": level, "info": {p: _element(level, p) for p in ports}} for level in range(4)]


def _v2_pods(*ports: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    npus = {"huawei.com/npu": 2}  # limits too: kube-apiserver requires them for extended resources
    worker = replica(2, containers=[container(None, resources={"requests": npus, "limits": npus})])
    body = job("pytorch", {"Master": replica(1, npus=None), "Worker": worker})
    master = pod("job1-master-0", 0, None, pod_ip="172.16.0.5")
    pods: list[dict[str, Any]] = [master]
    for rank in (1, 0):  # out of order on purpose
        info = annotation(rank + 1, 2)
        for device in info["devices"]:
            device["device_id"] = str(int(device["device_id"]) + 4)
            device["level_list"] = _levels(*ports)
        pods.append(
            npu_pod(f"job1-worker-{rank}", rank, rank + 1, info=info, resource="huawei.com/npu")
        )
    return body, pods


def test_v2_0_shape_with_roce() -> None:
    body, pods = _v2_pods("UBOE", "ROCE")
    levels = [_element(0, "ROCE"), _element(1, "ROCE"), _element(3, "ROCE")]
    assert rank_table(body, pods) == {
        "status": "completed",
        "version": "2.0",
        "rank_count": 4,
        "rank_list": [
            {"rank_id": 0, "local_id": 4, "device_id": 4, "level_list": levels},
            {"rank_id": 1, "local_id": 5, "device_id": 5, "level_list": levels},
            {"rank_id": 2, "local_id": 4, "device_id": 4, "level_list": levels},
            {"rank_id": 3, "local_id": 5, "device_id": 5, "level_list": levels},
        ],
    }


@pytest.mark.parametrize(
    ("ports", "expected"),
    [
        pytest.param(("UBOE", "UBG"), [(0, "UBG"), (1, "UBG"), (2, "UBOE")], id="uboe"),
        pytest.param(("UBG",), [(0, "UBG"), (1, "UBG"), (2, "UBG")], id="ubg"),
        pytest.param(("OTHER",), [(0, "OTHER"), (1, "OTHER")], id="unknown port"),
        pytest.param((), [], id="no levels"),
    ],
)
def test_v2_0_level_selection(ports: tuple[str, ...], expected: list[tuple[int, str]]) -> None:
    body, pods = _v2_pods(*ports)
    ranks = rank_table(body, pods)["rank_list"]
    assert ranks[0]["level_list"] == [_element(layer, port) for layer, port in expected]


def test_v2_0_without_level_lists_and_device_ids_that_are_not_numbers() -> None:
    body, pods = _v2_pods()
    for target in pods[1:]:
        for i in range(2):
            _drop(f"devices.{i}.level_list")(target)
    assert [r["level_list"] for r in rank_table(body, pods)["rank_list"]] == [[], [], [], []]
    _set("devices.0.device_id", "npu0")(pods[1])
    assert rank_table(body, pods) == INITIALIZING


def test_a_long_annotation_is_read_too() -> None:
    body, pods = two_server_job()
    _set("padding", "x" * 100_000)(pods[1])  # longer than what the memo keeps
    assert rank_table(body, pods) == DOC_V1_0
    assert rank_table(body, pods) == DOC_V1_0


def test_tables_share_nothing_with_the_parse_cache() -> None:
    body, pods = _v2_pods("ROCE")
    first = rank_table(body, pods)
    first["rank_list"][0]["level_list"][0]["rank_addr_list"].clear()
    first["rank_list"][0]["level_list"].clear()
    second = rank_table(body, pods)
    assert second["rank_list"][0]["level_list"][0] == _element(0, "ROCE")
    clear_annotation_cache()
    assert rank_table(body, pods) == second


# --- totality ---------------------------------------------------------------------------------
JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.sampled_from(["-1", "0", "1", "", "ROCE", "UBOE", "10.0.0.1"]),
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.one_of(
                st.sampled_from(
                    ["devices", "device_id", "device_ip", "level", "info", "server_id"]
                ),
                st.text(max_size=4),
            ),
            inner,
            max_size=3,
        )
    ),
    max_leaves=10,
)
FIELDS = [
    "devices",
    "server_id",
    "host_ip",
    "devices.0",
    "devices.0.device_id",
    "devices.0.device_ip",
    "devices.0.super_device_id",
    "devices.0.level_list",
    "devices.1.level_list",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    version=st.sampled_from(["1.0", "1.2", "2.0"]),
    how=st.sampled_from(["field", "whole", "text", "rank"]),
)
def test_garbage_annotations_never_raise(data: st.DataObject, version: str, how: str) -> None:
    body, pods = {
        "1.0": two_server_job,
        "1.2": lambda: _super_pod_job(**{"sp-block": "4"}),
        "2.0": lambda: _v2_pods("ROCE"),
    }[version]()
    target = pods[data.draw(st.integers(0, len(pods) - 1))]
    garbage = data.draw(JSON)
    if how == "field" and DEVICES in target["metadata"]["annotations"]:
        _set(data.draw(st.sampled_from(FIELDS)), garbage)(target)
    elif how == "whole":
        target["metadata"]["annotations"][DEVICES] = json.dumps(garbage)
    elif how == "text":
        target["metadata"]["annotations"][DEVICES] = data.draw(st.text(max_size=40))
    else:
        target["metadata"]["annotations"]["hccl/rankIndex"] = garbage
    table = rank_table(body, pods)
    event(f"{version} {how} {table['status']}")
    assert table["status"] in ("initializing", "completed")
    assert json.loads(dumps(table)) == table


# --- the reference implementation ------------------------------------------------------------
# The rules above written the plain way, as the generator was first written: every annotation
# parsed afresh, dicts built field by field, no memo. Whatever the module does to be fast, it
# must give exactly this table and exactly its text (the text also tells 1 from "1" and keeps
# the key order). Format triggers, validation and super-pod arithmetic are not restated.
def _ref_int(value: Any) -> int | None:
    return int(value) if isinstance(value, str) and re.fullmatch("[0-9]{1,9}", value) else None


def _ref_text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _ref_live(target: Any) -> bool:
    if not isinstance(target, dict) or dig(target, "metadata", "deletionTimestamp"):
        return False
    return dig(target, "status", "phase") != "Failed"


def _ref_requests_npus(target: Any) -> bool:
    return any(npus_of(c) > 0 for c in dicts(dig(target, "spec", "containers")))


def _ref_levels(value: Any) -> tuple[list[tuple[int, str, Any]], set[str]] | None:
    if value is None:
        return [], set()
    if not isinstance(value, list):
        return None
    kept: dict[int, list[tuple[int, str, Any]]] = {}
    ports: set[str] = set()
    for item in value:
        level, info = dig(item, "level"), dig(item, "info")
        if type(level) is not int or level < 0 or not isinstance(info, dict):
            return None
        if any(not isinstance(element, dict) for element in info.values()):
            return None
        ports |= set(info)
        if level in kept or level > 3:
            continue
        if level < 2:
            names = sorted(info)[:1]
        else:
            names = sorted(({"UBOE", "UBG"} if level == 2 else {"ROCE"}) & set(info))
        kept[level] = [(level, name, info[name]) for name in names]
    return [entry for level in sorted(kept) for entry in kept[level]], ports


def _ref_device(raw: Any, version: str) -> dict[str, Any] | None:
    if not isinstance(raw, dict) or _ref_text(raw.get("device_id")) is None:
        return None
    if version == "2.0":
        levels = _ref_levels(raw.get("level_list"))
        if levels is None or _ref_int(raw["device_id"]) is None:
            return None
        return {"id": int(raw["device_id"]), "levels": levels[0], "ports": levels[1]}
    device = {"device_id": raw["device_id"], "device_ip": raw.get("device_ip")}
    if not isinstance(device["device_ip"], str):
        return None
    if version == "1.0" and device["device_ip"] == "-1":
        return None
    super_id = raw.get("super_device_id") if version == "1.2" else None
    if super_id is not None and not isinstance(super_id, str):
        return None
    if super_id is not None:
        device["super_device_id"] = super_id
    return device


def _ref_server(target: Any, version: str) -> dict[str, Any] | None:
    notes = as_dict(dig(target, "metadata", "annotations"))
    container_ip = _ref_text(dig(target, "status", "podIP"))
    rank = _ref_int(notes.get("hccl/rankIndex"))
    raw = notes[DEVICES] if notes.get(DEVICES) is not None else notes.get(FALLBACK)
    if container_ip is None or rank is None or rank > 20000 or not isinstance(raw, str):
        return None
    try:
        info = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    found = info.get("devices") if isinstance(info, dict) else None
    if not isinstance(found, list) or not 0 < len(found) <= 1024:
        return None
    devices = [_ref_device(item, version) for item in found]
    if None in devices:
        return None
    host_ip = _ref_text(info.get("host_ip")) or _ref_text(dig(target, "status", "hostIP"))
    server_id = _ref_text(info.get("server_id"))
    if version == "2.0":
        host_ip, server_id = host_ip or "", server_id or ""
    if host_ip is None or server_id is None:
        return None
    return {
        "rank": rank,
        "server_id": server_id,
        "host_ip": host_ip,
        "ip": container_ip,
        "devices": devices,
    }


def reference_table(body: dict[str, Any], pods: list[Any]) -> dict[str, Any]:
    version = table_format(body)
    if validate(body):
        return {"status": "initializing"}
    servers, ready = [], 0
    for target in filter(_ref_live, pods):
        if not _ref_requests_npus(target):
            ready += _ref_text(dig(target, "status", "podIP")) is not None
        elif (server := _ref_server(target, version)) is not None:
            servers.append(server)
            ready += 1
    live = sum(1 for target in pods if _ref_live(target))
    if ready != live or ready != parse_job(body).total_replicas:
        return {"status": "initializing"}
    servers.sort(key=lambda s: (s["rank"] * len(s["devices"]), s["server_id"], s["ip"]))
    if version == "2.0":
        return _ref_v2(servers)
    return _ref_v1(servers, version, sp_block(body))


def _ref_v1(servers: list[dict[str, Any]], version: str, block: int) -> dict[str, Any]:
    hosts = [s["host_ip"] for s in servers]
    ids = hosts if len(set(hosts)) == len(hosts) else [s["server_id"] for s in servers]
    server_list = []
    for s, server_id in zip(servers, ids, strict=True):
        n = len(s["devices"])
        device = [{**d, "rank_id": str(s["rank"] * n + i)} for i, d in enumerate(s["devices"])]
        server_list.append(
            {
                "device": device,
                "server_id": server_id,
                "host_ip": s["host_ip"],
                "container_ip": s["ip"],
            }
        )
    table: dict[str, Any] = {
        "status": "completed",
        "server_list": server_list,
        "server_count": str(len(servers)),
        "version": version,
    }
    if version == "1.2":
        chips = len(servers[0]["devices"]) if servers else 0
        groups: dict[int, list[dict[str, str]]] = {}
        for s, server_id in zip(servers, ids, strict=True):
            group = logical_super_pod(s["rank"], block, chips)
            groups.setdefault(group, []).append({"server_id": server_id})
        table["super_pod_list"] = [
            {"super_pod_id": str(g), "server_list": groups[g]} for g in sorted(groups)
        ]
    return table


def _ref_v2(servers: list[dict[str, Any]]) -> dict[str, Any]:
    offered = set().union(*(d["ports"] for s in servers for d in s["devices"]))
    port = next((p for p in ("ROCE", "UBOE", "UBG") if p in offered), "")
    ranks = []
    for s in servers:
        for i, d in enumerate(s["devices"]):
            levels = [copy.deepcopy(e) for lv, kind, e in d["levels"] if lv < 2 or kind == port]
            ranks.append(
                {
                    "rank_id": s["rank"] * len(s["devices"]) + i,
                    "local_id": d["id"],
                    "device_id": d["id"],
                    "level_list": levels,
                }
            )
    ranks.sort(key=lambda r: r["rank_id"])
    return {"status": "completed", "version": "2.0", "rank_count": len(ranks), "rank_list": ranks}


# Strings that need escaping (quotes, backslashes, control and non-ASCII characters, a lone
# surrogate) as well as plain ones, for every id and IP the table copies.
ODD_TEXT = st.one_of(
    st.sampled_from(
        ["10.0.0.1", "a", "-1", '"q"', "back\\slash", "tab\t", "é", "\u2028", "\ud800", "\x7f", "0"]
    ),
    st.text(min_size=1, max_size=4),
)
PORTS = st.lists(st.sampled_from(["ROCE", "UBOE", "UBG", "X", "AA"]), max_size=3, unique=True)


@st.composite
def level_list(draw: st.DrawFn) -> list[dict[str, Any]]:
    levels = draw(st.lists(st.integers(0, 5), max_size=5))
    return [
        {"level": lv, "info": {p: _element(lv, p) for p in draw(PORTS)}, "extra": draw(ODD_TEXT)}
        for lv in levels
    ]


@st.composite
def device_entry(draw: st.DrawFn, version: str, index: int) -> dict[str, Any]:
    odd = draw(st.integers(0, 9)) == 0
    device: dict[str, Any] = {"device_id": draw(ODD_TEXT) if odd else str(index)}
    if draw(st.integers(0, 19)):
        device["device_ip"] = draw(ODD_TEXT)
    if version == "1.2" and draw(st.booleans()):
        device["super_device_id"] = draw(ODD_TEXT)
    if version == "2.0" and draw(st.integers(0, 5)):
        device["level_list"] = draw(level_list())
    return device


@st.composite
def allocated_job(draw: st.DrawFn) -> tuple[dict[str, Any], list[Any]]:
    """A job of any format, with its pods allocated in every way the rules distinguish: shared
    nodes, missing host IPs, duplicate or missing ranks, odd strings, garbage, extra pods."""
    version = draw(st.sampled_from(["1.0", "1.2", "2.0"]))
    workers, npus = draw(st.integers(1, 4)), draw(st.integers(1, 3))
    master_npus = draw(st.sampled_from([None, npus]))
    if version == "2.0":
        res = {"huawei.com/npu": npus}
        spec = replica(
            workers, containers=[container(None, resources={"requests": res, "limits": res})]
        )
        body = job("pytorch", {"Master": replica(1, npus=None), "Worker": spec})
        master_npus = None
    else:
        notes = (
            {"sp-block": draw(st.sampled_from(["1", "2", "4", "x"]))} if version == "1.2" else {}
        )
        body = pytorch(workers, npus=npus, master_npus=master_npus, annotations=notes)
    resource = "huawei.com/npu" if version == "2.0" else "huawei.com/Ascend910"
    pods: list[Any] = [pod("job1-master-0", 0, master_npus, pod_ip="172.16.0.1")]
    if master_npus is not None:
        pods = []
    first = 0 if master_npus is None else -1
    for w in range(first, workers):
        host = draw(st.integers(0, 3))
        info: dict[str, Any] = {
            "server_id": draw(ODD_TEXT),
            "host_ip": draw(ODD_TEXT),
            "devices": [draw(device_entry(version, i)) for i in range(npus)],
        }
        for key in ("server_id", "host_ip"):
            if not draw(st.integers(0, 7)):
                del info[key]
        rank = draw(st.sampled_from([w + 1, w + 1, w + 1, 0, 1]))
        name = "job1-master-0" if w < 0 else f"job1-worker-{w}"
        target = pod(
            name,
            rank,
            npus,
            info,
            pod_ip=draw(ODD_TEXT),
            host_ip=f"10.0.1.{host}",
            resource=resource,
        )
        if draw(st.integers(0, 9)) == 0:
            fields = [f for f in FIELDS if npus > 1 or not f.startswith("devices.1")]
            _set(draw(st.sampled_from(fields)), draw(JSON))(target)
        pods.append(target)
    if draw(st.integers(0, 5)) == 0:
        extra = copy.deepcopy(draw(st.sampled_from(pods)))
        extra["metadata"]["deletionTimestamp" if draw(st.booleans()) else "name"] = "x"
        pods.append(extra)
    return body, draw(st.permutations(pods))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=allocated_job())
def test_the_table_is_exactly_the_reference_implementations(
    case: tuple[dict[str, Any], list[Any]],
) -> None:
    body, pods = case
    expected = reference_table(body, pods)
    expected_text = json.dumps(expected, separators=(",", ":"))
    event(f"{table_format(body)} {expected['status']}")
    clear_annotation_cache()
    for _ in ("cold", "warm"):
        assert rank_table_text(body, pods) == expected_text
        assert rank_table(body, pods) == expected
        assert dumps(rank_table(body, pods)) == expected_text


def test_the_text_of_each_docs_example_is_its_dumps() -> None:
    examples = [two_server_job(), _super_pod_job(**{"sp-block": "4"}), _v2_pods("UBOE", "ROCE")]
    for body, pods in [*examples, (two_server_job()[0], [])]:
        assert rank_table_text(body, pods) == dumps(rank_table(body, pods))
    assert rank_table_text(*two_server_job()) == json.dumps(DOC_V1_0, separators=(",", ":"))


# --- the ConfigMap limit ----------------------------------------------------------------------
def test_what_fits_in_a_configmap() -> None:
    """The API server counts the bytes of every value in data (1 MiB in all), not the keys."""
    version = "1767225600"
    room = 1024 * 1024 - len(version)
    assert configmap_fits('{"status":"initializing"}', "0")
    assert configmap_fits("x" * room, version)
    assert not configmap_fits("x" * (room + 1), version)
    assert not configmap_fits("é" * (room // 2 + 1), version)  # two bytes each in UTF-8
    assert configmap_fits("é" * (room // 2), version)

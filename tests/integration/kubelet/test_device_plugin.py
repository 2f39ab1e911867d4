"""The simulated device plugin: NPU pods get devices of their node, and its annotations, before
they run; pods spread over the nodes; devices come back when a pod finishes.

Runs on both servers: it uses the API only (nodes registered, binding, a metadata patch).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from ascendjob_controller.localcluster.kubelet import SimulatedKubelet

pytestmark = pytest.mark.integration

WAIT = 30.0
DEVICES = "ascend.kubectl.kubernetes.io/ascend-910-configuration"
NODES = {"sim-node-1": "172.18.0.2", "sim-node-2": "172.18.0.3", "sim-node-3": "172.18.0.4"}


@pytest.fixture(scope="module")
def kubelet(bare_cluster: Any) -> Iterator[SimulatedKubelet]:
    k = SimulatedKubelet(
        bare_cluster.url, node_name="sim-node-1", credentials=bare_cluster.credentials(), nodes=3
    )
    k.register_node()
    k.start()
    yield k
    k.stop()


@pytest.fixture(scope="module")
def core(bare_cluster: Any) -> client.CoreV1Api:
    return client.CoreV1Api(bare_cluster.api_client())


@pytest.fixture
def namespace(core: client.CoreV1Api) -> str:
    name = f"dp-{uuid.uuid4().hex[:6]}"
    core.create_namespace({"metadata": {"name": name}})
    return name


def wait_for(fn: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        if value := fn():
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def npu_pod(
    name: str, npus: int, seconds: str = "30", resource: str = "huawei.com/Ascend910"
) -> Any:
    return {
        "metadata": {"name": name, "annotations": {"sim.acjob.local/run-seconds": seconds}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {"name": "ascend", "image": "x", "resources": {"limits": {resource: str(npus)}}}
            ],
        },
    }


def running(core: client.CoreV1Api, ns: str, name: str) -> Any:
    pod = core.read_namespaced_pod(name, ns)
    return pod if pod.status.phase == "Running" else None


def test_the_nodes_are_registered_with_eight_npus(
    core: client.CoreV1Api, kubelet: SimulatedKubelet
) -> None:
    for name, ip in NODES.items():
        node = core.read_node(name)
        assert node.status.capacity["huawei.com/Ascend910"] == "8"
        assert {"type": "InternalIP", "address": ip} in [
            {"type": a.type, "address": a.address} for a in node.status.addresses
        ]


def test_eight_npu_pods_spread_one_per_node_with_the_plugins_annotations(
    core: client.CoreV1Api, kubelet: SimulatedKubelet, namespace: str
) -> None:
    for i in range(3):
        core.create_namespaced_pod(namespace, npu_pod(f"p{i}", 8))
    pods = [
        wait_for(lambda i=i: running(core, namespace, f"p{i}"), f"p{i} Running") for i in range(3)
    ]
    assert sorted(p.spec.node_name for p in pods) == sorted(NODES)
    for pod in pods:
        host = NODES[pod.spec.node_name]
        assert pod.status.host_ip == host
        value = json.loads(pod.metadata.annotations[DEVICES])
        assert value["server_id"] == host and value["host_ip"] == host
        assert value["pod_name"] == pod.metadata.name
        index = int(host.rsplit(".", 1)[1]) - 1  # node 1 at .2
        assert value["devices"] == [
            {"device_id": str(d), "device_ip": f"192.168.{d}.{index + 1}"} for d in range(8)
        ]
        assert pod.metadata.annotations["huawei.com/Ascend910"] == ",".join(
            f"Ascend910-{d}" for d in range(8)
        )
    # A deleted pod gives its devices back.
    for pod in pods:
        core.delete_namespaced_pod(pod.metadata.name, namespace)
    wait_for(lambda: all(len(n.free) == 8 for n in kubelet.devices.nodes), "devices released")


def test_small_pods_share_a_node_on_distinct_devices_and_get_them_back(
    core: client.CoreV1Api, kubelet: SimulatedKubelet, namespace: str
) -> None:
    assert all(len(n.free) == 8 for n in kubelet.devices.nodes)
    for i in range(6):
        # Long enough to be seen Running on a loaded machine; deleted below.
        core.create_namespaced_pod(namespace, npu_pod(f"s{i}", 4, seconds="30"))
    pods = [
        wait_for(lambda i=i: running(core, namespace, f"s{i}"), f"s{i} Running") for i in range(6)
    ]
    used: dict[str, list[str]] = {}
    for pod in pods:
        ids = [d["device_id"] for d in json.loads(pod.metadata.annotations[DEVICES])["devices"]]
        used.setdefault(pod.spec.node_name, []).extend(ids)
    # Every device of every node used exactly once: no double allocation.
    assert {node: sorted(ids, key=int) for node, ids in used.items()} == {
        node: [str(d) for d in range(8)] for node in NODES
    }
    # Pods that go give their devices back.
    for pod in pods:
        core.delete_namespaced_pod(pod.metadata.name, namespace)
    wait_for(lambda: all(len(n.free) == 8 for n in kubelet.devices.nodes), "devices released")


def test_a_pod_without_npus_gets_no_device_annotation(
    core: client.CoreV1Api, kubelet: SimulatedKubelet, namespace: str
) -> None:
    body = npu_pod("cpu", 0)
    body["spec"]["containers"][0].pop("resources")
    core.create_namespaced_pod(namespace, body)
    pod = wait_for(lambda: running(core, namespace, "cpu"), "cpu Running")
    assert DEVICES not in (pod.metadata.annotations or {})


def test_the_generic_npu_resource_is_annotated_under_its_own_name(
    core: client.CoreV1Api, kubelet: SimulatedKubelet, namespace: str
) -> None:
    core.create_namespaced_pod(namespace, npu_pod("gen", 2, resource="huawei.com/npu"))
    pod = wait_for(lambda: running(core, namespace, "gen"), "gen Running")
    assert pod.metadata.annotations["huawei.com/npu"].count("npu-") == 2
    assert len(json.loads(pod.metadata.annotations[DEVICES])["devices"]) == 2

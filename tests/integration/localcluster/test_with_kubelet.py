"""The cluster wired with the simulated kubelet (the `local_cluster` fixture other suites use)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from ascendjob_controller.localcluster.cluster import LocalCluster

from .conftest import eventually

pytestmark = pytest.mark.integration


def _pod(name: str, exit_code: str) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "annotations": {
                "sim.acjob.local/run-seconds": "0.5",
                "sim.acjob.local/exit-code": exit_code,
            },
        },
        "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "x"}]},
    }


def test_pods_run_to_completion_under_the_simulated_kubelet(local_cluster: LocalCluster) -> None:
    core = client.CoreV1Api(local_cluster.api_client())
    core.create_namespaced_pod("default", _pod("ok", "0"))
    core.create_namespaced_pod("default", _pod("bad", "1"))

    def phase(name: str) -> str:
        return str(core.read_namespaced_pod(name, "default").status.phase)

    eventually(lambda: phase("ok") == "Succeeded", message="pod never succeeded")
    eventually(lambda: phase("bad") == "Failed", message="pod never failed")
    pod = core.read_namespaced_pod("bad", "default")
    assert pod.spec.node_name and pod.status.pod_ip
    terminated = pod.status.container_statuses[0].state.terminated
    assert terminated.exit_code == 1


def test_the_kubelets_node_is_registered_and_ready(local_cluster: LocalCluster) -> None:
    core = client.CoreV1Api(local_cluster.api_client())
    nodes = core.list_node().items
    assert [n.metadata.name for n in nodes] == ["local-node-1"]
    ready = {c.type: c.status for c in nodes[0].status.conditions}
    assert ready["Ready"] == "True"
    assert nodes[0].status.allocatable["huawei.com/Ascend910"] == "8"

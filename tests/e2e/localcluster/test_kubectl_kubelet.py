"""kubectl against the cluster with the simulated kubelet: nodes, pod phases, logs."""

from __future__ import annotations

import subprocess
import time

import pytest

from ascendjob_controller.localcluster.cluster import LocalCluster

pytestmark = pytest.mark.e2e


def test_kubectl_sees_the_node_and_a_pods_simulated_log(
    local_cluster: LocalCluster, kubectl_bin: str
) -> None:
    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [kubectl_bin, "--kubeconfig", str(local_cluster.kubeconfig_path), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )

    nodes = kubectl("get", "nodes", "-o", "name")
    assert nodes.stdout.split() == ["node/local-node-1"], nodes.stderr
    run = kubectl(
        "run",
        "logged",
        "--image=busybox:1.36",
        "--restart=Never",
        "--annotations=sim.acjob.local/run-seconds=0.5",
        "--annotations=sim.acjob.local/exit-code=3",
    )
    assert run.returncode == 0, run.stderr
    deadline = time.monotonic() + 30
    phase = ""
    while time.monotonic() < deadline and phase != "Failed":
        phase = kubectl("get", "pod", "logged", "-o", "jsonpath={.status.phase}").stdout
        time.sleep(0.2)
    assert phase == "Failed"
    logs = kubectl("logs", "logged")
    assert logs.returncode == 0, logs.stderr
    assert "exited with code 3" in logs.stdout

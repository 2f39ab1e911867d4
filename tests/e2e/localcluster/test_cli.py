"""`ascendjob-controller local-cluster` as a user runs it: ready line, kubectl, clean exit."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e


def test_local_cluster_command_serves_kubectl_and_exits_0_on_sigterm(
    tmp_path: Path, kubectl_bin: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ascendjob_controller",
            "local-cluster",
            "--port",
            "0",
            "--kubeconfig",
            str(kubeconfig),
            "--no-kubelet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        assert line.startswith("ready http://127.0.0.1:"), line
        assert line.split()[1] in kubeconfig.read_text()
        out = subprocess.run(
            [kubectl_bin, "--kubeconfig", str(kubeconfig), "get", "namespaces", "-o", "name"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        assert "namespace/default" in out.stdout.split()
        assert "namespace/kube-system" in out.stdout.split()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

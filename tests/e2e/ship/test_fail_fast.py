"""`run` fails fast, with a clear message, when it cannot work at all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.ship.tools import free_port

pytestmark = [pytest.mark.e2e]


def run_controller(kubeconfig: Path) -> tuple[int, list[dict[str, Any]]]:
    script = Path(sys.executable).with_name("ascendjob-controller")
    out = subprocess.run(
        [str(script), "run", "--kubeconfig", str(kubeconfig), "--log-format", "json",
         "--metrics-bind-address", "0", "--health-probe-bind-address", "0"],
        capture_output=True, text=True, timeout=150,
    )  # fmt: skip
    return out.returncode, [json.loads(line) for line in out.stdout.splitlines()]


def test_unreachable_api_server(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: 'http://127.0.0.1:{free_port()}'}}}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n"
    )
    code, lines = run_controller(kubeconfig)
    assert code == 1
    [failure] = [line for line in lines if line["event"] == "startup_failed"]
    assert failure["level"] == "error"
    assert "cannot reach the API server" in failure["error"]
    assert "connection" in failure["error"].lower()  # says why, not just "failed"


def test_crd_not_installed(bare_cluster: Any, kubectl_bin: str) -> None:
    deleted = subprocess.run(
        [kubectl_bin, "--kubeconfig", str(bare_cluster.kubeconfig_path),
         "delete", "crd", "ascendjobs.mindxdl.gitee.com"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert deleted.returncode == 0, deleted.stderr
    code, lines = run_controller(Path(bare_cluster.kubeconfig_path))
    assert code == 1
    [failure] = [line for line in lines if line["event"] == "startup_failed"]
    assert "CRD (ascendjobs.mindxdl.gitee.com) is not installed" in failure["error"]

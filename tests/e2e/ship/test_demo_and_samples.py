"""`make run`'s demo ends with the sample Succeeded; every sample behaves as its comment says."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.ship.tools import ControllerProcess, get_job, kubectl_apply, wait_job

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_demo_prints_transitions_and_ends_succeeded(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("ascendjob-controller")
    out = subprocess.run(
        [str(script), "demo", "--exit-when-done",
         "--metrics-bind-address", "0", "--health-probe-bind-address", "0"],
        cwd=tmp_path, capture_output=True, text=True, timeout=170,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.splitlines()
    stamp = r"\d\d:\d\d:\d\d  default/default-test-pytorch  "
    assert any(re.fullmatch(stamp + "Created", line) for line in lines), out.stdout
    assert any(re.fullmatch(stamp + "Created -> Running", line) for line in lines), out.stdout
    assert any(re.fullmatch(stamp + "Running -> Succeeded", line) for line in lines), out.stdout
    # The sample mounts its rank table; it is completed once both pods have their devices.
    table = r"\d\d:\d\d:\d\d  default/rings-config-default-test-pytorch  hccl.json completed"
    assert any(re.fullmatch(table + r" \(2 servers\)", line) for line in lines), out.stdout
    assert f"export KUBECONFIG={tmp_path / 'kubeconfig.local'}" in out.stdout
    assert "kubectl get acjob" in out.stdout
    assert (tmp_path / ".local" / "demo.log").read_text().strip()  # the controller's logs


@pytest.fixture
def controller(local_cluster: Any, tmp_path: Path) -> Iterator[ControllerProcess]:
    process = ControllerProcess(str(local_cluster.kubeconfig_path), tmp_path)
    process.wait_ready()
    yield process
    process.stop()


def test_every_sample_behaves_as_documented(
    local_cluster: Any, kubectl_bin: str, repo_root: Path, controller: ControllerProcess
) -> None:
    kubectl_apply(kubectl_bin, local_cluster, "-f", str(repo_root / "manifests" / "samples"))
    for name in ("sample-pytorch", "sample-mindspore", "sample-tensorflow"):
        job = wait_job(local_cluster, name, ("Succeeded", "Failed"))
        assert job["status"]["conditions"][-1]["type"] == "Succeeded", (name, job["status"])
    never = wait_job(local_cluster, "sample-restart-never", ("Succeeded", "Failed"))
    assert never["status"]["conditions"][-1]["type"] == "Failed"
    for name in ("sample-restart-onfailure", "sample-restart-exitcode"):
        job = wait_job(local_cluster, name, ("Succeeded", "Failed"))
        assert job["status"]["conditions"][-1]["type"] == "Succeeded", (name, job["status"])
        assert job["status"].get("restartCount", 0) >= 1, (name, job["status"])
    always = wait_job(local_cluster, "sample-restart-always", ("Running", "Restarting"))
    assert always["status"]["conditions"][-1]["type"] in ("Running", "Restarting")
    # Always restarts in place on every exit, and counts it; the 60 s deadline ends the job.
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        always = get_job(local_cluster, "sample-restart-always")
        if always["status"].get("restartCount", 0) >= 1:
            break
        time.sleep(0.5)
    assert always["status"].get("restartCount", 0) >= 1, always["status"]

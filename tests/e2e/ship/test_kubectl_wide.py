"""`kubectl get acjob -o wide`: the CRD's priority-1 printer columns, through the real kubectl.

The server builds the Table from the CRD's additionalPrinterColumns (the local cluster as the
real kube-apiserver does); kubectl prints priority-1 columns only with `-o wide`.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.e2e.ship.tools import ControllerProcess, kubectl_apply, small_job, wait_job

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

NARROW = ["NAME", "STATUS", "AGE", "RESTARTS"]
WIDE = [*NARROW, "FRAMEWORK", "REASON", "WORKERS", "ACTIVE"]

Kubectl = Callable[..., str]


@pytest.fixture(scope="module")
def controller(
    local_cluster: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ControllerProcess]:
    process = ControllerProcess(str(local_cluster.kubeconfig_path), tmp_path_factory.mktemp("wide"))
    process.wait_ready()
    yield process
    process.stop()


@pytest.fixture(scope="module")
def kubectl(local_cluster: Any, kubectl_bin: str) -> Kubectl:
    def run(*args: str) -> str:
        cmd = [kubectl_bin, "--kubeconfig", str(local_cluster.kubeconfig_path), *args]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, f"kubectl {' '.join(args)}: {proc.stderr}"
        return proc.stdout

    return run


def table(output: str) -> tuple[list[str], dict[str, dict[str, str]]]:
    """kubectl's columns and the rows by NAME; cells are cut at the headers' offsets (kubectl
    aligns every column with its header), so an empty cell reads as ""."""
    lines = output.rstrip().splitlines()
    starts = [m.start() for m in re.finditer(r"\S+", lines[0])]
    header = lines[0].split()
    rows = {}
    for line in lines[1:]:
        bounds = [*starts[1:], None]
        cells = [line[a:b].strip() for a, b in zip(starts, bounds, strict=True)]
        rows[cells[0]] = dict(zip(header, cells, strict=True))
    return header, rows


def wait_row(kubectl: Kubectl, name: str, want: dict[str, str], timeout: float = 60) -> None:
    """Poll `get -o wide` until the row shows `want` (status writes land a moment apart)."""
    deadline = time.monotonic() + timeout
    row: dict[str, str] = {}
    while time.monotonic() < deadline:
        _, rows = table(kubectl("get", "acjob", name, "-o", "wide"))
        row = rows[name]
        if want.items() <= row.items():
            return
        time.sleep(0.25)
    raise AssertionError(f"{name}: {row}, want {want}")


def test_wide_adds_framework_reason_and_worker_counts(
    local_cluster: Any, kubectl_bin: str, kubectl: Kubectl, controller: ControllerProcess
) -> None:
    kubectl_apply(kubectl_bin, local_cluster, "-f", "-", stdin=small_job("wide-run", 600))
    wait_job(local_cluster, "wide-run", ("Running",))
    wait_row(
        kubectl,
        "wide-run",
        {"STATUS": "Running", "FRAMEWORK": "pytorch", "REASON": "JobRunning"},
    )
    wait_row(kubectl, "wide-run", {"WORKERS": "1", "ACTIVE": "1", "RESTARTS": "0"})
    header, _ = table(kubectl("get", "acjob", "-o", "wide"))
    assert header == WIDE
    # Without -o wide the priority-1 columns stay hidden.
    header, rows = table(kubectl("get", "acjob"))
    assert header == NARROW
    assert rows["wide-run"]["STATUS"] == "Running"


def test_wide_shows_why_a_job_failed(
    local_cluster: Any,
    kubectl_bin: str,
    kubectl: Kubectl,
    controller: ControllerProcess,
    repo_root: Path,
) -> None:
    sample = repo_root / "manifests/samples/acjob_restart_never.yaml"  # its Worker exits 1
    kubectl_apply(kubectl_bin, local_cluster, "-f", str(sample))
    wait_job(local_cluster, "sample-restart-never", ("Failed",))
    workers = yaml.safe_load(sample.read_text())["spec"]["replicaSpecs"]["Worker"]["replicas"]
    wait_row(
        kubectl,
        "sample-restart-never",
        {"STATUS": "Failed", "REASON": "JobFailed", "WORKERS": str(workers), "ACTIVE": "0"},
    )


def test_wide_columns_of_a_job_the_controller_has_not_seen(
    local_cluster: Any, kubectl_bin: str, kubectl: Kubectl
) -> None:
    """No framework label: the server sends no value, and kubectl prints an empty cell."""
    manifest = small_job("wide-bare", 1).replace("  labels:\n    framework: pytorch\n", "")
    manifest = manifest.replace("    Worker:\n      replicas: 1", "    Worker:\n      replicas: 3")
    assert "framework" not in manifest and "replicas: 3" in manifest
    # Whether or not the controller has got to it (it fails such a job), these two hold.
    kubectl_apply(kubectl_bin, local_cluster, "-f", "-", stdin=manifest)
    _, rows = table(kubectl("get", "acjob", "wide-bare", "-o", "wide"))
    row = rows["wide-bare"]
    assert row["FRAMEWORK"] == ""
    assert row["WORKERS"] == "3"

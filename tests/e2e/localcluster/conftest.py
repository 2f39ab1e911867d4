"""The real kubectl, pointed at this module's bare local cluster, and a fresh namespace."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ascendjob_controller.localcluster.cluster import LocalCluster

Kubectl = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="module")
def kubectl(bare_cluster: LocalCluster, kubectl_bin: str, repo_root: Path) -> Kubectl:
    def run(*args: str, stdin: str | None = None, check: bool = True) -> Any:
        cmd = [kubectl_bin, "--kubeconfig", str(bare_cluster.kubeconfig_path), *args]
        proc = subprocess.run(
            cmd, input=stdin, capture_output=True, text=True, timeout=60, cwd=repo_root
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
        return proc

    return run


@pytest.fixture
def ns(kubectl: Kubectl) -> str:
    name = f"e2e-{uuid.uuid4().hex[:8]}"
    kubectl("create", "namespace", name)
    return name

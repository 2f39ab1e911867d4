"""The project's own kustomize manifests deploy to, and undeploy from, the local cluster."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from ascendjob_controller.localcluster.cluster import LocalCluster

pytestmark = pytest.mark.e2e


def test_apply_k_twice_then_delete_k(tmp_path: Path, kubectl_bin: str, repo_root: Path) -> None:
    if not (repo_root / "manifests" / "kustomization.yaml").exists():
        pytest.skip("no kustomization at manifests/")
    with LocalCluster(kubeconfig_path=tmp_path / "kubeconfig", kubelet=False) as cluster:

        def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [kubectl_bin, "--kubeconfig", str(cluster.kubeconfig_path), *args],
                capture_output=True,
                text=True,
                timeout=120,
                cwd=repo_root,
            )

        first = kubectl("apply", "-k", "manifests/")
        assert first.returncode == 0, first.stderr
        again = kubectl("apply", "-k", "manifests/")
        assert again.returncode == 0, again.stderr
        lines = again.stdout.strip().splitlines()
        assert lines and all(line.endswith(" unchanged") for line in lines), again.stdout
        gone = kubectl("delete", "-k", "manifests/")
        assert gone.returncode == 0, gone.stderr
        assert "NotFound" not in gone.stderr

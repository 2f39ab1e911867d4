"""`kubectl apply -k manifests/ --dry-run=server` against the local cluster succeeds."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.e2e]


def kubectl(kubectl_bin: str, cluster: Any, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [kubectl_bin, "--kubeconfig", str(cluster.kubeconfig_path), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_manifests_apply_with_server_dry_run(
    kubectl_bin: str, bare_cluster: Any, repo_root: Path
) -> None:
    # The namespace must exist for a server-side dry run of the namespaced objects in it.
    created = kubectl(kubectl_bin, bare_cluster, "create", "namespace", "ascendjob-system")
    assert created.returncode == 0, created.stderr
    out = kubectl(
        kubectl_bin, bare_cluster, "apply", "--dry-run=server", "-k", str(repo_root / "manifests")
    )
    assert out.returncode == 0, out.stderr
    for expected in (
        "customresourcedefinition.apiextensions.k8s.io/ascendjobs.mindxdl.gitee.com",
        "serviceaccount/ascendjob-controller",
        "clusterrole.rbac.authorization.k8s.io/ascendjob-controller",
        "role.rbac.authorization.k8s.io/ascendjob-controller-leader-election",
        "deployment.apps/ascendjob-controller",
        "service/ascendjob-controller-metrics",
    ):
        assert expected in out.stdout, out.stdout
    assert "(server dry run)" in out.stdout
    # A dry run persists nothing.
    after = kubectl(kubectl_bin, bare_cluster, "get", "clusterrole", "ascendjob-controller")
    assert after.returncode != 0
    assert "NotFound" in after.stderr or "not found" in after.stderr


def test_samples_apply_with_server_dry_run(
    kubectl_bin: str, bare_cluster: Any, repo_root: Path
) -> None:
    samples = repo_root / "manifests" / "samples"
    # `kubectl apply -f manifests/samples/` takes every file: the ten small samples and the seed.
    out = kubectl(kubectl_bin, bare_cluster, "apply", "--dry-run=server", "-f", str(samples))
    assert out.returncode == 0, out.stderr
    assert out.stdout.count("ascendjob.mindxdl.gitee.com/") == 11, out.stdout

"""Fixtures shared by every test layer."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def kubectl_bin() -> str:
    """The kubectl to drive e2e tests with: $KUBECTL, else the one on PATH.

    Outside CI a missing kubectl skips the test with a reason; in CI (CI=true) it is an error,
    because a skipped e2e suite would pass silently.
    """
    found = os.environ.get("KUBECTL") or shutil.which("kubectl")
    if found:
        return found
    message = "kubectl not found: set $KUBECTL or put kubectl (v1.32) on PATH"
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """An embedded API server with the simulated kubelet, one per test module."""
    from ascendjob_controller.localcluster.cluster import LocalCluster

    cluster = LocalCluster(
        kubeconfig_path=tmp_path_factory.mktemp("lc") / "kubeconfig", kubelet=True
    )
    cluster.start()
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def bare_cluster(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    """An embedded API server with no kubelet: tests write pod status themselves."""
    from ascendjob_controller.localcluster.cluster import LocalCluster

    cluster = LocalCluster(
        kubeconfig_path=tmp_path_factory.mktemp("lc") / "kubeconfig", kubelet=False
    )
    cluster.start()
    yield cluster
    cluster.stop()

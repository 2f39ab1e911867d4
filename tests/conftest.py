"""Fixtures shared by every test layer.

Integration and e2e tests get their cluster from `local_cluster` (with the simulated kubelet)
or `bare_cluster` (without). `ASCENDJOB_TEST_BACKEND` picks what stands behind them:
- `local` (the default): the embedded API server, fast;
- `real`: etcd, kube-apiserver and kube-controller-manager built by `make real-cluster-bin`.

A test that only makes sense on one backend carries `@pytest.mark.local_only("why")` or
`@pytest.mark.real_only("why")`; the reason is shown when it is skipped.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
BACKEND = os.environ.get("ASCENDJOB_TEST_BACKEND", "local")
if BACKEND not in ("local", "real"):
    raise pytest.UsageError(f"ASCENDJOB_TEST_BACKEND must be local or real, not {BACKEND!r}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    other = "real_only" if BACKEND == "local" else "local_only"
    for item in items:
        if "localcluster" in Path(str(item.path)).parent.name:
            # tests/*/localcluster/ test the embedded server itself, not the controller.
            item.add_marker(pytest.mark.local_only("tests the embedded local cluster itself"))
        marker = item.get_closest_marker(other)
        if marker is not None:
            why = marker.args[0] if marker.args else "no reason given"
            item.add_marker(pytest.mark.skip(reason=f"{other} ({BACKEND} backend): {why}"))


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def backend() -> str:
    return BACKEND


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


def start_cluster(kubeconfig: Path, kubelet: bool, nodes: int = 1) -> Any:
    """A started cluster of the selected backend (`nodes` simulated nodes of 8 NPUs)."""
    if BACKEND == "real":
        from ascendjob_controller.localcluster.realcluster import RealCluster

        cluster: Any = RealCluster(kubeconfig_path=kubeconfig, kubelet=kubelet, nodes=nodes)
    else:
        from ascendjob_controller.localcluster.cluster import LocalCluster

        cluster = LocalCluster(kubeconfig_path=kubeconfig, kubelet=kubelet, nodes=nodes)
    cluster.start()
    return cluster


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """An API server with the simulated kubelet, one per test module."""
    cluster = start_cluster(tmp_path_factory.mktemp("lc") / "kubeconfig", kubelet=True)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="module")
def bare_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """An API server with no kubelet: tests write pod status themselves."""
    cluster = start_cluster(tmp_path_factory.mktemp("lc") / "kubeconfig", kubelet=False)
    yield cluster
    cluster.stop()

"""Fixtures: a test-side client, a hand kubelet and the controller under test, per module."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ascendjob_controller.controller import AscendJobController, ControllerOptions
from ascendjob_controller.kube.client import KubeClient
from tests.integration.controller.helpers import Kubelet, batched, make_client, reconciles


@pytest.fixture(scope="module")
def kube(bare_cluster: Any) -> Iterator[KubeClient]:
    client = make_client(bare_cluster)
    yield client
    client.close()


@pytest.fixture(scope="module")
def kubelet(kube: KubeClient) -> Kubelet:
    return Kubelet(kube)


def start_controller(cluster: Any, workers: int = 4) -> AscendJobController:
    controller = AscendJobController(
        make_client(cluster), ControllerOptions(workers=workers, gang_scheduling=True)
    )
    reconciles(controller)  # record every reconcile, for the tests' "nothing else" checks
    controller.start()
    return controller


@pytest.fixture(scope="module")
def controller(bare_cluster: Any) -> Iterator[AscendJobController]:
    ctl = start_controller(bare_cluster)
    yield ctl
    ctl.stop(10.0)


@pytest.fixture
def long_batch(bare_cluster: Any) -> Iterator[AscendJobController]:
    """A controller whose syncs that can wait wait 10 minutes: longer than any test waits,
    so a batched sync never comes within a test."""
    ctl = batched(bare_cluster, 600.0)
    yield ctl
    ctl.stop(10.0)

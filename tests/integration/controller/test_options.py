"""ControllerOptions: gang scheduling switched off, a namespace scope, a single worker."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from ascendjob_controller.controller import AscendJobController, ControllerOptions
from ascendjob_controller.kube.client import ASCENDJOBS, NAMESPACES, PODGROUPS, KubeClient
from tests.integration.controller.helpers import (
    Kubelet,
    make_client,
    pods_of,
    pytorch_job,
    status_of,
    wait_for,
    wait_pods,
    wait_state,
)

pytestmark = pytest.mark.integration

SCOPED, OUTSIDE = "scoped", "outside"


@pytest.fixture(scope="module")
def scoped_controller(bare_cluster: Any, kube: KubeClient) -> Iterator[AscendJobController]:
    for name in (SCOPED, OUTSIDE):
        kube.create(NAMESPACES, None, {"metadata": {"name": name}})
    options = ControllerOptions(namespaces=(SCOPED,), workers=1, gang_scheduling=False)
    ctl = AscendJobController(make_client(bare_cluster), options)
    ctl.start()
    yield ctl
    ctl.stop(10.0)


def test_gang_off_creates_pods_without_a_podgroup(
    kube: KubeClient, kubelet: Kubelet, scoped_controller: AscendJobController
) -> None:
    kube.create(ASCENDJOBS, SCOPED, pytorch_job("vg", scheduler="volcano"))
    pods = wait_pods(kube, SCOPED, "vg", 2)
    assert kube.list(PODGROUPS, SCOPED)["items"] == []
    kubelet.run_all(pods)
    kubelet.succeed_all(pods)
    wait_state(kube, SCOPED, "vg", "Succeeded")


def test_jobs_outside_the_scope_are_not_touched(
    kube: KubeClient, scoped_controller: AscendJobController
) -> None:
    kube.create(ASCENDJOBS, OUTSIDE, pytorch_job("away"))
    kube.create(ASCENDJOBS, SCOPED, pytorch_job("home"))
    wait_pods(kube, SCOPED, "home", 2)
    wait_for(lambda: status_of(kube, SCOPED, "home"), "the scoped job reconciled")
    threading.Event().wait(1.0)  # time for a wrong reconcile to show
    assert status_of(kube, OUTSIDE, "away") == {}
    assert pods_of(kube, OUTSIDE, "away") == {}

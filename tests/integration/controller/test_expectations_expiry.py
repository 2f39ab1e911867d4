"""A job whose expectation is never met (the informer missed a create) is not stranded.

The Service's ADDED event is dropped before the controller's handler sees it: no observation,
no enqueue. Nothing else happens on a cluster without a kubelet, so only the requeue at the
expectation's expiry can bring the job back and let it create its pods.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller.controller import AscendJobController, ControllerOptions
from ascendjob_controller.kube.client import ASCENDJOBS, PODS, KubeClient
from tests.integration.controller.helpers import (
    fresh_namespace,
    make_client,
    pytorch_job,
    wait_for,
)

pytestmark = pytest.mark.integration
TTL = 2.0


@pytest.fixture
def blind_controller(bare_cluster: Any, mocker: MockerFixture) -> Iterator[dict[str, int]]:
    """A controller that never hears of the first Service it creates."""
    dropped = {"services": 0}
    original = AscendJobController._child_added

    def child_added(self: AscendJobController, obj: dict[str, Any]) -> None:
        if "clusterIP" in (obj.get("spec") or {}) and dropped["services"] == 0:
            dropped["services"] += 1
            return
        original(self, obj)

    mocker.patch.object(AscendJobController, "_child_added", child_added)
    controller = AscendJobController(
        make_client(bare_cluster),
        ControllerOptions(workers=2, gang_scheduling=False, expectations_ttl=TTL),
    )
    controller.start()
    yield dropped
    controller.stop(10.0)


def test_an_unobserved_create_delays_the_job_by_the_ttl_only(
    bare_cluster: Any, blind_controller: dict[str, int]
) -> None:
    kube: KubeClient = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    kube.create(ASCENDJOBS, ns, pytorch_job("blind"))
    want = {"blind-master-0", "blind-worker-0"}
    names = wait_for(
        lambda: (
            (found := {p["metadata"]["name"] for p in kube.list(PODS, ns)["items"]}) == want
            and found
        ),
        what="both pods after the expectation expired",
        timeout=30,
    )
    assert blind_controller["services"] == 1, "the Service's ADDED event was dropped"
    assert names == want

"""A job whose expectation is never met (the informer missed a create) is not stranded.

The Service's ADDED event is dropped before the controller's handler sees it: no observation.
The pods are created in the Service's own reconcile, so the job then waits on that Service
expectation alone. The test runs the pods, whose updates enqueue the job, but a pending
expectation holds every reconcile back; nothing else happens on a cluster without a kubelet,
so only the requeue at the expectation's expiry can bring the job back and make it Running.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller.controller import AscendJobController, ControllerOptions
from ascendjob_controller.kube.client import ASCENDJOBS, PODS, KubeClient
from tests.integration.controller.helpers import (
    Kubelet,
    fresh_namespace,
    make_client,
    pytorch_job,
    wait_for,
    wait_state,
)

pytestmark = pytest.mark.integration
TTL = 2.0


@pytest.fixture
def blind_controller(
    bare_cluster: Any, mocker: MockerFixture
) -> Iterator[tuple[AscendJobController, dict[str, int]]]:
    """A controller that never hears of the first Service it creates."""
    dropped = {"services": 0}
    original = AscendJobController._child_added

    def child_added(self: AscendJobController, kind: str, obj: dict[str, Any]) -> None:
        if kind == "Service" and dropped["services"] == 0:
            dropped["services"] += 1
            return
        original(self, kind, obj)

    mocker.patch.object(AscendJobController, "_child_added", child_added)
    controller = AscendJobController(
        make_client(bare_cluster),
        ControllerOptions(workers=2, gang_scheduling=False, expectations_ttl=TTL),
    )
    controller.start()
    yield controller, dropped
    controller.stop(10.0)


def test_an_unobserved_create_delays_the_job_by_the_ttl_only(
    bare_cluster: Any, blind_controller: tuple[AscendJobController, dict[str, int]]
) -> None:
    controller, dropped = blind_controller
    kube: KubeClient = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    kube.create(ASCENDJOBS, ns, pytorch_job("blind"))
    want = {"blind-master-0", "blind-worker-0"}
    pods = wait_for(
        lambda: (
            (found := {p["metadata"]["name"]: p for p in kube.list(PODS, ns)["items"]}).keys()
            == want
            and found
        ),
        what="both pods, created with the Service",
    )
    assert dropped["services"] == 1, "the Service's ADDED event was dropped"
    # The pods' ADDED events do not meet the Service's expectation, though the Service and
    # the Master pod share a name: the expectation is the kind's too.
    wait_for(
        lambda: (
            controller.expectations.pending(f"{ns}/blind")[0] == {f"Service/{ns}/blind-master-0"}
        ),
        what="the pods observed, the Service still expected",
    )
    Kubelet(kube).run_all(pods)
    # Held back until the expectation expires (TTL), then re-planned: Running.
    wait_state(kube, ns, "blind", "Running", timeout=30)

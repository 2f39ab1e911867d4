"""A reconcile hands its Events to the recorder only after its last request.

The recorder's thread sends them at once, and on two shared cores its requests compete with
the reconcile's own: a failed pod's replacement used to wait behind four Events posted between
the delete and the create. This test records, in one list, every create the controller makes
and every Event it records, and checks the order for a new job's first reconcile (Service,
then pods in a follow-up plan, with SuccessfulCreate Events for both).
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.kube.client import ASCENDJOBS, KubeClient
from ascendjob_controller.kube.events import EventRecorder
from tests.integration.controller.helpers import (
    fresh_namespace,
    make_client,
    pytorch_job,
    wait_event,
    wait_pods,
)

pytestmark = pytest.mark.integration


def test_events_are_recorded_after_the_reconciles_creates(
    bare_cluster: Any, controller: AscendJobController, mocker: MockerFixture
) -> None:
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    order: list[tuple[str, str]] = []
    lock = threading.Lock()
    real_create, real_event = KubeClient.create, EventRecorder.event

    def create(self: KubeClient, res: Any, namespace: Any, body: Any, **kw: Any) -> Any:
        answer = real_create(self, res, namespace, body, **kw)
        if namespace == ns and body.get("kind") in ("Pod", "Service"):
            with lock:
                order.append(("create", body["kind"]))
        return answer

    def event(self: EventRecorder, obj: Any, type_: str, reason: str, message: str) -> None:
        if (obj.get("metadata") or {}).get("namespace") == ns:
            with lock:
                order.append(("event", reason))
        real_event(self, obj, type_, reason, message)

    mocker.patch.object(KubeClient, "create", create)
    mocker.patch.object(EventRecorder, "event", event)
    kube.create(ASCENDJOBS, ns, pytorch_job("ordered", workers=3))
    wait_pods(kube, ns, "ordered", 4)
    wait_event(kube, ns, "ordered", "SuccessfulCreatePod")
    with lock:
        seen = list(order)
    creates = [i for i, (what, _) in enumerate(seen) if what == "create"]
    events = [i for i, (what, _) in enumerate(seen) if what == "event"]
    assert len(creates) == 5, seen  # the Service and four pods, in one reconcile
    assert ("event", "SuccessfulCreateService") in seen, seen
    assert events and min(events) > max(creates), seen

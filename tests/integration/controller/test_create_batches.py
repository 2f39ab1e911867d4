"""Pods are created in slow-start batches: fast for big jobs, one request when all would fail."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.kube.client import ASCENDJOBS, PODS, ApiError, KubeClient
from tests.integration.controller.helpers import (
    fresh_namespace,
    make_client,
    pytorch_job,
    wait_event,
    wait_pods,
)

pytestmark = pytest.mark.integration

WORKERS = 40


def test_a_refused_pod_stops_the_batch_and_the_retry_creates_them_all(
    bare_cluster: Any, controller: AscendJobController, mocker: MockerFixture
) -> None:
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    real_create = KubeClient.create
    attempts = {"refused": 0, "allowed": 0}
    quota = {"full": True}

    def create(self: KubeClient, res: Any, namespace: Any, body: Any, **kw: Any) -> Any:
        if res is PODS and namespace == ns:
            if quota["full"]:
                attempts["refused"] += 1
                raise ApiError(403, "Forbidden", 'pods "x" is forbidden: exceeded quota')
            attempts["allowed"] += 1
        return real_create(self, res, namespace, body, **kw)

    mocker.patch.object(KubeClient, "create", create)
    kube.create(ASCENDJOBS, ns, pytorch_job("big", workers=WORKERS))
    wait_event(kube, ns, "big", "FailedCreatePod")
    # Each retry's first batch is one pod: a refusing server costs one request per attempt,
    # never the job's 41. How many attempts (with back-off) fit before the Event is seen
    # depends on the machine's load, but a controller without batches would have been
    # refused 41 times by the end of its first attempt.
    refused = attempts["refused"]
    assert 1 <= refused < WORKERS + 1, attempts

    quota["full"] = False
    pods = wait_pods(kube, ns, "big", WORKERS + 1)
    assert len(pods) == WORKERS + 1
    # Batches of 1, 2, 4, 8, 16, then 10: every pod created once, no duplicate attempt.
    assert attempts["allowed"] == WORKERS + 1, attempts

"""The pods are created by the reconcile that creates their Service, with the ClusterIP from
the create response, not one watch round trip later (issue 12, P2)."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.kube.client import ASCENDJOBS, SERVICES, KubeClient
from ascendjob_controller.reconciler import JobReconciler
from tests.integration.controller.helpers import (
    fresh_namespace,
    make_client,
    pytorch_job,
    wait_pods,
)

pytestmark = pytest.mark.integration


def test_service_and_pods_in_one_reconcile(
    bare_cluster: Any, controller: AscendJobController, mocker: MockerFixture
) -> None:
    numbers = itertools.count(1)
    current: dict[str, int] = {}  # job key -> its reconcile in progress (never two at once)
    created: list[tuple[int, str, str]] = []  # (reconcile number, kind, name)
    held_back, create = JobReconciler._held_back, JobReconciler._create

    def counted_reconcile(self: JobReconciler, key: str, *args: Any) -> Any:
        current[key] = next(numbers)  # the first step of every reconcile of an existing job
        return held_back(self, key, *args)

    def recorded_create(self: JobReconciler, job: Any, body: Any, *args: Any, **kw: Any) -> Any:
        key = f"{job['metadata']['namespace']}/{job['metadata']['name']}"
        created.append((current[key], body["kind"], body["metadata"]["name"]))
        return create(self, job, body, *args, **kw)

    mocker.patch.object(JobReconciler, "_held_back", counted_reconcile)
    mocker.patch.object(JobReconciler, "_create", recorded_create)
    kube: KubeClient = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    kube.create(ASCENDJOBS, ns, pytorch_job("together", workers=2))
    pods = wait_pods(kube, ns, "together", 3)

    by_kind = {kind: {n for n, k, _ in created if k == kind} for kind in ("Service", "Pod")}
    assert len(by_kind["Service"]) == 1 and by_kind["Pod"] == by_kind["Service"], created
    # ...and they carry the Service's real ClusterIP.
    service = kube.get(SERVICES, ns, "together-master-0")
    ip = service["spec"]["clusterIP"]
    worker = pods["together-worker-0"]
    env = {e["name"]: e.get("value") for e in worker["spec"]["containers"][0]["env"]}
    assert env["MASTER_ADDR"] == ip

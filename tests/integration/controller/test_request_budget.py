"""API cost of one job: a bounded number of writes, no reads, and no status-write loop.

Own module, so its cluster serves nothing but this controller and this test. The test follows
the job through the controller's informer cache, not the API, so every request counted after
the job is created (other than the test's own pod-status writes) is the controller's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.kube.client import ASCENDJOBS, KubeClient
from tests.integration.controller.conftest import start_controller
from tests.integration.controller.helpers import (
    Kubelet,
    pytorch_job,
    reconcile_total,
    reconciles,
    sample,
    state_of,
    wait_for,
)

pytestmark = pytest.mark.integration

NS = "default"
WRITES = ("create", "update", "patch", "delete")
READS = ("get", "list")


@pytest.fixture(scope="module")
def ctl(bare_cluster: Any) -> Iterator[AscendJobController]:
    controller = start_controller(bare_cluster)
    wait_for(controller.has_synced, "the informers to sync")
    yield controller
    controller.stop(10.0)


def _counts(cluster: Any) -> dict[str, int]:
    return {verb: cluster.request_count(verb) for verb in WRITES + READS}


def _cached_state(ctl: AscendJobController, name: str) -> str | None:
    job = ctl.jobs.store.get(f"{NS}/{name}")
    return state_of((job or {}).get("status") or {}) if job else None


def _cached_pods(ctl: AscendJobController, name: str) -> dict[str, dict[str, Any]]:
    pods = ctl.pods.store.by_index("job", f"{NS}/{name}")
    return {p["metadata"]["name"]: p for p in pods}


@pytest.mark.local_only(
    "counts from the embedded server's request log; kube-apiserver's counters also count "
    "kube-controller-manager and the test's own requests"
)
def test_created_to_succeeded_request_budget_and_no_loop(
    bare_cluster: Any, kube: KubeClient, kubelet: Kubelet, ctl: AscendJobController
) -> None:
    before = _counts(bare_cluster)
    status_before = bare_cluster.request_count("patch", "ascendjobs/status")
    kube.create(ASCENDJOBS, NS, pytorch_job("budget", workers=1))
    pods = wait_for(lambda: len(p := _cached_pods(ctl, "budget")) == 2 and p, "2 pods cached")
    wait_for(lambda: _cached_state(ctl, "budget") == "Created", "Created")
    kubelet.run_all(pods)
    wait_for(lambda: _cached_state(ctl, "budget") == "Running", "Running")
    kubelet.succeed_all(pods)
    wait_for(lambda: _cached_state(ctl, "budget") == "Succeeded", "Succeeded")
    # The cache now holds the controller's last status write; once a reconcile that began from
    # it (the follow-up to that write's watch event) has returned, every request that follow-up
    # was going to make has been made. No request to the API: those would be counted.
    done = reconciles(ctl)
    done.wait_cache_reconciled(f"{NS}/budget")
    ctl.recorder.flush(10.0)
    after = _counts(bare_cluster)

    used = {verb: after[verb] - before[verb] for verb in after}
    test_writes = {"create": 1, "patch": 4}  # the job, and 2 pods x (Running, Succeeded)
    controller = {verb: used[verb] - test_writes.get(verb, 0) for verb in used}

    status_writes = bare_cluster.request_count("patch", "ascendjobs/status") - status_before
    print("controller requests:", controller, "status writes:", status_writes)
    # The bound, stated: creates = 1 Service + 2 pods; status writes = the first status
    # (Created) plus at most one per pod phase change the test made (4); events = one per
    # reason per plan: SuccessfulCreateService, SuccessfulCreatePod naming both pods (they are
    # created in the Service's reconcile), and JobSucceeded. Nothing is deleted
    # (cleanPodPolicy None) and nothing is read: the reconciler works from its caches.
    creates, needed_status, events = 3, 1 + 4, 2 + 1
    assert controller["get"] == 0 and controller["list"] == 0, controller
    assert controller["delete"] == 0, controller
    assert status_writes <= needed_status, status_writes
    assert bare_cluster.request_count("create", "pods") == 2
    assert bare_cluster.request_count("create", "services") == 1
    total_writes = sum(controller[v] for v in WRITES)
    assert total_writes <= creates + needed_status + events, controller

    # No loop: once finished, the job costs nothing more. Reconcile it again three times (as
    # any later event would) and wait for those reconciles: none may send a request.
    quiet_from = sum(bare_cluster.request_count(v) for v in WRITES + READS)
    reconciled_from = reconcile_total()
    for _ in range(3):
        finished = done.count(f"{NS}/budget")
        ctl.queue.add(f"{NS}/budget")
        done.wait_count(f"{NS}/budget", finished + 1)
    done.wait_cache_reconciled(f"{NS}/budget")
    ctl.recorder.flush(10.0)
    quiet_to = sum(bare_cluster.request_count(v) for v in WRITES + READS)
    assert reconcile_total() - reconciled_from >= 3, "controller_runtime_reconcile_total moved"
    assert quiet_to == quiet_from, "requests kept coming after the job finished"
    assert _cached_state(ctl, "budget") == "Succeeded"


def _conflicts(cluster: Any) -> float:
    host = f"127.0.0.1:{cluster.port}"
    return sample("rest_client_requests_total", {"code": "409", "method": "PATCH", "host": host})


def test_pod_bursts_do_not_replan_from_a_stale_job(
    bare_cluster: Any, kube: KubeClient, kubelet: Kubelet, ctl: AscendJobController
) -> None:
    """Pod events landing between our status write and its watch event must not make us
    write again from the stale cached job (a certain 409 and a wasted request)."""
    conflicts_before = _conflicts(bare_cluster)
    errors_before = sample("controller_runtime_reconcile_errors_total", {"controller": "ascendjob"})
    kube.create(ASCENDJOBS, NS, pytorch_job("burst", workers=8))
    pods = wait_for(lambda: len(p := _cached_pods(ctl, "burst")) == 9 and p, "9 pods cached")
    for _ in range(2):
        kubelet.run_all(pods)
    wait_for(lambda: _cached_state(ctl, "burst") == "Running", "Running")
    kubelet.succeed_all(pods)
    wait_for(lambda: _cached_state(ctl, "burst") == "Succeeded", "Succeeded")
    assert _conflicts(bare_cluster) - conflicts_before == 0
    errors = sample("controller_runtime_reconcile_errors_total", {"controller": "ascendjob"})
    assert errors - errors_before == 0

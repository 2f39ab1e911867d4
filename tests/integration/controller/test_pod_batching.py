"""A live pod's progress syncs its job within `--pod-batch-period`; a failure at once.

The Kubernetes Job controller syncs a job at most once per second for pod events. Ours
batches only the kubelet's way up (bound, an IP, devices, Running: `pod_view.progress_only`),
which can move counts, the Running state and the rank table but never calls for an action.
A failed pod is synced at once, so its replacement waits for no batch (P4). Followed through
the API, so it holds on both servers.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.kube.client import ASCENDJOBS, KubeClient
from tests.integration.controller.helpers import (
    Kubelet,
    batched,
    fresh_namespace,
    make_client,
    pytorch_job,
    reconciles,
    status_of,
    wait_for,
    wait_pods,
    wait_recreated,
    wait_state,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def short_batch(bare_cluster: Any) -> Iterator[AscendJobController]:
    ctl = batched(bare_cluster, 0.3)
    yield ctl
    ctl.stop(10.0)


def created_job(kube: KubeClient, ns: str) -> dict[str, dict[str, Any]]:
    kube.create(ASCENDJOBS, ns, pytorch_job("b", workers=1, policy="ExitCode"))
    pods = wait_pods(kube, ns, "b", 2)
    wait_state(kube, ns, "b", "Created")
    return pods


def state(kube: KubeClient, ns: str) -> str:
    conditions = status_of(kube, ns, "b").get("conditions") or []
    return str(conditions[-1]["type"]) if conditions else ""


def test_progress_waits_for_the_batch(
    bare_cluster: Any, long_batch: AscendJobController, kubelet: Kubelet
) -> None:
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    pods = created_job(kube, ns)
    seen = reconciles(long_batch).count(f"{ns}/b")
    for pod in pods.values():
        kubelet.running(pod)

    def cached_phase(name: str) -> Any:
        return ((long_batch.pods.store.get(f"{ns}/{name}") or {}).get("status") or {}).get("phase")

    wait_for(
        lambda: all(cached_phase(name) == "Running" for name in pods),
        "the controller's cache to hold both pods Running",
    )
    time.sleep(1.0)  # what an immediate sync would have needed, several times over
    assert reconciles(long_batch).count(f"{ns}/b") == seen
    assert state(kube, ns) == "Created"

    # A failure is synced at once, and that sync sees the progress too.
    old = pods["b-worker-0"]
    kubelet.failed(old, 137)  # SIGKILL: ExitCode retries it
    wait_recreated(kube, ns, "b", "b-worker-0", old["metadata"]["uid"])
    assert status_of(kube, ns, "b").get("restartCount") == 1


def test_progress_is_synced_within_the_period(
    bare_cluster: Any, short_batch: AscendJobController, kubelet: Kubelet
) -> None:
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    pods = created_job(kube, ns)
    for pod in pods.values():
        kubelet.running(pod)
    wait_state(kube, ns, "b", "Running")
    for rtype in ("Master", "Worker"):
        assert status_of(kube, ns, "b")["replicaStatuses"][rtype].get("active") == 1

"""What the controller did itself syncs its job within `--pod-batch-period`; the rest at once.

The echo of our own status write, and the events of the children we created or deleted, are
what the plan that wrote them expected. The Kubernetes Job controller batches such syncs
(a Job update whose generation did not move, every pod event). Ours batches them too, so a
real kube-apiserver's events, which arrive apart, cost fewer reconciles. A spec change, a
child nobody expected, and any event a held-back reconcile waits for are synced at once.
Followed through the API, so it holds on both servers.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.kube.client import ASCENDJOBS, KubeClient
from ascendjob_controller.reconciler import expectation_key
from tests.integration.controller.helpers import (
    fresh_namespace,
    make_client,
    pytorch_job,
    reconciles,
    wait_for,
    wait_pods,
    wait_state,
)

pytestmark = pytest.mark.integration


def cached(ctl: AscendJobController, ns: str, pods: dict[str, Any]) -> bool:
    """The controller's caches hold the pods and the job's Created status."""
    job = ctl.jobs.store.get(f"{ns}/b") or {}
    conditions = (job.get("status") or {}).get("conditions") or []
    return bool(conditions) and all(ctl.pods.store.get(f"{ns}/{name}") for name in pods)


def created(cluster: Any, ctl: AscendJobController) -> tuple[KubeClient, str]:
    """A client, and a fresh namespace holding job `b` Created, its pods in `ctl`'s caches."""
    kube = make_client(cluster)
    ns = fresh_namespace(kube)
    kube.create(ASCENDJOBS, ns, pytorch_job("b", workers=1))
    pods = wait_pods(kube, ns, "b", 2)
    wait_state(kube, ns, "b", "Created")
    wait_for(lambda: cached(ctl, ns, pods), "the caches to hold the pods and the status")
    return kube, ns


def annotate(kube: KubeClient, ns: str, value: str) -> None:
    """A metadata-only update of the job, as a user's `kubectl annotate`: same generation."""
    kube.patch(ASCENDJOBS, ns, "b", {"metadata": {"annotations": {"example.com/note": value}}})


def test_our_own_writes_wait_for_the_batch(
    bare_cluster: Any, long_batch: AscendJobController
) -> None:
    kube, ns = created(bare_cluster, long_batch)
    annotate(kube, ns, "1")
    time.sleep(1.0)  # what an immediate sync would have needed, several times over
    # One reconcile created the Service and the pods and wrote Created; the echo of that
    # write, the three children's ADDED events and the annotation all wait for the batch.
    assert reconciles(long_batch).count(f"{ns}/b") == 1

    # A spec change is synced at once: scaling up creates the new worker.
    kube.patch(ASCENDJOBS, ns, "b", {"spec": {"replicaSpecs": {"Worker": {"replicas": 2}}}})
    wait_pods(kube, ns, "b", 3)
    # The new pod is on the server before the reconcile that created it returns and counts.
    wait_for(lambda: reconciles(long_batch).count(f"{ns}/b") >= 2, "the scale-up's reconcile")
    assert reconciles(long_batch).count(f"{ns}/b") == 2


def test_the_event_a_held_back_reconcile_waits_for_is_synced_at_once(
    bare_cluster: Any, long_batch: AscendJobController
) -> None:
    kube, ns = created(bare_cluster, long_batch)
    key = f"{ns}/b"
    seen = reconciles(long_batch).count(key)

    # A create of this job's whose event has not come yet: its reconciles are held back.
    pending = expectation_key("Pod", f"{ns}/b-worker-9")
    long_batch.expectations.expect_creations(key, [pending])
    long_batch.queue.add(key)
    wait_for(lambda: reconciles(long_batch).count(key) == seen + 1, "the held-back reconcile")
    assert not long_batch.expectations.satisfied(key)
    long_batch.expectations.creation_observed(key, pending)

    # The job's next event, though one that could wait, is synced at once...
    annotate(kube, ns, "1")
    wait_for(lambda: reconciles(long_batch).count(key) == seen + 2, "a sync at once")
    # ...and only that one: the next such event waits for the batch again.
    annotate(kube, ns, "2")
    time.sleep(1.0)
    assert reconciles(long_batch).count(key) == seen + 2

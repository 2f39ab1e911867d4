"""A relist that shows a child replaced under its own name meets both expectations.

A failed pod's replacement has the failed pod's name. When the pod watch is down while the
controller deletes the one and creates the other, the relist that follows shows the pair as
one update of `<job>-worker-0` with a new uid, as client-go's informers show it too. That is a
deletion and a creation: were it taken for an update, the expectations waiting for both would
hold the job back until they expire (five minutes), as a chaos run found. The test plays the
controller's part (expectations, then the delete and the create) while the pod watch is
failed, then lets the informer relist.

The local cluster's faults take the watch down, so this runs there only.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.kube.client import ASCENDJOBS, PODS, KubeClient
from ascendjob_controller.reconciler import expectation_key
from tests.integration.controller.helpers import (
    fresh_namespace,
    pytorch_job,
    wait_for,
    wait_pods,
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.local_only("takes the pod watch down with the local cluster's faults"),
]


@pytest.fixture
def cluster(bare_cluster: Any) -> Iterator[Any]:
    yield bare_cluster
    bare_cluster.faults.clear()


def take_watch_down(cluster: Any, resource: str) -> None:
    """Refuse `resource`'s watches and LISTs, end the open watch, and wait until the informer's
    next try is refused: its stream has ended by then, so it sees nothing from now on."""

    def tries() -> int:
        return cluster.request_count("watch", resource) + cluster.request_count("list", resource)

    before = tries()
    cluster.faults.fail("watch", resource)
    cluster.faults.fail("list", resource)
    cluster.faults.drop_watches()
    wait_for(lambda: tries() > before, what=f"the {resource} informer's next try refused")


def bring_watch_back(cluster: Any, resource: str) -> None:
    """Serve `resource` again; its next watch gets a 410, so the informer relists either way."""
    cluster.faults.clear(then_expire=resource)


def cached_uid(informer: Any, key: str) -> str | None:
    """The uid of the object `informer` caches under `key`, None when it caches none."""
    return ((informer.store.get(key) or {}).get("metadata") or {}).get("uid")


def replacement(pod: dict[str, Any]) -> dict[str, Any]:
    """A new pod under `pod`'s name, as the controller creates a failed pod's replacement."""
    meta = pod["metadata"]
    keep = ("name", "namespace", "labels", "annotations", "ownerReferences")
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {k: meta[k] for k in keep if k in meta},
        "spec": pod["spec"],
    }


def test_a_child_replaced_while_the_watch_was_down_meets_both_expectations(
    kube: KubeClient, controller: AscendJobController, cluster: Any
) -> None:
    ns = fresh_namespace(kube)
    kube.create(ASCENDJOBS, ns, pytorch_job("r"))
    pods = wait_pods(kube, ns, "r", 2)
    old = pods["r-worker-0"]
    job_key, child = f"{ns}/r", expectation_key("Pod", f"{ns}/r-worker-0")
    wait_for(
        lambda: (
            controller.pods.store.get(f"{ns}/r-worker-0")
            and controller.expectations.satisfied(job_key)
        ),
        what="the pods cached and nothing expected",
    )

    take_watch_down(cluster, "pods")
    controller.expectations.expect_deletions(job_key, [child])
    kube.delete(PODS, ns, "r-worker-0", grace_period_seconds=0)
    controller.expectations.expect_creations(job_key, [child])
    new = kube.create(PODS, ns, replacement(old))
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert cached_uid(controller.pods, f"{ns}/r-worker-0") == old["metadata"]["uid"]

    bring_watch_back(cluster, "pods")
    wait_for(
        lambda: cached_uid(controller.pods, f"{ns}/r-worker-0") == new["metadata"]["uid"],
        what="the relist caching the replacement",
    )
    wait_for(
        lambda: controller.expectations.satisfied(job_key),
        what="the deletion and the creation observed",
        timeout=10.0,
    )
    assert controller.expectations.pending(job_key) == (frozenset(), frozenset())


def test_a_job_replaced_while_the_watch_was_down_starts_afresh(
    kube: KubeClient, controller: AscendJobController, cluster: Any
) -> None:
    """The same for a job deleted and created again under its name: the old job's records go
    (a create it still expected would hold the new job back), and the new job is planned."""
    ns = fresh_namespace(kube)
    old = kube.create(ASCENDJOBS, ns, pytorch_job("j"))
    wait_pods(kube, ns, "j", 2)
    job_key = f"{ns}/j"
    wait_for(lambda: controller.expectations.satisfied(job_key), what="nothing expected")

    take_watch_down(cluster, "ascendjobs")
    # The old job's last reconcile created a pod whose ADDED the controller never saw.
    controller.expectations.expect_creations(job_key, [expectation_key("Pod", f"{ns}/j-x")])
    kube.delete(ASCENDJOBS, ns, "j")
    new = kube.create(ASCENDJOBS, ns, pytorch_job("j"))
    assert new["metadata"]["uid"] != old["metadata"]["uid"]

    bring_watch_back(cluster, "ascendjobs")
    wait_for(
        lambda: cached_uid(controller.jobs, job_key) == new["metadata"]["uid"],
        what="the relist caching the new job",
    )
    wait_for(
        lambda: (
            {
                ref["uid"]
                for pod in kube.list(PODS, ns)["items"]
                for ref in pod["metadata"].get("ownerReferences") or []
            }
            == {new["metadata"]["uid"]}
            and len(kube.list(PODS, ns)["items"]) == 2
        ),
        what="the new job's pods, and none of the old one's",
        timeout=20.0,
    )

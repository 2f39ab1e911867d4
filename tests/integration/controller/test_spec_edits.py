"""Edits to a running job's spec, end to end: the children follow the new spec."""

from __future__ import annotations

import pytest

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.kube.client import ASCENDJOBS, PODGROUPS, SERVICES, KubeClient
from tests.integration.controller.helpers import (
    Kubelet,
    condition,
    fresh_namespace,
    podgroup_of,
    pods_of,
    pytorch_job,
    wait_event,
    wait_for,
    wait_pods,
    wait_state,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def ns(kube: KubeClient, controller: AscendJobController) -> str:
    return fresh_namespace(kube)


def test_spec_edited_invalid_while_running_fails_and_cleans_up(
    kube: KubeClient, kubelet: Kubelet, ns: str, controller: AscendJobController
) -> None:
    job = pytorch_job(
        "inv", workers=2, scheduler="volcano", run_policy={"cleanPodPolicy": "Running"}
    )
    created = kube.create(ASCENDJOBS, ns, job)
    group = wait_for(lambda: podgroup_of(kube, ns, created), "the PodGroup")
    group["status"] = {"phase": "Inqueue"}
    kube.update_status(PODGROUPS, ns, group)
    pods = wait_pods(kube, ns, "inv", 3)
    kubelet.run_all(pods)
    wait_state(kube, ns, "inv", "Running")
    kubelet.succeeded(pods["inv-worker-1"])
    # The pod and job watches are two streams: the spec edit below may reach the controller
    # first, and a Worker it still caches as Running is one that cleanPodPolicy deletes.
    wait_for(
        lambda: (
            ((controller.pods.store.get(f"{ns}/inv-worker-1") or {}).get("status") or {}).get(
                "phase"
            )
            == "Succeeded"
        ),
        "the controller to see the Worker succeed",
    )

    # Schema-valid, semantically invalid: the leader must have exactly one replica.
    kube.patch(ASCENDJOBS, ns, "inv", {"spec": {"replicaSpecs": {"Master": {"replicas": 2}}}})
    status = wait_state(kube, ns, "inv", "Failed")
    failed = condition(status, "Failed")
    assert failed is not None and failed["reason"] == "JobValidFailed"
    assert failed["message"].startswith("InvalidReplicaSpec:")
    wait_event(kube, ns, "inv", "InvalidReplicaSpec")
    # cleanPodPolicy Running: the running pods go, the succeeded one stays; so do the
    # leader Service and (always, on finish) the PodGroup.
    wait_for(lambda: set(pods_of(kube, ns, "inv")) == {"inv-worker-1"}, "running pods deleted")
    wait_for(lambda: podgroup_of(kube, ns, created) is None, "the PodGroup deleted")
    wait_for(lambda: not kube.list(SERVICES, ns)["items"], "the Service deleted")


def test_scaling_workers_updates_the_podgroup_min_member(
    kube: KubeClient, kubelet: Kubelet, ns: str
) -> None:
    created = kube.create(ASCENDJOBS, ns, pytorch_job("scg", workers=2, scheduler="volcano"))
    group = wait_for(lambda: podgroup_of(kube, ns, created), "the PodGroup")
    assert group["spec"]["minMember"] == 3
    group["status"] = {"phase": "Inqueue"}
    kube.update_status(PODGROUPS, ns, group)
    pods = wait_pods(kube, ns, "scg", 3)
    kubelet.run_all(pods)
    wait_state(kube, ns, "scg", "Running")

    def min_member() -> object:
        current = podgroup_of(kube, ns, created)
        return None if current is None else current["spec"].get("minMember")

    kube.patch(ASCENDJOBS, ns, "scg", {"spec": {"replicaSpecs": {"Worker": {"replicas": 4}}}})
    wait_for(lambda: min_member() == 5, "minMember 5 after scaling to 4 workers")
    wait_pods(kube, ns, "scg", 5)
    kube.patch(ASCENDJOBS, ns, "scg", {"spec": {"replicaSpecs": {"Worker": {"replicas": 1}}}})
    wait_for(lambda: min_member() == 2, "minMember 2 after scaling to 1 worker")
    resources = podgroup_of(kube, ns, created)["spec"]["minResources"]  # type: ignore[index]
    assert resources == {"huawei.com/Ascend910": "2"}

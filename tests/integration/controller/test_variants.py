"""Less travelled shapes of a job: other frameworks, odd keys, zero workers, re-used names."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.kube.client import (
    ASCENDJOBS,
    CONFIGMAPS,
    PODS,
    SERVICES,
    KubeClient,
    is_not_found,
)
from tests.integration.controller.helpers import (
    JOB_LABEL,
    Kubelet,
    container,
    fresh_namespace,
    pods_of,
    pytorch_job,
    replica,
    status_of,
    wait_for,
    wait_pods,
    wait_state,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def ns(kube: KubeClient, controller: AscendJobController) -> str:
    return fresh_namespace(kube)


def _env(pod: dict[str, Any]) -> dict[str, Any]:
    return {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}


def _service_exists(kube: KubeClient, ns: str, name: str) -> bool:
    try:
        kube.get(SERVICES, ns, name)
    except Exception as err:
        if is_not_found(err):
            return False
        raise
    return True


def test_mindspore_workers_only(kube: KubeClient, kubelet: Kubelet, ns: str) -> None:
    job = {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": "ms", "labels": {"framework": "mindspore"}},
        "spec": {"replicaSpecs": {"Worker": replica(2)}},
    }
    kube.create(ASCENDJOBS, ns, job)
    pods = wait_pods(kube, ns, "ms", 2)
    env = _env(pods["ms-worker-1"])
    assert env["MS_ROLE"] == "MS_WORKER"
    assert env["MS_WORKER_NUM"] == "2"
    kubelet.run_all(pods)
    kubelet.succeed_all(pods)
    wait_state(kube, ns, "ms", "Succeeded")


def test_tensorflow_chief_and_workers(kube: KubeClient, kubelet: Kubelet, ns: str) -> None:
    job = {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": "tf", "labels": {"framework": "tensorflow"}},
        "spec": {"replicaSpecs": {"Chief": replica(1), "Worker": replica(2)}},
    }
    kube.create(ASCENDJOBS, ns, job)
    pods = wait_pods(kube, ns, "tf", 3)
    assert (
        _env(pods["tf-worker-0"])["CM_CHIEF_IP"]
        == (kube.get(SERVICES, ns, "tf-chief-0")["spec"]["clusterIP"])
    )
    kubelet.run_all(pods)
    kubelet.succeed_all(pods)
    status = wait_state(kube, ns, "tf", "Succeeded")
    assert set(status["replicaStatuses"]) == {"Chief", "Worker"}


def test_replica_type_keys_any_case(kube: KubeClient, kubelet: Kubelet, ns: str) -> None:
    job = pytorch_job("case")
    specs = job["spec"]["replicaSpecs"]
    job["spec"]["replicaSpecs"] = {"master": specs["Master"], "WORKER": specs["Worker"]}
    kube.create(ASCENDJOBS, ns, job)
    pods = wait_pods(kube, ns, "case", 2)
    assert sorted(pods) == ["case-master-0", "case-worker-0"]
    kubelet.run_all(pods)
    kubelet.succeed_all(pods)
    status = wait_state(kube, ns, "case", "Succeeded")
    assert set(status["replicaStatuses"]) == {"Master", "Worker"}


def test_zero_workers(kube: KubeClient, kubelet: Kubelet, ns: str) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job("zero", workers=0))
    pods = wait_pods(kube, ns, "zero", 1)
    assert list(pods) == ["zero-master-0"]
    kubelet.run_all(pods)
    kubelet.succeed_all(pods)
    wait_state(kube, ns, "zero", "Succeeded")


def test_clean_pod_policy_all_on_success(kube: KubeClient, kubelet: Kubelet, ns: str) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job("ca", run_policy={"cleanPodPolicy": "All"}))
    pods = wait_pods(kube, ns, "ca", 2)
    kubelet.run_all(pods)
    kubelet.succeed_all(pods)
    wait_state(kube, ns, "ca", "Succeeded")
    wait_for(lambda: not pods_of(kube, ns, "ca"), "every pod deleted")
    wait_for(lambda: not _service_exists(kube, ns, "ca-master-0"), "the Service deleted")


def test_same_name_job_recreated_gets_fresh_pods(
    kube: KubeClient, kubelet: Kubelet, ns: str
) -> None:
    first = kube.create(ASCENDJOBS, ns, pytorch_job("again"))
    wait_pods(kube, ns, "again", 2)
    kube.delete(ASCENDJOBS, ns, "again", propagation_policy="Background")
    wait_for(lambda: status_of(kube, ns, "again") == {}, "the first job gone")
    second = kube.create(ASCENDJOBS, ns, pytorch_job("again"))
    assert second["metadata"]["uid"] != first["metadata"]["uid"]

    def owned_by_second() -> dict[str, Any] | None:
        pods = {
            n: p
            for n, p in pods_of(kube, ns, "again").items()
            if p["metadata"]["ownerReferences"][0]["uid"] == second["metadata"]["uid"]
        }
        return pods if len(pods) == 2 else None

    pods = wait_for(owned_by_second, "pods owned by the second job")
    kubelet.run_all(pods)
    kubelet.succeed_all(pods)
    wait_state(kube, ns, "again", "Succeeded")


def test_template_env_is_left_alone(kube: KubeClient, ns: str) -> None:
    job = pytorch_job("te")
    worker = container()
    worker["env"] = [{"name": "MASTER_PORT", "value": "9999"}, {"name": "RANK", "value": "7"}]
    job["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"] = [worker]
    kube.create(ASCENDJOBS, ns, job)
    pods = wait_pods(kube, ns, "te", 2)
    env = _env(pods["te-worker-0"])
    assert env["MASTER_PORT"] == "9999" and env["RANK"] == "7"
    assert env["WORLD_SIZE"] == "2"


def test_adoption_keeps_other_owner_references(kube: KubeClient, ns: str) -> None:
    holder = kube.create(CONFIGMAPS, ns, {"metadata": {"name": "holder"}})
    other = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "holder",
        "uid": holder["metadata"]["uid"],
    }
    kube.create(
        PODS,
        ns,
        {
            "metadata": {
                "name": "keep-worker-0",
                "labels": {JOB_LABEL: "keep"},
                "ownerReferences": [other],
            },
            "spec": {"containers": [{"name": "ascend", "image": "x"}]},
        },
    )
    job = kube.create(ASCENDJOBS, ns, pytorch_job("keep"))

    def controlled() -> list[dict[str, Any]] | None:
        refs = kube.get(PODS, ns, "keep-worker-0")["metadata"].get("ownerReferences") or []
        return refs if any(r.get("controller") for r in refs) else None

    refs = wait_for(controlled, "keep-worker-0 adopted")
    by_uid = {r["uid"]: r for r in refs}
    assert set(by_uid) == {holder["metadata"]["uid"], job["metadata"]["uid"]}
    assert not by_uid[holder["metadata"]["uid"]].get("controller")


def test_a_job_being_deleted_adopts_nothing(kube: KubeClient, ns: str) -> None:
    job = pytorch_job("gone")
    job["metadata"]["finalizers"] = ["example.com/hold"]
    kube.create(ASCENDJOBS, ns, job)
    wait_pods(kube, ns, "gone", 2)
    kube.delete(ASCENDJOBS, ns, "gone")  # held by the finalizer: deletionTimestamp set
    orphan = kube.create(
        PODS,
        ns,
        {
            "metadata": {"name": "gone-worker-1", "labels": {JOB_LABEL: "gone"}},
            "spec": {"containers": [{"name": "ascend", "image": "x"}]},
        },
    )
    threading.Event().wait(1.0)  # time for a wrong adoption to show
    pod = kube.get(PODS, ns, "gone-worker-1")
    assert pod["metadata"]["resourceVersion"] == orphan["metadata"]["resourceVersion"]
    assert not pod["metadata"].get("ownerReferences")
    kube.patch(ASCENDJOBS, ns, "gone", {"metadata": {"finalizers": None}})
    wait_for(lambda: status_of(kube, ns, "gone") == {}, "the job gone")

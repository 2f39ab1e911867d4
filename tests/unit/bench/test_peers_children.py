"""The peers make the pods and Service our controller makes, and the bench checks every pod.

A pod without the Ascend and torch variables would not train on an Ascend node, so a peer
that left them out would be measured doing less than the job needs. `lifecycle.pod_body`
(standard library only, so the perfect client stays a bare client) writes them on its own;
these tests hold it to `ascendjob_controller.job.desired`, and show that `bench_peers`
refuses a pod that drifts from ours.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ascendjob_controller.job.desired import desired_pod, desired_service
from ascendjob_controller.job.env import parse_job_with_meta
from hack.bench_controller import ascendjob
from hack.bench_peers import _check_pods, _pod_differs
from hack.peers.lifecycle import owner_reference, pod_body, service_body

CLUSTER_IP = "10.96.0.17"


def stored_job(name: str = "job-00007") -> dict[str, Any]:
    job = ascendjob(name, 0)
    job["metadata"].update(namespace="bench", uid=f"uid-{name}")
    return job


@pytest.mark.parametrize(("rtype", "rank"), [("Master", "0"), ("Worker", "1")])
def test_a_peers_pod_carries_our_labels_annotations_and_env(rtype: str, rank: str) -> None:
    job = stored_job()
    ours = desired_pod(parse_job_with_meta(job), rtype, 0, CLUSTER_IP, gang=False)
    peers = pod_body(job, rtype, 0, CLUSTER_IP)
    assert peers["metadata"]["name"] == ours["metadata"]["name"]
    assert peers["metadata"]["labels"] == ours["metadata"]["labels"]
    assert peers["metadata"]["annotations"] == ours["metadata"]["annotations"]
    assert peers["metadata"]["annotations"]["hccl/rankIndex"] == rank
    env = peers["spec"]["containers"][0]["env"]
    assert env == ours["spec"]["containers"][0]["env"]
    values = {item["name"]: item.get("value") for item in env}
    assert values["MINDX_TASK_ID"] == "uid-job-00007"
    assert (values["MASTER_ADDR"], values["RANK"], values["WORLD_SIZE"]) == (CLUSTER_IP, rank, "2")
    assert peers["spec"]["restartPolicy"] == ours["spec"]["restartPolicy"] == "Never"


def test_a_peers_pod_keeps_the_templates_env_first_and_sets_ours_only_once() -> None:
    job = stored_job()
    container = job["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "RANK", "value": "mine"}, {"name": "FOO", "value": "bar"}]
    ours = desired_pod(parse_job_with_meta(job), "Worker", 0, CLUSTER_IP, gang=False)
    peers = pod_body(job, "Worker", 0, CLUSTER_IP)
    env = peers["spec"]["containers"][0]["env"]
    assert env == ours["spec"]["containers"][0]["env"]
    assert env[:2] == container["env"]
    assert [item["name"] for item in env].count("RANK") == 1


def test_the_peers_service_is_ours() -> None:
    job = stored_job()
    ours = desired_service(parse_job_with_meta(job))
    assert ours is not None
    peers = service_body(job)
    assert peers["metadata"]["labels"] == ours["metadata"]["labels"]
    assert peers["spec"] == ours["spec"]


def as_stored(pod: dict[str, Any], job: dict[str, Any]) -> dict[str, Any]:
    """The pod as the bed returns it: owned, with what the kubelet and kopf may add."""
    out = copy.deepcopy(pod)
    out["metadata"]["ownerReferences"] = [owner_reference(job)]
    out["metadata"]["labels"]["framework"] = "pytorch"  # kopf.adopt copies the owner's labels
    out["metadata"]["annotations"]["huawei.com/Ascend910"] = "Ascend910-0"  # the device plugin
    return out


def test_the_check_accepts_the_peers_pods() -> None:
    job = stored_job()
    pods = [as_stored(pod_body(job, rtype, 0, CLUSTER_IP), job) for rtype in ("Master", "Worker")]
    assert _check_pods(pods, {"job-00007": job}) == []


@pytest.mark.parametrize(
    ("spoil", "complaint"),
    [
        (lambda pod: pod["spec"]["containers"][0]["env"].pop(), "env"),
        (lambda pod: pod["metadata"]["annotations"].pop("hccl/rankIndex"), "annotations lack"),
        (lambda pod: pod["metadata"]["labels"].pop("group-name"), "labels lack"),
        (lambda pod: pod["spec"].update(restartPolicy="Always"), "restartPolicy"),
        (
            lambda pod: pod["metadata"]["labels"].pop("training.kubeflow.org/replica-index"),
            "name no",
        ),
        (
            lambda pod: pod["spec"]["containers"][0]["env"][5].update(value="master"),
            "is not a ClusterIP",
        ),
    ],
)
def test_the_check_refuses_a_pod_that_is_not_ours(spoil: Any, complaint: str) -> None:
    job = stored_job()
    pod = as_stored(pod_body(job, "Worker", 0, CLUSTER_IP), job)
    assert pod["spec"]["containers"][0]["env"][5]["name"] == "MASTER_ADDR"
    assert _pod_differs(pod, job) == ""
    spoil(pod)
    assert complaint in _pod_differs(pod, job)
    problems = _check_pods([pod], {"job-00007": job})
    assert any(complaint in problem for problem in problems)

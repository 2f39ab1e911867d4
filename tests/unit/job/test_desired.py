"""Desired children: names, labels, ownerReferences, Service ports, Volcano bits."""

from __future__ import annotations

import copy

import pytest

from ascendjob_controller.job import desired as d
from ascendjob_controller.job.env import parse_job_with_meta
from ascendjob_controller.job.types import parse_job

from .factories import UID, container, job, replica, sample_job

OWNER = {
    "apiVersion": "mindxdl.gitee.com/v1",
    "kind": "AscendJob",
    "name": "default-test-pytorch",
    "uid": UID,
    "controller": True,
    "blockOwnerDeletion": True,
}


def test_sample_pods() -> None:
    body = sample_job()
    before = copy.deepcopy(body)
    view = parse_job(body)
    assert list(d.desired_pod_names(view)) == [
        "default-test-pytorch-master-0",
        "default-test-pytorch-worker-0",
    ]
    master = d.desired_pod(view, "Master", 0, "10.0.0.1", gang=True)
    worker = d.desired_pod(view, "Worker", 0, "10.0.0.1", gang=True)
    assert body == before, "templates must be deep-copied"
    assert master["apiVersion"] == "v1" and master["kind"] == "Pod"
    assert master["metadata"]["name"] == "default-test-pytorch-master-0"
    assert master["metadata"]["namespace"] == "default"
    assert master["metadata"]["ownerReferences"] == [OWNER]
    assert master["metadata"]["labels"] == {
        "ring-controller.atlas": "ascend-910b",
        "group-name": "mindxdl.gitee.com",
        "training.kubeflow.org/job-name": "default-test-pytorch",
        "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/operator-name": "ascendjob-controller",
        "training.kubeflow.org/job-role": "master",
        "job-name": "default-test-pytorch",
        "replica-type": "master",
        "replica-index": "0",
    }
    assert "training.kubeflow.org/job-role" not in worker["metadata"]["labels"]
    assert worker["metadata"]["labels"]["replica-type"] == "worker"
    assert master["metadata"]["annotations"] == {
        "hccl/rankIndex": "0",
        "scheduling.k8s.io/group-name": f"default-test-pytorch-{UID}",
        "volcano.sh/task-spec": "master",
    }
    assert worker["metadata"]["annotations"]["hccl/rankIndex"] == "1"
    assert master["spec"]["schedulerName"] == "volcano"
    assert master["spec"]["restartPolicy"] == "Never"
    # The sample declares the port itself: not duplicated.
    assert master["spec"]["containers"][0]["ports"] == [
        {"containerPort": 2222, "name": "ascendjob-port"}
    ]
    env = {e["name"]: e for e in worker["spec"]["containers"][0]["env"]}
    assert env["MASTER_ADDR"]["value"] == "10.0.0.1"
    assert env["WORLD_SIZE"]["value"] == "4"
    assert "XDL_IP" in env and "valueFrom" in env["ASCEND_VISIBLE_DEVICES"]


def test_no_volcano_bits_without_gang() -> None:
    view = parse_job(job("pytorch"))
    pod = d.desired_pod(view, "Worker", 0, "1.2.3.4", gang=False)
    assert "schedulerName" not in pod["spec"]
    assert set(pod["metadata"]["annotations"]) == {"hccl/rankIndex"}
    assert d.gang_enabled(view, True) is False
    assert d.gang_enabled(parse_job(job("pytorch", scheduler="volcano")), True) is True
    assert d.gang_enabled(parse_job(job("pytorch", scheduler="volcano")), False) is False


@pytest.mark.parametrize(
    ("policy", "pod_policy"),
    [
        (None, "Never"),
        ("Never", "Never"),
        ("ExitCode", "Never"),
        ("OnFailure", "OnFailure"),
        ("Always", "Always"),
    ],
)
def test_pod_restart_policy_mapping(policy: str | None, pod_policy: str) -> None:
    view = parse_job(job("pytorch", policy=policy))
    assert d.desired_pod(view, "Worker", 0, "ip", gang=False)["spec"]["restartPolicy"] == pod_policy


def test_leader_gets_default_port_workers_do_not() -> None:
    view = parse_job(job("pytorch"))
    master = d.desired_pod(view, "Master", 0, "ip", gang=False)
    worker = d.desired_pod(view, "Worker", 0, "ip", gang=False)
    assert master["spec"]["containers"][0]["ports"] == [
        {"name": "ascendjob-port", "containerPort": 2222, "protocol": "TCP"}
    ]
    assert "ports" not in worker["spec"]["containers"][0]


def test_service() -> None:
    leader = container(2, ports=[{"name": "metrics", "containerPort": 9000}])
    view = parse_job(
        job("pytorch", {"Master": replica(1, containers=[leader]), "Worker": replica(2)})
    )
    svc = d.desired_service(view)
    assert svc is not None
    assert svc["metadata"]["name"] == "job1-master-0"
    assert svc["metadata"]["ownerReferences"][0]["uid"] == UID
    assert svc["metadata"]["labels"]["training.kubeflow.org/job-name"] == "job1"
    assert svc["spec"]["type"] == "ClusterIP"
    assert "clusterIP" not in svc["spec"]
    assert svc["spec"]["selector"] == {
        "training.kubeflow.org/job-name": "job1",
        "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/replica-index": "0",
    }
    assert svc["spec"]["ports"] == [
        {"name": "metrics", "port": 9000, "targetPort": 9000, "protocol": "TCP"},
        {"name": "ascendjob-port", "port": 2222, "targetPort": 2222, "protocol": "TCP"},
    ]
    # The selector matches the leader pod's labels.
    pod = d.desired_pod(view, "Master", 0, "ip", gang=False)
    assert svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items()


def test_no_service_without_leader() -> None:
    assert d.desired_service(parse_job(job("mindspore", {"Worker": replica(2)}))) is None


def test_podgroup() -> None:
    body = job(
        "pytorch",
        workers=3,
        scheduler="volcano",
        run_policy={
            "schedulingPolicy": {
                "queue": "q1",
                "priorityClass": "high",
                "minResources": {"cpu": "4"},
            }
        },
    )
    pg = d.desired_podgroup(parse_job(body))
    assert pg["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert pg["kind"] == "PodGroup"
    assert pg["metadata"]["name"] == f"job1-{UID}"
    assert pg["metadata"]["ownerReferences"][0]["controller"] is True
    assert pg["spec"] == {
        "minMember": 4,
        "minTaskMember": {"master": 1, "worker": 3},
        "queue": "q1",
        "priorityClassName": "high",
        "minResources": {"cpu": "4"},
    }
    sample = d.desired_podgroup(parse_job(sample_job()))
    assert sample["spec"] == {
        "minMember": 2,
        "minTaskMember": {"master": 1, "worker": 1},
        "queue": "default",
        "minResources": {"huawei.com/Ascend910": "4"},
    }


def test_podgroup_min_resources_cover_first_min_member_pods() -> None:
    leader = container(2)
    leader["resources"]["requests"]["cpu"] = "500m"
    worker = container(8)
    worker["resources"]["limits"]["memory"] = "1Gi"
    specs = {"Master": replica(1, containers=[leader]), "Worker": replica(4, containers=[worker])}
    body = job("pytorch", specs, run_policy={"schedulingPolicy": {"minAvailable": 3}})
    pg = d.desired_podgroup(parse_job(body))
    assert pg["spec"] == {
        "minMember": 3,
        "minTaskMember": {"master": 1, "worker": 4},
        "minResources": {
            "cpu": "0.5",
            "huawei.com/Ascend910": "18",
            "memory": str(2 * 2**30),
        },
    }
    no_requests = job("pytorch", {"Master": replica(1, npus=None)})
    assert "minResources" not in d.desired_podgroup(parse_job(no_requests))["spec"]


def test_template_labels_and_annotations_kept() -> None:
    spec = replica(1)
    spec["template"]["metadata"] = {"labels": {"app": "x"}, "annotations": {"a": "b"}}
    view = parse_job(job("pytorch", {"Master": spec}))
    pod = d.desired_pod(view, "Master", 0, "ip", gang=False)
    assert pod["metadata"]["labels"]["app"] == "x"
    assert pod["metadata"]["annotations"] == {"a": "b", "hccl/rankIndex": "0"}


def test_podgroup_min_task_member_per_type() -> None:
    body = job("mindspore", {"Worker": replica(5)}, scheduler="volcano")
    assert d.desired_podgroup(parse_job(body))["spec"]["minTaskMember"] == {"worker": 5}
    body = job("pytorch", {"Master": replica(1), "Worker": replica(0)}, scheduler="volcano")
    spec = d.desired_podgroup(parse_job(body))["spec"]
    assert (spec["minMember"], spec["minTaskMember"]) == (1, {"master": 1, "worker": 0})


OURS = {
    "training.kubeflow.org/job-name": "job1",
    "training.kubeflow.org/operator-name": "ascendjob-controller",
}


@pytest.mark.parametrize(
    ("labels", "annotations", "pg_labels", "pg_annotations"),
    [
        ({}, None, {"framework": "pytorch", **OURS}, None),
        (
            {"tor-affinity": "null", "training.kubeflow.org/job-name": "spoof"},
            {"sp-block": "16"},
            {"framework": "pytorch", "tor-affinity": "null", **OURS},
            {"sp-block": "16"},
        ),
        (
            {},
            {"recover-strategy": "recover,dump"},
            {"framework": "pytorch", **OURS, "process-recover-enable": "on"},
            {"recover-strategy": "recover,dump"},
        ),
        # Any recover-strategy annotation, even one we cannot read, as in MindCluster.
        (
            {},
            {"recover-strategy": ""},
            {"framework": "pytorch", **OURS, "process-recover-enable": "on"},
            {"recover-strategy": ""},
        ),
        (
            {},
            {"kubectl.kubernetes.io/last-applied-configuration": "{...}", "a": "b"},
            {"framework": "pytorch", **OURS},
            {"a": "b"},
        ),
        ({}, {"kubectl.kubernetes.io/last-applied-configuration": "{...}"}, None, None),
    ],
)
def test_podgroup_copies_job_metadata(
    labels: dict[str, str],
    annotations: dict[str, str] | None,
    pg_labels: dict[str, str] | None,
    pg_annotations: dict[str, str] | None,
) -> None:
    body = job("pytorch", scheduler="volcano")
    body["metadata"]["labels"].update(labels)
    if annotations is not None:
        body["metadata"]["annotations"] = annotations
    meta = d.desired_podgroup(parse_job_with_meta(body))["metadata"]
    assert meta["labels"] == (pg_labels or {"framework": "pytorch", **OURS})
    assert meta.get("annotations") == pg_annotations
    assert meta["name"] == f"job1-{UID}" and meta["namespace"] == "ns1"


def test_podgroup_of_a_plain_view_has_only_our_labels() -> None:
    body = job("pytorch", scheduler="volcano")
    body["metadata"]["annotations"] = {"recover-strategy": "recover"}
    meta = d.desired_podgroup(parse_job(body))["metadata"]
    assert meta["labels"] == OURS and "annotations" not in meta


def test_pod_metadata_does_not_take_the_job_metadata() -> None:
    """MindCluster copies the job's labels and annotations to the PodGroup only."""
    body = job("pytorch", scheduler="volcano")
    body["metadata"]["annotations"] = {"recover-strategy": "recover", "sp-block": "16"}
    pod = d.desired_pod(parse_job_with_meta(body), "Worker", 0, "ip", gang=True)
    assert "framework" not in pod["metadata"]["labels"]
    assert set(pod["metadata"]["annotations"]) == {
        "hccl/rankIndex",
        "scheduling.k8s.io/group-name",
        "volcano.sh/task-spec",
    }

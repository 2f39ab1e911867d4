"""plan(): table and scenario tests; the test plays kubelet on the pods."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ascendjob_controller.job.plan import (
    ChildRef,
    PlanOptions,
    plan,
)
from ascendjob_controller.job.types import format_time
from ascendjob_controller.job.validation import Problem

from .factories import UID, at, job, materialise, sample_job
from .world import World

M0, W0, W1 = "job1-master-0", "job1-worker-0", "job1-worker-1"


def reasons(world: World) -> list[str]:
    return [e.reason for e in world.history[-1].events]


def running_world(**kwargs: Any) -> World:
    """A job with Master + 2 Workers, all pods Running."""
    world = World(job(**kwargs))
    world.reconcile()  # Service
    world.reconcile()  # pods
    world.all_pods("Running")
    world.reconcile()
    assert world.state == "Running"
    return world


# --- the sample, end to end ---------------------------------------------------------------------
def test_sample_created_running_succeeded() -> None:
    world = World(sample_job())
    first = world.reconcile()
    assert [b["kind"] for b in first.creates] == ["Service", "PodGroup"]
    assert world.state == "Created"
    assert world.condition["reason"] == "PodGroupNotInitialized"
    assert "not created yet" in world.condition["message"]
    assert first.requeue_after is None

    second = world.reconcile()
    assert second.creates == ()
    assert world.condition["reason"] == "PodGroupNotInitialized"  # Volcano gave it no phase
    assert "volcano-scheduler" in world.condition["message"]
    world.admit_podgroup("Pending")
    world.reconcile()
    assert world.condition["reason"] == "PodGroupPending"
    assert "resource is not enough" in world.condition["message"]
    assert world.settle().status is None  # waiting does not loop

    world.admit_podgroup("Inqueue")
    third = world.reconcile()
    assert [b["metadata"]["name"] for b in third.creates] == [
        "default-test-pytorch-master-0",
        "default-test-pytorch-worker-0",
    ]
    assert world.state == "Created" and world.condition["reason"] == "JobCreated"
    env = {e["name"]: e.get("value") for e in third.creates[1]["spec"]["containers"][0]["env"]}
    assert env["MASTER_ADDR"] == "10.96.0.10" and env["RANK"] == "1"

    world.kubelet("default-test-pytorch-master-0", "Running")
    world.reconcile()
    assert world.state == "Created"
    world.kubelet("default-test-pytorch-worker-0", "Running")
    running = world.reconcile()
    assert world.state == "Running"
    assert running.previous_state == "Created" and running.state == "Running"
    status = world.job["status"]
    assert status["replicaStatuses"]["Master"]["active"] == 1
    assert status["replicaStatuses"]["Worker"]["active"] == 1

    world.all_pods("Succeeded", 0)
    world.now = at(100)
    done = world.reconcile()
    assert world.state == "Succeeded"
    assert world.condition["reason"] == "JobSucceeded"
    assert world.job["status"]["completionTime"] == format_time(at(100))
    assert [(c["type"], c["status"]) for c in world.job["status"]["conditions"]] == [
        ("Created", "True"),
        ("Running", "False"),
        ("Succeeded", "True"),
    ]
    assert [e.reason for e in done.events] == ["JobSucceeded"]
    # The PodGroup goes on finish; cleanPodPolicy None keeps the pods.
    assert [d.kind for d in done.deletes] == ["PodGroup"]
    assert world.job["status"]["replicaStatuses"]["Worker"]["succeeded"] == 1
    assert world.settle().events == ()


# --- creation order and readiness ----------------------------------------------------------------
def test_service_first_pods_wait_for_cluster_ip() -> None:
    body = job()
    first = plan(body, [], [], None, at(0))
    assert [b["kind"] for b in first.creates] == ["Service"]
    svc = materialise(first.creates[0])
    svc["spec"].pop("clusterIP")
    assert plan(body, [], [svc], None, at(0)).creates == ()
    svc["spec"]["clusterIP"] = "10.0.0.7"
    pods = plan(body, [], [svc], None, at(0)).creates
    assert [p["metadata"]["name"] for p in pods] == [M0, W0]
    assert all(p["kind"] == "Pod" for p in pods)


def test_no_gang_when_disabled() -> None:
    world = World(sample_job(), options=PlanOptions(gang_scheduling_enabled=False))
    world.reconcile()
    second = world.reconcile()
    assert world.podgroup is None
    assert len(second.creates) == 2
    assert "schedulerName" not in second.creates[0]["spec"]


def test_creates_carry_owner_refs_and_operator_name() -> None:
    world = World(job(), options=PlanOptions(operator_name="op-x"))
    world.reconcile()
    pods = world.reconcile().creates
    for body in pods:
        ref = body["metadata"]["ownerReferences"][0]
        assert (ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == (UID, True, True)
        assert body["metadata"]["labels"]["training.kubeflow.org/operator-name"] == "op-x"


# --- idle reconciles -------------------------------------------------------------------------
def test_noop_reconcile_writes_nothing() -> None:
    world = running_world(workers=2)
    world.now = at(3600)
    idle = world.plan()
    assert idle.status is None
    assert idle.creates == idle.deletes == idle.events == ()
    assert idle.state == idle.previous_state == "Running"


def test_plan_does_not_mutate_inputs() -> None:
    world = running_world(workers=2)
    world.kubelet(W0, "Failed", 137)
    frozen = copy.deepcopy(world.job), copy.deepcopy(world.pods)
    world.plan()
    assert (world.job, world.pods) == frozen


# --- validation --------------------------------------------------------------------------------
def test_invalid_job_fails_once_with_event_and_no_children() -> None:
    world = World(job("caffe"))
    first = world.reconcile()
    assert first.creates == ()
    assert world.state == "Failed"
    assert world.condition["reason"] == "JobValidFailed"
    assert world.condition["message"].startswith("InvalidFramework: ")
    assert [(e.type, e.reason) for e in first.events] == [("Warning", "InvalidFramework")]
    assert "completionTime" in world.job["status"]
    second = world.reconcile()
    assert second.events == () and second.status is None


REFUSED = Problem(
    "InvalidPodTemplate",
    f'the API server refused pod ns1/{W0}: Pod "{W0}" is invalid: spec.containers[0].name: ...',
)


@pytest.mark.parametrize(
    ("run_policy", "left"),
    [
        ({}, {M0}),  # the default, None, as for any finish: the pod and Service stay
        ({"cleanPodPolicy": "None"}, {M0}),
        ({"cleanPodPolicy": "Running"}, set()),  # the Pending Master goes, and the Service
        ({"cleanPodPolicy": "All"}, set()),
    ],
)
def test_a_refused_create_fails_the_job_once_and_cleans_up(
    run_policy: dict[str, Any], left: set[str]
) -> None:
    world = World(job(run_policy=run_policy))
    world.reconcile()  # Service
    world.reconcile()  # pods: the Master is created, the Worker's create refused (422)
    del world.pods[W0]
    assert world.pods[M0]["status"].get("phase", "Pending") == "Pending"
    world.refused = REFUSED
    failing = world.reconcile()
    assert world.state == "Failed"
    assert world.condition["reason"] == "JobValidFailed"
    assert world.condition["message"] == REFUSED.message
    assert [(e.type, e.reason) for e in failing.events] == [("Warning", "InvalidPodTemplate")]
    assert failing.creates == ()
    assert set(world.pods) == left
    assert set(world.services) == (set() if not left else {M0})
    again = world.reconcile()  # the refusal is still passed: nothing more happens
    assert again.events == () and again.status is None and again.creates == ()


def test_a_refusal_does_not_hide_what_validate_finds() -> None:
    world = World(job("caffe"), refused=REFUSED)
    world.reconcile()
    assert world.condition["message"].startswith("InvalidFramework: ")


def test_a_refusal_does_not_revive_a_finished_job() -> None:
    world = running_world()
    world.all_pods("Succeeded", 0)
    world.reconcile()
    assert world.state == "Succeeded"
    world.refused = REFUSED
    late = world.reconcile()
    assert world.state == "Succeeded" and late.events == ()


def test_invalid_job_ttl() -> None:
    world = World(
        job("pytorch", {"Master": {"replicas": 1}}, run_policy={"ttlSecondsAfterFinished": 30})
    )
    assert world.reconcile().requeue_after == 30
    world.now = at(30)
    assert world.reconcile().delete_job is True


# --- restart policies -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("policy", "code", "outcome"),
    [
        ("Never", 0, "Failed"),
        ("Never", 137, "Failed"),
        ("Never", None, "Failed"),
        ("ExitCode", 0, "Failed"),
        ("ExitCode", 1, "Failed"),
        ("ExitCode", 127, "Failed"),
        ("ExitCode", 128, "Restarting"),
        ("ExitCode", 137, "Restarting"),
        ("ExitCode", 143, "Restarting"),
        ("ExitCode", None, "Restarting"),
        ("OnFailure", 1, "Restarting"),
        ("OnFailure", None, "Restarting"),
        ("Always", 137, "Restarting"),
    ],
)
def test_failed_pod_by_policy(policy: str, code: int | None, outcome: str) -> None:
    world = running_world(workers=2, policy=policy)
    world.kubelet(W1, "Failed", code)
    uid = world.pods[W1]["metadata"]["uid"]
    result = world.reconcile()
    assert world.state == outcome
    exited = [e for e in result.events if e.reason == "ExitedWithCode" and e.type == "Warning"]
    assert len(exited) == 1
    assert W1 in exited[0].message and "ascend" in exited[0].message
    assert (str(code) if code is not None else "none") in exited[0].message
    if outcome == "Failed":
        assert world.condition["reason"] == "JobFailed"
        assert "JobFailed" in reasons(world)
        assert result.restarted == 0
        assert world.job["status"]["restartCount"] == 0
        assert result.creates == ()
    else:
        assert world.condition["reason"] == "JobRestarting"
        assert "JobRestarting" in reasons(world)
        # MindCluster's events beside ours (only an exit code gets ExitedWithCode there).
        theirs = [(e.type, e.reason) for e in result.events if e.reason != "JobRestarting"]
        normal = [("Normal", "ExitedWithCode")] if code is not None else []
        assert theirs == [("Warning", "ExitedWithCode"), *normal, ("Warning", "jobRestarting")]
        assert result.restarted == 1
        assert world.job["status"]["restartCount"] == 1
        # Record, then act: the plan that counts the restart deletes the pod only after its
        # status is stored, and creates nothing while the pod is still there.
        assert result.deletes == () and result.creates == ()
        assert result.deletes_after_status == (ChildRef("Pod", "ns1", W1, uid),)
        assert result.status is not None and result.status["recreatedPods"] == [uid]
        assert result.status["restartCount"] == 1
        assert result.requeue_after is None  # the delete is no longer left to a later plan
        # The reconciler's follow-up plan, the pod gone: the replacement, nothing counted.
        act = world.reconcile()
        assert [b["metadata"]["name"] for b in act.creates] == [W1]
        assert act.deletes == act.deletes_after_status == ()
        assert act.restarted == 0 and act.events == ()
        assert world.job["status"]["restartCount"] == 1
        assert world.job["status"]["recreatedPods"] == [uid]  # kept while W1 is not cached


def test_exitcode_137_then_1_fails() -> None:
    world = running_world(workers=2, policy="ExitCode")
    old_uid = world.pods[W0]["metadata"]["uid"]
    world.kubelet(W0, "Failed", 137)
    world.reconcile()
    assert W0 not in world.pods  # deleted in the plan that recorded the restart
    recreate = world.reconcile()
    assert [b["metadata"]["name"] for b in recreate.creates] == [W0]
    assert world.pods[W0]["metadata"]["uid"] != old_uid
    assert world.state == "Restarting"
    assert recreate.events == ()  # JobRestarting only on the transition
    world.kubelet(W0, "Running")
    back = world.reconcile()
    assert world.state == "Running"
    assert world.job["status"]["restartCount"] == 1
    assert "recreatedPods" not in world.job["status"]  # pruned once the pod was gone
    assert back.events == ()
    world.kubelet(W0, "Failed", 1)
    world.reconcile()
    assert (world.state, world.condition["reason"]) == ("Failed", "JobFailed")
    assert world.job["status"]["restartCount"] == 1


def test_failed_pod_seen_twice_before_deletion_counts_once() -> None:
    world = running_world(workers=2, policy="ExitCode")
    world.slow_deletes = True
    world.kubelet(W0, "Failed", 137)
    stale = copy.deepcopy(world.job)
    failed = copy.deepcopy(list(world.pods.values()))
    services = list(world.services.values())
    first = world.reconcile()
    assert first.restarted == 1 and first.deletes == ()
    assert [d.name for d in first.deletes_after_status] == [W0]
    # A retry from the stale job (say the status write got a 409, so nothing was deleted):
    # the same count, and again the delete only once that status is stored.
    again = plan(stale, failed, services, None, at(1))
    assert again.restarted == 1 and again.deletes == ()
    assert [d.name for d in again.deletes_after_status] == [W0]
    assert again.status is not None and again.status["restartCount"] == 1
    # The status was stored but the delete failed: the retry deletes, counting nothing.
    act = plan(world.job, failed, services, None, at(1))
    assert act.restarted == 0 and [d.name for d in act.deletes] == [W0]
    assert act.deletes_after_status == () and act.status is None
    second = world.reconcile()  # still in the cache, now Terminating
    assert second.restarted == 0 and second.deletes == () and second.creates == ()
    assert world.job["status"]["restartCount"] == 1
    assert [e.reason for e in second.events] == []
    del world.pods[W0]
    assert [b["metadata"]["name"] for b in world.reconcile().creates] == [W0]
    assert world.job["status"]["restartCount"] == 1


@pytest.mark.parametrize(("limit", "allowed"), [(0, 0), (1, 1), (2, 2)])
def test_backoff_limit_with_recreations(limit: int, allowed: int) -> None:
    world = running_world(workers=1, policy="ExitCode", run_policy={"backoffLimit": limit})
    for restart in range(allowed):
        world.kubelet(W0, "Failed", 137)
        world.reconcile()
        assert world.state == "Restarting", restart
        world.reconcile()
        world.reconcile()
        world.kubelet(W0, "Running")
        world.reconcile()
        assert world.state == "Running"
    world.kubelet(W0, "Failed", 137)
    result = world.reconcile()
    assert (world.state, world.condition["reason"]) == ("Failed", "BackoffLimitExceeded")
    assert "BackoffLimitExceeded" in reasons(world)
    assert result.creates == () and result.restarted == 0
    assert world.job["status"]["restartCount"] == allowed


def test_onfailure_in_place_restarts_past_backoff_limit() -> None:
    world = running_world(workers=1, policy="OnFailure", run_policy={"backoffLimit": 2})
    world.kubelet(W0, "Running", restarts=1)
    first = world.reconcile()
    assert world.state == "Running" and world.job["status"]["restartCount"] == 1
    assert [e.reason for e in first.events] == ["ExitedWithCode"]
    world.kubelet(W0, "Running", restarts=2)
    world.reconcile()
    assert world.state == "Running" and world.job["status"]["restartCount"] == 2
    assert world.plan().status is None  # counted once
    world.kubelet(W0, "Running", restarts=3)
    world.reconcile()
    assert (world.state, world.condition["reason"]) == ("Failed", "BackoffLimitExceeded")
    assert world.job["status"]["restartCount"] == 3


def test_unlimited_backoff() -> None:
    world = running_world(workers=1, policy="OnFailure")
    world.kubelet(W0, "Running", restarts=500)
    world.reconcile()
    assert world.state == "Running" and world.job["status"]["restartCount"] == 500


def test_restart_count_survives_recreation_and_fresh_plan() -> None:
    world = running_world(workers=1, policy="OnFailure", run_policy={"backoffLimit": 10})
    world.kubelet(W0, "Running", restarts=2)
    world.reconcile()
    world.kubelet(W0, "Failed", None)  # evicted after two in-place restarts
    world.reconcile()
    world.reconcile()
    world.reconcile()
    world.kubelet(W0, "Running")
    world.reconcile()
    assert world.job["status"]["restartCount"] == 3
    # A "restarted controller": nothing but the persisted job and the pods.
    persisted = copy.deepcopy(world.job)
    pods = copy.deepcopy(list(world.pods.values()))
    fresh = plan(persisted, pods, list(world.services.values()), None, at(500))
    assert fresh.status is None
    world.kubelet(W0, "Running", restarts=1)
    again = plan(persisted, list(world.pods.values()), list(world.services.values()), None, at(500))
    assert again.status is not None and again.status["restartCount"] == 4


def test_pod_deleted_by_someone_else_recreated_without_restart() -> None:
    world = running_world(workers=2)
    del world.pods[W1]
    result = world.reconcile()
    assert [b["metadata"]["name"] for b in result.creates] == [W1]
    assert result.restarted == 0
    assert world.state == "Running"
    assert world.job["status"]["restartCount"] == 0


def test_terminating_pod_not_recreated_until_gone() -> None:
    world = running_world(workers=2)
    world.pods[W1]["metadata"]["deletionTimestamp"] = format_time(at(0))
    result = world.reconcile()
    assert result.creates == ()
    assert world.job["status"]["replicaStatuses"]["Worker"]["active"] == 1


# --- run policy --------------------------------------------------------------------------------
def test_active_deadline_requeue_and_failure() -> None:
    world = World(job(run_policy={"activeDeadlineSeconds": 60}))
    assert world.reconcile().requeue_after == 60
    world.now = at(45)
    assert world.reconcile().requeue_after == 15
    world.now = at(60)
    result = world.reconcile()
    assert (world.state, world.condition["reason"]) == ("Failed", "DeadlineExceeded")
    assert [e.reason for e in result.events] == ["DeadlineExceeded"]
    assert result.requeue_after is None
    assert world.reconcile().events == ()


def test_ttl_after_finished() -> None:
    world = running_world(workers=1, run_policy={"ttlSecondsAfterFinished": 100})
    world.all_pods("Succeeded", 0)
    world.now = at(10)
    assert world.reconcile().requeue_after == 100
    world.now = at(60)
    waiting = world.reconcile()
    assert waiting.requeue_after == 50 and not waiting.delete_job
    world.now = at(110)
    assert world.reconcile().delete_job is True


@pytest.mark.parametrize(
    ("policy", "deleted"),
    [
        ("None", set()),
        ("Running", {M0, W1, "job1-master-0/svc"}),
        ("All", {M0, W0, W1, "job1-master-0/svc"}),
    ],
)
def test_clean_pod_policy_on_failure(policy: str, deleted: set[str]) -> None:
    world = running_world(workers=2, run_policy={"cleanPodPolicy": policy})
    world.kubelet(W0, "Failed", 1)
    result = world.reconcile()
    assert world.state == "Failed"
    names = {d.name if d.kind == "Pod" else f"{d.name}/svc" for d in result.deletes}
    assert names == deleted
    assert world.reconcile().deletes == ()


# --- scaling, ownership --------------------------------------------------------------------------
def test_scaling_2_4_1() -> None:
    world = running_world(workers=2)
    world.job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 4
    up = world.reconcile()
    assert [b["metadata"]["name"] for b in up.creates] == ["job1-worker-2", "job1-worker-3"]
    assert world.state == "Running"
    world.all_pods("Running")
    world.reconcile()
    world.job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 1
    down = world.reconcile()
    assert sorted(d.name for d in down.deletes) == [
        "job1-worker-1",
        "job1-worker-2",
        "job1-worker-3",
    ]
    assert down.creates == ()
    assert sorted(world.pods) == [M0, W0]
    assert world.state == "Running"


def foreign(name: str, owner_uid: str | None = "other-uid") -> dict[str, Any]:
    pod = materialise(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": name,
                "namespace": "ns1",
                "labels": {"training.kubeflow.org/job-name": "job1"},
            },
            "spec": {"containers": [{"name": "ascend", "image": "x"}]},
        }
    )
    if owner_uid:
        pod["metadata"]["ownerReferences"] = [{"uid": owner_uid, "controller": True, "kind": "X"}]
    return pod


def test_foreign_owned_pods_untouched() -> None:
    world = running_world(workers=1)
    world.pods["job1-worker-7"] = foreign("job1-worker-7")
    world.job["spec"]["replicaSpecs"]["Worker"]["replicas"] = 0
    result = world.reconcile()
    assert (
        ChildRef("Pod", "ns1", "job1-worker-7", world.pods["job1-worker-7"]["metadata"]["uid"])
        not in result.deletes
    )
    assert [d.name for d in result.deletes] == [W0]
    assert result.adopts == ()


def test_foreign_pod_with_desired_name_blocks_not_touches() -> None:
    world = World(job(workers=1))
    world.reconcile()
    world.pods[W0] = foreign(W0)
    world.pods[W0]["status"] = {"phase": "Failed"}
    result = world.reconcile()
    assert [b["metadata"]["name"] for b in result.creates] == [M0]
    assert all(d.name != W0 for d in result.deletes)
    assert world.state == "Created"


def test_a_name_another_controller_holds_is_a_warning_each_plan() -> None:
    world = World(job(workers=1))
    world.reconcile()
    world.pods[W0] = foreign(W0)
    world.pods[W0]["metadata"]["ownerReferences"][0].update(kind="ConfigMap", name="cm")
    result = world.reconcile()
    taken = [e for e in result.events if e.reason == "FailedCreatePod"]
    assert [(e.type, e.message) for e in taken] == [
        (
            "Warning",
            f"pod ns1/{W0} already exists and is controlled by ConfigMap cm: it is not "
            "adopted, and the job waits until the name is free",
        )
    ]
    assert world.plan().events == result.events  # said again while it lasts (aggregated)
    del world.pods[W0]
    assert all(e.reason != "FailedCreatePod" for e in world.plan().events)


def test_a_terminating_orphan_holding_a_name_is_no_warning() -> None:
    world = World(job(workers=1))
    world.reconcile()
    world.pods[W0] = foreign(W0, owner_uid=None)
    world.pods[W0]["metadata"]["deletionTimestamp"] = format_time(at(1))
    result = world.plan()
    assert [b["metadata"]["name"] for b in result.creates] == [M0]  # not W0: its name is held
    assert all(e.reason != "FailedCreatePod" for e in result.events)


def test_orphan_adoption() -> None:
    world = World(job(workers=1))
    world.reconcile()
    world.pods[W0] = foreign(W0, owner_uid=None)
    world.pods["job1-worker-9"] = foreign("job1-worker-9", owner_uid=None)
    result = world.reconcile()
    assert [r.name for r in result.adopts] == [W0]
    assert [b["metadata"]["name"] for b in result.creates] == [M0]
    assert world.pods[W0]["metadata"]["ownerReferences"][0]["uid"] == UID
    assert world.plan().adopts == ()


def test_deleting_job_plans_nothing() -> None:
    world = World(job(workers=1))
    world.reconcile()
    world.pods[W0] = foreign(W0, owner_uid=None)
    world.job["metadata"]["deletionTimestamp"] = format_time(at(1))
    result = world.plan()
    assert result.adopts == () and result.creates == () and result.status is None


# --- lost nodes --------------------------------------------------------------------------------
def test_stuck_terminating_pod_force_deleted_after_grace() -> None:
    world = running_world(workers=1, policy="ExitCode")
    world.slow_deletes = True
    world.kubelet(W0, "Failed", None)
    world.pods[W0]["spec"]["nodeName"] = "node-a"
    world.reconcile()
    world.reconcile()
    assert world.pods[W0]["metadata"]["deletionTimestamp"]
    world.now = at(100)
    waiting = world.reconcile()
    assert waiting.force_deletes == () and waiting.requeue_after == 200
    world.now = at(300)
    forced = world.reconcile()
    assert [r.name for r in forced.force_deletes] == [W0]
    assert [b["metadata"]["name"] for b in world.reconcile().creates] == [W0]


def test_live_node_is_not_force_deleted() -> None:
    world = running_world(workers=1)
    world.options = PlanOptions(live_nodes=frozenset({"node-a"}))
    world.pods[W0]["spec"]["nodeName"] = "node-a"
    world.pods[W0]["metadata"]["deletionTimestamp"] = format_time(at(0))
    world.now = at(10_000)
    assert world.plan().force_deletes == ()


# --- more frameworks and children -------------------------------------------------------
def test_mindspore_without_scheduler_needs_no_service() -> None:
    from .factories import replica

    world = World(job("mindspore", {"Worker": replica(2)}))
    first = world.reconcile()
    assert [b["metadata"]["name"] for b in first.creates] == [W0, W1]
    world.all_pods("Running")
    world.reconcile()
    world.all_pods("Succeeded", 0)
    world.reconcile()
    assert world.state == "Succeeded"


@pytest.mark.parametrize("framework", ["tensorflow", "mindspore"])
def test_other_frameworks_run_to_success(framework: str) -> None:
    world = World(job(framework, workers=2))
    world.reconcile()
    world.reconcile()
    assert len(world.pods) == 3
    world.all_pods("Running")
    world.reconcile()
    assert world.state == "Running"
    world.all_pods("Succeeded", 0)
    world.reconcile()
    assert world.state == "Succeeded"


def test_orphan_service_and_podgroup_adopted() -> None:
    body = job(scheduler="volcano")
    world = World(copy.deepcopy(body))
    world.reconcile()
    for obj in [*world.services.values(), world.podgroup]:
        assert obj is not None
        obj["metadata"].pop("ownerReferences")
    result = world.reconcile()
    assert sorted(r.kind for r in result.adopts) == ["PodGroup", "Service"]
    assert result.creates == ()


def test_foreign_service_and_podgroup_block_creation() -> None:
    body = job(scheduler="volcano")
    first = plan(body, [], [], None, at(0))
    svc, pg = (materialise(b) for b in first.creates)
    for obj in (svc, pg):
        obj["metadata"]["ownerReferences"] = [{"uid": "x", "controller": True}]
    pg["status"] = {"phase": "Running"}
    result = plan(body, [], [svc], pg, at(0))
    assert result.creates == () and result.deletes == () and result.adopts == ()
    assert sorted((e.type, e.reason) for e in result.events) == [
        ("Warning", "FailedCreatePodGroup"),
        ("Warning", "FailedCreateService"),
    ]


def test_gauge_transitions_reported() -> None:
    world = World(job(workers=1))
    first = world.reconcile()
    assert (first.previous_state, first.state) == (None, "Created")
    assert world.reconcile().state == "Created"


# --- idleness in every state and determinism ------------------------------------------------------
def world_in(state: str) -> World:
    if state == "Created":
        world = World(job(workers=1))
        world.reconcile()
        world.reconcile()
    elif state == "Running":
        world = running_world(workers=1)
    elif state == "Restarting":
        world = running_world(workers=1, policy="ExitCode")
        world.kubelet(W0, "Failed", 137)
        world.reconcile()
        world.reconcile()
        world.reconcile()
    elif state == "Succeeded":
        world = running_world(workers=1)
        world.all_pods("Succeeded", 0)
        world.reconcile()
    else:
        world = running_world(workers=1)
        world.kubelet(W0, "Failed", 2)
        world.reconcile()
    assert world.state == state
    return world


@pytest.mark.parametrize("state", ["Created", "Running", "Restarting", "Succeeded", "Failed"])
def test_idle_reconcile_in_every_state_writes_nothing(state: str) -> None:
    world = world_in(state)
    world.now = at(5000)
    idle = world.plan()
    assert idle.status is None
    assert idle.events == () and idle.creates == () and idle.deletes == ()
    assert idle == world.plan(), "plan must be deterministic"


def test_each_transition_event_planned_once() -> None:
    world = running_world(workers=1, policy="ExitCode")
    world.kubelet(W0, "Failed", 137)
    for _ in range(3):
        world.reconcile()
    world.kubelet(W0, "Running")
    for _ in range(2):
        world.reconcile()
    world.all_pods("Succeeded", 0)
    for _ in range(3):
        world.reconcile()
    seen = [e.reason for p in world.history for e in p.events]
    assert seen == [
        "ExitedWithCode",
        "ExitedWithCode",  # MindCluster's, Normal
        "jobRestarting",  # MindCluster's
        "JobRestarting",
        "JobSucceeded",
    ]
    assert world.job["status"]["restartCount"] == 1


# --- a running job whose spec is edited into an invalid one ------------------------------------
def _running_volcano(clean: str | None) -> World:
    run_policy = {} if clean is None else {"cleanPodPolicy": clean}
    world = World(job(workers=2, scheduler="volcano", run_policy=run_policy))
    world.reconcile()
    world.admit_podgroup()
    world.settle()
    world.all_pods("Running")
    world.kubelet(W1, "Succeeded", 0)
    world.settle()
    assert world.state == "Running" and world.podgroup is not None
    return world


@pytest.mark.parametrize(
    ("clean", "pods_left", "service_left"),
    [(None, {M0, W0, W1}, True), ("Running", {W1}, False), ("All", set(), False)],
)
def test_spec_made_invalid_while_running_cleans_up_as_a_finish(
    clean: str | None, pods_left: set[str], service_left: bool
) -> None:
    world = _running_volcano(clean)
    world.job["spec"]["replicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
    result = world.reconcile()
    assert world.state == "Failed" and world.condition["reason"] == "JobValidFailed"
    assert world.podgroup is None
    assert set(world.pods) == pods_left
    assert bool(world.services) == service_left
    assert result.creates == ()
    assert world.settle().deletes == ()


def test_invalid_job_cleanup_touches_only_children_it_controls() -> None:
    world = _running_volcano("All")
    foreign = copy.deepcopy(world.pods[W0])
    foreign["metadata"].update(name="other-0", uid="uid-other")
    foreign["metadata"]["ownerReferences"][0]["uid"] = "someone-else"
    orphan = copy.deepcopy(world.pods[W1])
    orphan["metadata"].update(name="orphan-0", uid="uid-orphan", ownerReferences=[])
    world.pods.update({"other-0": foreign, "orphan-0": orphan})
    assert world.podgroup is not None
    group = world.podgroup["metadata"]["name"]
    world.job["metadata"]["labels"]["framework"] = "caffe"  # not even the leader is known
    result = world.reconcile()
    deleted = {(ref.kind, ref.name) for ref in result.deletes}
    pods = {("Pod", name) for name in (M0, W0, W1)}
    assert deleted == pods | {("Service", M0), ("PodGroup", group)}
    assert set(world.pods) == {"other-0", "orphan-0"}


# --- scaling updates the PodGroup ----------------------------------------------------------------
def _scale(world: World, workers: int) -> None:
    world.job = copy.deepcopy(world.job)
    world.job["spec"]["replicaSpecs"]["Worker"]["replicas"] = workers


def test_scaling_patches_podgroup_min_member_and_resources() -> None:
    world = _running_volcano(None)
    assert world.podgroup is not None
    assert world.podgroup["spec"]["minMember"] == 3
    assert world.plan().podgroup_patch is None  # in step: nothing to patch

    _scale(world, 4)
    result = world.reconcile()
    assert result.podgroup_patch == {
        "spec": {
            "minMember": 5,
            "minTaskMember": {"master": 1, "worker": 4},
            "minResources": {"huawei.com/Ascend910": "10"},
        }
    }
    world.settle()
    assert world.podgroup["spec"]["minMember"] == 5
    _scale(world, 1)
    assert world.reconcile().podgroup_patch == {
        "spec": {
            "minMember": 2,
            "minTaskMember": {"master": 1, "worker": 1},
            "minResources": {"huawei.com/Ascend910": "4"},
        }
    }
    assert world.plan().podgroup_patch is None


def test_min_available_pins_min_member_when_scaling() -> None:
    world = World(
        job(workers=2, scheduler="volcano", run_policy={"schedulingPolicy": {"minAvailable": 2}})
    )
    world.reconcile()
    world.admit_podgroup()
    world.settle()
    _scale(world, 4)
    # minMember and minResources (the first 2 pods) unchanged; minTaskMember follows replicas.
    assert world.plan().podgroup_patch == {"spec": {"minTaskMember": {"master": 1, "worker": 4}}}


def test_podgroup_quantities_compare_by_value_not_spelling() -> None:
    world = _running_volcano(None)
    assert world.podgroup is not None
    world.podgroup["spec"]["minResources"] = {"huawei.com/Ascend910": "6.0"}
    assert world.plan().podgroup_patch is None


def test_finished_job_does_not_patch_its_podgroup() -> None:
    world = _running_volcano(None)
    _scale(world, 4)
    world.job["spec"]["replicaSpecs"]["Master"]["replicas"] = 2  # invalid: finishes the job
    assert world.plan().podgroup_patch is None

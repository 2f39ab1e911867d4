"""The AscendJob controller end to end on the API server, kubelet played by the test.

One cluster and one controller for the module; every test uses its own namespace so jobs,
events and metric labels never mix.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.kube.client import (
    ASCENDJOBS,
    CONFIGMAPS,
    PODGROUPS,
    PODS,
    SERVICES,
    KubeClient,
)
from tests.integration.controller.helpers import (
    JOB_LABEL,
    Kubelet,
    Reconciles,
    condition,
    fresh_namespace,
    get_job,
    job_events,
    podgroup_of,
    pods_of,
    pytorch_job,
    reconciles,
    sample,
    status_of,
    wait_event,
    wait_for,
    wait_pods,
    wait_recreated,
    wait_state,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def ns(kube: KubeClient, controller: AscendJobController) -> str:
    return fresh_namespace(kube)


@pytest.fixture
def done(controller: AscendJobController) -> Reconciles:
    """For negative checks: `done.wait_caught_up(kube, ns, job)` returns once the controller
    has reconciled the job from exactly what the server holds, so anything it was going to do
    about the last change has been done; then the test asserts that nothing else happened."""
    return reconciles(controller)


def test_pytorch_created_running_succeeded(kube: KubeClient, kubelet: Kubelet, ns: str) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job("pt", workers=2))
    status = wait_state(kube, ns, "pt", "Created")
    assert status.get("startTime")
    pods = wait_pods(kube, ns, "pt", 3)
    assert sorted(pods) == ["pt-master-0", "pt-worker-0", "pt-worker-1"]

    kubelet.run_all(pods)
    status = wait_state(kube, ns, "pt", "Running")
    assert status["replicaStatuses"]["Worker"]["active"] == 2
    assert status.get("completionTime") is None

    kubelet.succeed_all(pods)
    status = wait_state(kube, ns, "pt", "Succeeded")
    assert status.get("completionTime")
    assert status.get("lastReconcileTime")
    running = condition(status, "Running")
    assert running is not None and running["status"] == "False"
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 2
    assert status["replicaStatuses"]["Master"]["succeeded"] == 1
    wait_event(kube, ns, "pt", "JobSucceeded")
    wait_event(kube, ns, "pt", "SuccessfulCreatePod")
    wait_event(kube, ns, "pt", "SuccessfulCreateService")


def test_exitcode_137_recreates_then_exit_1_fails(
    kube: KubeClient, kubelet: Kubelet, ns: str, done: Reconciles
) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job("ec", policy="ExitCode"))
    pods = wait_pods(kube, ns, "ec", 2)
    kubelet.run_all(pods)
    wait_state(kube, ns, "ec", "Running")
    first = pods["ec-worker-0"]
    # The pod spec says Never: ExitCode is the controller's policy, not kubelet's.
    assert first["spec"]["restartPolicy"] == "Never"

    kubelet.failed(first, 137)

    second = wait_recreated(kube, ns, "ec", "ec-worker-0", first["metadata"]["uid"])
    status = wait_for(
        lambda: (s := status_of(kube, ns, "ec")).get("restartCount") == 1 and s,
        "restartCount 1",
    )
    restarting = condition(status, "Restarting")
    assert restarting is not None and restarting["reason"] == "JobRestarting"
    wait_event(kube, ns, "ec", "JobRestarting")
    # Ours is the Warning; MindCluster's Normal ExitedWithCode and jobRestarting go beside it.
    exited = wait_for(
        lambda: next(
            (
                e
                for e in job_events(kube, ns, "ec")
                if e["reason"] == "ExitedWithCode" and e["type"] == "Warning"
            ),
            None,
        ),
        "a Warning ExitedWithCode",
    )
    assert "137" in exited["message"]
    wait_event(kube, ns, "ec", "jobRestarting")

    kubelet.running(second)
    wait_state(kube, ns, "ec", "Running")
    kubelet.failed(second, 1)
    status = wait_state(kube, ns, "ec", "Failed")
    failed = condition(status, "Failed")
    assert failed is not None and failed["reason"] == "JobFailed"
    assert status["restartCount"] == 1
    assert status.get("completionTime")
    # A program's own exit code is final: the pod is kept, not recreated.
    done.wait_caught_up(kube, ns, "ec")
    assert pods_of(kube, ns, "ec")["ec-worker-0"]["metadata"]["uid"] == second["metadata"]["uid"]


def test_never_failure_fails_job_and_cleans_running_pods(
    kube: KubeClient, kubelet: Kubelet, ns: str
) -> None:
    job = pytorch_job("nv", workers=2, run_policy={"cleanPodPolicy": "Running"})
    kube.create(ASCENDJOBS, ns, job)
    pods = wait_pods(kube, ns, "nv", 3)
    kubelet.run_all(pods)
    wait_state(kube, ns, "nv", "Running")

    kubelet.failed(pods["nv-worker-1"], 2)
    status = wait_state(kube, ns, "nv", "Failed")
    assert condition(status, "Failed")["reason"] == "JobFailed"  # type: ignore[index]
    # cleanPodPolicy Running: the running pods go, the failed one stays for its logs.
    left = wait_for(
        lambda: (p := pods_of(kube, ns, "nv")) and set(p) == {"nv-worker-1"} and p,
        "only the failed pod left",
    )
    assert left["nv-worker-1"]["status"]["phase"] == "Failed"
    wait_event(kube, ns, "nv", "JobFailed")


def test_never_failure_with_clean_none_keeps_pods(
    kube: KubeClient, kubelet: Kubelet, ns: str, done: Reconciles
) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job("keep", run_policy={"cleanPodPolicy": "None"}))
    pods = wait_pods(kube, ns, "keep", 2)
    kubelet.run_all(pods)
    wait_state(kube, ns, "keep", "Running")
    kubelet.failed(pods["keep-worker-0"], 1)
    wait_state(kube, ns, "keep", "Failed")
    done.wait_caught_up(kube, ns, "keep")
    assert set(pods_of(kube, ns, "keep")) == {"keep-master-0", "keep-worker-0"}


def test_onfailure_container_restarts_past_backoff_limit(
    kube: KubeClient, kubelet: Kubelet, ns: str
) -> None:
    job = pytorch_job("of", policy="OnFailure", run_policy={"backoffLimit": 2})
    kube.create(ASCENDJOBS, ns, job)
    pods = wait_pods(kube, ns, "of", 2)
    assert pods["of-worker-0"]["spec"]["restartPolicy"] == "OnFailure"
    kubelet.run_all(pods)
    wait_state(kube, ns, "of", "Running")
    worker = pods["of-worker-0"]
    for n in (1, 2):
        kubelet.restart_container(worker, restart_count=n)
        wait_for(
            lambda n=n: status_of(kube, ns, "of").get("restartCount") == n,  # type: ignore[misc]
            f"restartCount {n}",
        )
        assert status_of(kube, ns, "of")["conditions"][-1]["type"] != "Failed"
    kubelet.restart_container(worker, restart_count=3)
    status = wait_state(kube, ns, "of", "Failed")
    assert condition(status, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    assert status["restartCount"] == 3
    wait_event(kube, ns, "of", "BackoffLimitExceeded")


def test_active_deadline_fails_job_with_no_other_event(kube: KubeClient, ns: str) -> None:
    started = time.monotonic()
    kube.create(ASCENDJOBS, ns, pytorch_job("dl", run_policy={"activeDeadlineSeconds": 2}))
    # Nobody touches the pods: only the controller's own delayed requeue can end the job.
    status = wait_state(kube, ns, "dl", "Failed", timeout=10.0)
    elapsed = time.monotonic() - started
    # startTime is stored with whole seconds (metav1.Time), which can move the deadline up
    # to a second earlier than our stopwatch; anything sooner than that would be a bug.
    assert elapsed >= 0.95, f"the job failed {elapsed:.2f}s after creation, before its deadline"
    assert condition(status, "Failed")["reason"] == "DeadlineExceeded"  # type: ignore[index]
    wait_event(kube, ns, "dl", "DeadlineExceeded")


def test_an_active_deadline_centuries_away_stops_no_worker(
    kube: KubeClient, kubelet: Kubelet, ns: str, controller: AscendJobController
) -> None:
    """A valid activeDeadlineSeconds may put the job's deadline centuries away, past what a
    thread's timed wait accepts (OverflowError). The queue's timer worker sleeps towards it
    and must not die of it: every worker still serves the next job."""
    kube.create(ASCENDJOBS, ns, pytorch_job("far", run_policy={"activeDeadlineSeconds": 10**10}))
    pods = wait_pods(kube, ns, "far", 2)
    kubelet.run_all(pods)
    wait_state(kube, ns, "far", "Running")
    time.sleep(0.5)  # the reconcile that wrote Running hands its deadline to the queue's timer
    assert controller.runner.workers_alive() == 4
    kube.create(ASCENDJOBS, ns, pytorch_job("next"))
    wait_pods(kube, ns, "next", 2)


def test_ttl_deletes_the_finished_job(kube: KubeClient, kubelet: Kubelet, ns: str) -> None:
    ttl = 3
    kube.create(ASCENDJOBS, ns, pytorch_job("ttl", run_policy={"ttlSecondsAfterFinished": ttl}))
    pods = wait_pods(kube, ns, "ttl", 2)
    kubelet.run_all(pods)
    wait_state(kube, ns, "ttl", "Running")
    kubelet.succeed_all(pods)
    status = wait_state(kube, ns, "ttl", "Succeeded")
    expiry = datetime.fromisoformat(status["completionTime"]) + timedelta(seconds=ttl)

    def deleted() -> bool:
        job = get_job(kube, ns, "ttl")
        answered = datetime.now(UTC)
        # A lower bound: an answer of "gone" that came back before the TTL expired means the
        # job was deleted early. (completionTime has whole seconds; the expiry is counted from
        # it, so no slack is needed; the controller and this test share the machine's clock.)
        assert job is not None or answered >= expiry, (
            f"the job was gone at {answered.isoformat()}, before its TTL expired at "
            f"{expiry.isoformat()}"
        )
        return job is None

    wait_for(deleted, "the TTL deletion of the job", 20.0)
    # Its children go with it (garbage collection through the ownerReferences).
    wait_for(lambda: not pods_of(kube, ns, "ttl"), "the pods garbage-collected")


def test_volcano_gang_waits_for_podgroup_phase(
    kube: KubeClient, kubelet: Kubelet, ns: str, done: Reconciles
) -> None:
    job = pytorch_job(
        "vc",
        workers=2,
        scheduler="volcano",
        run_policy={"schedulingPolicy": {"minAvailable": 2, "queue": "q1"}},
    )
    created = kube.create(ASCENDJOBS, ns, job)
    group = wait_for(lambda: podgroup_of(kube, ns, created), "the PodGroup")
    assert group["spec"]["minMember"] == 2
    assert group["spec"]["queue"] == "q1"
    wait_state(kube, ns, "vc", "Created")
    wait_for(
        lambda: (
            condition(status_of(kube, ns, "vc"), "Created")["reason"]  # type: ignore[index]
            == "PodGroupNotInitialized"  # MindCluster's reason while Volcano set no phase
        ),
        "reason PodGroupNotInitialized",
    )
    done.wait_caught_up(kube, ns, "vc")  # it has seen the PodGroup Pending, and acted
    assert pods_of(kube, ns, "vc") == {}, "pods created before the gang was admitted"
    created_cond = condition(status_of(kube, ns, "vc"), "Created")
    assert created_cond is not None and "PodGroup" in created_cond["message"]

    group["status"] = {"phase": "Inqueue"}
    kube.update_status(PODGROUPS, ns, group)
    pods = wait_pods(kube, ns, "vc", 3)
    for pod in pods.values():
        assert pod["spec"]["schedulerName"] == "volcano"
        assert (
            pod["metadata"]["annotations"]["scheduling.k8s.io/group-name"]
            == (group["metadata"]["name"])
        )
    kubelet.run_all(pods)
    wait_state(kube, ns, "vc", "Running")
    kubelet.succeed_all(pods)
    wait_state(kube, ns, "vc", "Succeeded")
    # The finished job's PodGroup is released.
    wait_for(lambda: podgroup_of(kube, ns, created) is None, "the PodGroup deleted")


def test_invalid_framework_fails_and_others_progress(
    kube: KubeClient, ns: str, done: Reconciles
) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job("bad", framework="caffe"))
    kube.create(ASCENDJOBS, ns, pytorch_job("good"))
    status = wait_state(kube, ns, "bad", "Failed")
    failed = condition(status, "Failed")
    assert failed is not None and failed["reason"] == "JobValidFailed"
    assert failed["message"].startswith("InvalidFramework:")
    event = wait_event(kube, ns, "bad", "InvalidFramework")
    assert event["type"] == "Warning"
    wait_pods(kube, ns, "good", 2)
    wait_state(kube, ns, "good", "Created")
    done.wait_caught_up(kube, ns, "bad")
    assert pods_of(kube, ns, "bad") == {}, "an invalid job got children"


def test_scale_workers_2_4_1(kube: KubeClient, kubelet: Kubelet, ns: str) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job("sc", workers=2))
    pods = wait_pods(kube, ns, "sc", 3)
    kubelet.run_all(pods)
    wait_state(kube, ns, "sc", "Running")

    def scale(n: int) -> None:
        patch = {"spec": {"replicaSpecs": {"Worker": {"replicas": n}}}}
        kube.patch(ASCENDJOBS, ns, "sc", patch)

    scale(4)
    pods = wait_pods(kube, ns, "sc", 5)
    assert sorted(pods) == [
        "sc-master-0",
        "sc-worker-0",
        "sc-worker-1",
        "sc-worker-2",
        "sc-worker-3",
    ]
    kubelet.running(pods["sc-worker-2"])
    kubelet.running(pods["sc-worker-3"])
    wait_for(
        lambda: (
            status_of(kube, ns, "sc").get("replicaStatuses", {}).get("Worker", {}).get("active")
            == 4
        ),
        "4 active workers",
    )

    scale(1)
    pods = wait_pods(kube, ns, "sc", 2)
    assert sorted(pods) == ["sc-master-0", "sc-worker-0"]  # the highest indices went
    wait_event(kube, ns, "sc", "SuccessfulDeletePod")
    kubelet.succeed_all(pods)
    wait_state(kube, ns, "sc", "Succeeded")


def test_foreign_owned_pod_is_left_alone(kube: KubeClient, ns: str, done: Reconciles) -> None:
    owner = kube.create(CONFIGMAPS, ns, {"metadata": {"name": "someone-else"}})
    foreign_ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "someone-else",
        "uid": owner["metadata"]["uid"],
        "controller": True,
    }
    foreign = kube.create(
        PODS,
        ns,
        {
            "metadata": {
                "name": "fo-worker-0",
                "labels": {JOB_LABEL: "fo", "job-name": "fo"},
                "ownerReferences": [foreign_ref],
            },
            "spec": {"containers": [{"name": "c", "image": "x"}]},
        },
    )
    kube.create(ASCENDJOBS, ns, pytorch_job("fo", workers=2))
    wait_for(
        lambda: {"fo-master-0", "fo-worker-1"} <= set(pods_of(kube, ns, "fo")),
        "the job's own pods",
    )
    done.wait_caught_up(kube, ns, "fo")  # the foreign pod carries our label: it was looked at
    now_pod = kube.get(PODS, ns, "fo-worker-0")
    assert now_pod["metadata"]["uid"] == foreign["metadata"]["uid"]
    assert now_pod["metadata"]["resourceVersion"] == foreign["metadata"]["resourceVersion"]
    assert now_pod["metadata"]["ownerReferences"] == [foreign_ref]
    assert state_is_not_terminal(status_of(kube, ns, "fo"))
    # ... and the job says why it waits.
    event = wait_event(kube, ns, "fo", "FailedCreatePod")
    assert event["type"] == "Warning"
    assert (
        f"pod {ns}/fo-worker-0 already exists and is controlled by ConfigMap someone-else"
        in event["message"]
    )


def state_is_not_terminal(status: dict[str, Any]) -> bool:
    conditions = status.get("conditions") or []
    return bool(conditions) and conditions[-1]["type"] not in ("Succeeded", "Failed")


def test_deleted_child_pod_is_recreated_without_a_restart(
    kube: KubeClient, kubelet: Kubelet, ns: str, done: Reconciles
) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job("dp"))
    pods = wait_pods(kube, ns, "dp", 2)
    kubelet.run_all(pods)
    wait_state(kube, ns, "dp", "Running")
    old_uid = pods["dp-worker-0"]["metadata"]["uid"]
    kube.delete(PODS, ns, "dp-worker-0")
    new = wait_recreated(kube, ns, "dp", "dp-worker-0", old_uid)
    kubelet.running(new)
    done.wait_caught_up(kube, ns, "dp")  # it has seen the new pod Running
    status = status_of(kube, ns, "dp")
    assert (status.get("restartCount") or 0) == 0
    assert condition(status, "Restarting") is None
    assert status["conditions"][-1]["type"] == "Running"


def _gauge_matches_api(kube: KubeClient) -> bool:
    items = kube.list(ASCENDJOBS, None).get("items") or []
    expected: dict[str, int] = {}
    for job in items:
        conditions = (job.get("status") or {}).get("conditions") or []
        if not conditions:
            return False  # not reconciled yet
        expected[conditions[-1]["type"]] = expected.get(conditions[-1]["type"], 0) + 1
    for state in ("Created", "Running", "Restarting", "Succeeded", "Failed"):
        if sample("ascendjob_jobs", {"state": state}) != expected.get(state, 0):
            return False
    return True


def test_metrics_follow_jobs(kube: KubeClient, kubelet: Kubelet, ns: str) -> None:
    labels = {"namespace": ns, "framework": "pytorch"}
    kube.create(ASCENDJOBS, ns, pytorch_job("m-ok"))
    kube.create(ASCENDJOBS, ns, pytorch_job("m-bad"))
    ok, bad = wait_pods(kube, ns, "m-ok", 2), wait_pods(kube, ns, "m-bad", 2)
    wait_for(lambda: sample("ascendjob_jobs_created_total", labels) == 2, "2 jobs created")
    assert sample("ascendjob_pods_created_total", labels) == 4
    kubelet.run_all(ok)
    kubelet.run_all(bad)
    wait_state(kube, ns, "m-ok", "Running")
    wait_state(kube, ns, "m-bad", "Running")
    wait_for(lambda: _gauge_matches_api(kube), "the state gauge to match the API")
    kubelet.succeed_all(ok)
    kubelet.failed(bad["m-bad-worker-0"], 3)
    wait_state(kube, ns, "m-ok", "Succeeded")
    wait_state(kube, ns, "m-bad", "Failed")
    wait_for(lambda: sample("ascendjob_jobs_successful_total", labels) == 1, "1 success")
    wait_for(lambda: sample("ascendjob_jobs_failed_total", labels) == 1, "1 failure")
    wait_for(lambda: _gauge_matches_api(kube), "the state gauge to match the API")
    succeeded_before = sample("ascendjob_jobs", {"state": "Succeeded"})

    kube.delete(ASCENDJOBS, ns, "m-ok")
    wait_for(lambda: sample("ascendjob_jobs_deleted_total", labels) == 1, "1 deletion")
    wait_for(
        lambda: sample("ascendjob_jobs", {"state": "Succeeded"}) == succeeded_before - 1,
        "the gauge to drop the deleted job",
    )
    wait_for(lambda: _gauge_matches_api(kube), "the state gauge to match the API")
    # Counters count transitions, not reconciles: nothing moved twice.
    assert sample("ascendjob_jobs_created_total", labels) == 2
    assert sample("ascendjob_jobs_successful_total", labels) == 1
    assert job_events(kube, ns, "m-bad")


def test_orphan_with_our_labels_is_adopted(kube: KubeClient, kubelet: Kubelet, ns: str) -> None:
    orphan = kube.create(
        PODS,
        ns,
        {
            "metadata": {"name": "ad-worker-0", "labels": {JOB_LABEL: "ad"}},
            "spec": {"containers": [{"name": "ascend", "image": "x"}]},
        },
    )
    job = kube.create(ASCENDJOBS, ns, pytorch_job("ad"))

    def adopted() -> dict[str, Any] | None:
        pod = kube.get(PODS, ns, "ad-worker-0")
        refs = pod["metadata"].get("ownerReferences") or []
        return pod if refs else None

    pod = wait_for(adopted, "the orphan adopted")
    assert pod["metadata"]["uid"] == orphan["metadata"]["uid"]  # adopted, not replaced
    (ref,) = pod["metadata"]["ownerReferences"]
    assert ref["uid"] == job["metadata"]["uid"] and ref["controller"] is True
    assert ref["kind"] == "AscendJob"
    pods = wait_pods(kube, ns, "ad", 2)
    kubelet.run_all(pods)
    wait_state(kube, ns, "ad", "Running")


def test_pods_get_the_service_address_and_ranks(kube: KubeClient, ns: str) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job("env", workers=2))
    pods = wait_pods(kube, ns, "env", 3)
    service = kube.get(SERVICES, ns, "env-master-0")
    ip = service["spec"]["clusterIP"]
    assert ip and ip != "None"
    ranks = {}
    for name, pod in pods.items():
        env = {e["name"]: e.get("value") for e in pod["spec"]["containers"][0].get("env", [])}
        assert env["MASTER_ADDR"] == ip, name
        assert env["WORLD_SIZE"] == "3"
        ranks[name] = env["RANK"]
        assert pod["metadata"]["annotations"]["hccl/rankIndex"] == env["RANK"]
    assert ranks == {"env-master-0": "0", "env-worker-0": "1", "env-worker-1": "2"}


def test_exitcode_without_exit_code_recreates(kube: KubeClient, kubelet: Kubelet, ns: str) -> None:
    """An evicted pod (phase Failed, no container exit code) is retried under ExitCode."""
    kube.create(ASCENDJOBS, ns, pytorch_job("ev", policy="ExitCode"))
    pods = wait_pods(kube, ns, "ev", 2)
    kubelet.run_all(pods)
    wait_state(kube, ns, "ev", "Running")
    victim = pods["ev-worker-0"]
    kube.patch(
        PODS,
        ns,
        "ev-worker-0",
        {"status": {"phase": "Failed", "reason": "Evicted", "containerStatuses": []}},
        subresource="status",
    )
    wait_recreated(kube, ns, "ev", "ev-worker-0", victim["metadata"]["uid"])
    assert wait_for(lambda: status_of(kube, ns, "ev").get("restartCount") == 1, "1 restart")


def test_exitcode_restarts_count_against_backoff_limit(
    kube: KubeClient, kubelet: Kubelet, ns: str, done: Reconciles
) -> None:
    kube.create(
        ASCENDJOBS, ns, pytorch_job("eb", policy="ExitCode", run_policy={"backoffLimit": 1})
    )
    pods = wait_pods(kube, ns, "eb", 2)
    kubelet.run_all(pods)
    wait_state(kube, ns, "eb", "Running")
    first_uid = pods["eb-worker-0"]["metadata"]["uid"]
    kubelet.failed(pods["eb-worker-0"], 143)
    second = wait_recreated(kube, ns, "eb", "eb-worker-0", first_uid)
    kubelet.running(second)
    wait_state(kube, ns, "eb", "Running")
    kubelet.failed(second, 137)
    status = wait_state(kube, ns, "eb", "Failed")
    assert condition(status, "Failed")["reason"] == "BackoffLimitExceeded"  # type: ignore[index]
    done.wait_caught_up(kube, ns, "eb")
    # The failure that exceeded the limit is not retried.
    assert pods_of(kube, ns, "eb")["eb-worker-0"]["metadata"]["uid"] == second["metadata"]["uid"]


def test_onfailure_pod_lost_as_a_whole_is_recreated(
    kube: KubeClient, kubelet: Kubelet, ns: str
) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job("ol", policy="OnFailure"))
    pods = wait_pods(kube, ns, "ol", 2)
    kubelet.run_all(pods)
    wait_state(kube, ns, "ol", "Running")
    old_uid = pods["ol-worker-0"]["metadata"]["uid"]
    kubelet.failed(pods["ol-worker-0"], 1)
    new = wait_recreated(kube, ns, "ol", "ol-worker-0", old_uid)
    kubelet.running(new)
    kubelet.succeed_all(pods_of(kube, ns, "ol"))
    status = wait_state(kube, ns, "ol", "Succeeded")
    assert status["restartCount"] == 1

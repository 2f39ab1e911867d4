"""The controller under API faults: failed pod creates and status conflicts.

Faults are cluster-wide, so this module has its own cluster and controller and clears the
faults after every test.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.job import plan as planning
from ascendjob_controller.kube.client import ASCENDJOBS, KubeClient
from ascendjob_controller.kube.informer import Informer
from tests.integration.controller.helpers import (
    Kubelet,
    fresh_namespace,
    job_events,
    pytorch_job,
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
def ns(bare_cluster: Any, kube: KubeClient, controller: AscendJobController) -> Iterator[str]:
    yield fresh_namespace(kube)
    if hasattr(bare_cluster, "faults"):  # only the local cluster injects faults
        bare_cluster.faults.clear()


def _refused_then_retried(
    bare_cluster: Any,
    kube: KubeClient,
    kubelet: Kubelet,
    ns: str,
    job: str,
    resource: str,
    refusals: int,
) -> dict[str, Any]:
    """The job's first `refusals` creates of `resource` answered 403; returns the Warning
    Event that reported them, once the retries have let the job run to Succeeded."""
    # 403 is not retried by the client: the reconciler sees it, reports it, and backs off.
    bare_cluster.faults.fail("create", resource, code=403, count=refusals)
    kube.create(ASCENDJOBS, ns, pytorch_job(job))
    reason = {"pods": "FailedCreatePod", "services": "FailedCreateService"}[resource]
    event = wait_event(kube, ns, job, reason)
    assert event["type"] == "Warning"
    assert "fault injected: 403" in event["message"], event["message"]
    # Once the API accepts creates again, the missing children appear (exactly two pods).
    pods = wait_pods(kube, ns, job, 2)
    kubelet.run_all(pods)
    kubelet.succeed_all(pods)
    wait_state(kube, ns, job, "Succeeded")
    return event


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_failed_pod_create_is_reported_and_retried(
    bare_cluster: Any, kube: KubeClient, kubelet: Kubelet, ns: str
) -> None:
    _refused_then_retried(bare_cluster, kube, kubelet, ns, "fc", "pods", refusals=2)
    created = [e for e in job_events(kube, ns, "fc") if e["reason"] == "SuccessfulCreatePod"]
    # One Event per plan names its pods ("Created pod: x" or "Created 2 pods: x, y"): each
    # pod is named exactly once.
    named = [
        name
        for e in created
        for _ in range(int(e.get("count") or 1))
        for name in e["message"].split(": ", 1)[1].split(", ")
    ]
    assert sorted(named) == ["fc-master-0", "fc-worker-0"], [e["message"] for e in created]


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_failed_service_create_is_reported_and_retried(
    bare_cluster: Any, kube: KubeClient, kubelet: Kubelet, ns: str
) -> None:
    """A refused Service (a quota, an admission webhook) is a Warning Event, as a pod's is."""
    event = _refused_then_retried(bare_cluster, kube, kubelet, ns, "fs", "services", refusals=1)
    assert event["message"].startswith(f"Error creating service {ns}/fs-master-0: ")


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_status_conflicts_are_replanned_not_lost(
    bare_cluster: Any, kube: KubeClient, kubelet: Kubelet, ns: str
) -> None:
    kube.create(ASCENDJOBS, ns, pytorch_job("cf"))
    pods = wait_pods(kube, ns, "cf", 2)
    wait_state(kube, ns, "cf", "Created")
    conflicts_before = _status_conflicts(bare_cluster)
    bare_cluster.faults.fail("patch", "ascendjobs/status", code=409, count=3)
    kubelet.run_all(pods)
    wait_state(kube, ns, "cf", "Running")
    kubelet.succeed_all(pods)
    status = wait_state(kube, ns, "cf", "Succeeded")
    assert status["replicaStatuses"]["Worker"]["succeeded"] == 1
    assert [c["type"] for c in status["conditions"]] == ["Created", "Running", "Succeeded"]
    assert _status_conflicts(bare_cluster) - conflicts_before >= 3  # the faults did fire


def _status_conflicts(cluster: Any) -> float:
    """409s the controller's status patches got (client side, as client-go counts them)."""
    host = f"127.0.0.1:{cluster.port}"
    return sample("rest_client_requests_total", {"code": "409", "method": "PATCH", "host": host})


def test_user_edit_racing_the_status_write_is_kept(
    kube: KubeClient, kubelet: Kubelet, ns: str
) -> None:
    """A metadata change the controller has not seen yet survives its status writes."""
    kube.create(ASCENDJOBS, ns, pytorch_job("race"))
    pods = wait_pods(kube, ns, "race", 2)
    kubelet.run_all(pods)
    kube.patch(ASCENDJOBS, ns, "race", {"metadata": {"labels": {"team": "a"}}})
    wait_state(kube, ns, "race", "Running")
    kubelet.succeed_all(pods)
    wait_state(kube, ns, "race", "Succeeded")
    job = kube.get(ASCENDJOBS, ns, "race")
    assert job["metadata"]["labels"]["team"] == "a"
    assert status_of(kube, ns, "race")["replicaStatuses"]["Master"]["succeeded"] == 1


def _event_count(
    kube: KubeClient, ns: str, name: str, reason: str, type_: str | None = None
) -> int:
    return sum(
        int(e.get("count") or 1)
        for e in job_events(kube, ns, name)
        if e["reason"] == reason and type_ in (None, e.get("type"))
    )


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_a_conflicted_transition_is_announced_once(
    bare_cluster: Any, kube: KubeClient, kubelet: Kubelet, ns: str, controller: AscendJobController
) -> None:
    """Events and counters of a transition follow its status write: a 409 then a successful
    re-plan must not report the same restart or success twice."""
    labels = {"namespace": ns, "framework": "pytorch"}
    kube.create(ASCENDJOBS, ns, pytorch_job("once", workers=0, policy="ExitCode"))
    pods = wait_pods(kube, ns, "once", 1)
    kubelet.run_all(pods)
    wait_state(kube, ns, "once", "Running")

    bare_cluster.faults.fail("patch", "ascendjobs/status", code=409, count=1)
    kubelet.failed(pods["once-master-0"], 137)
    wait_for(lambda: status_of(kube, ns, "once").get("restartCount") == 1, "1 restart")
    new = wait_recreated(
        kube, ns, "once", "once-master-0", pods["once-master-0"]["metadata"]["uid"]
    )
    kubelet.running(new)
    wait_state(kube, ns, "once", "Running")

    bare_cluster.faults.fail("patch", "ascendjobs/status", code=409, count=1)
    kubelet.succeeded(new)
    wait_state(kube, ns, "once", "Succeeded")
    controller.recorder.flush(10.0)
    assert _event_count(kube, ns, "once", "JobSucceeded") == 1
    assert _event_count(kube, ns, "once", "JobRestarting") == 1
    # Ours (Warning) once; MindCluster's Normal ExitedWithCode goes beside it.
    assert _event_count(kube, ns, "once", "ExitedWithCode", "Warning") == 1
    assert sample("ascendjob_jobs_restarted_total", labels) == 1
    assert sample("ascendjob_jobs_successful_total", labels) == 1


def _server_lists(cluster: Any, informers: list[Informer]) -> dict[str, int]:
    return {i.resource.plural: cluster.request_count("list", i.resource.plural) for i in informers}


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_dropped_and_expired_watches_do_not_lose_a_job(
    bare_cluster: Any, kube: KubeClient, kubelet: Kubelet, ns: str, controller: AscendJobController
) -> None:
    informers = controller.informers  # jobs, pods, services, podgroups
    kube.create(ASCENDJOBS, ns, pytorch_job("dw", workers=2))
    pods = wait_pods(kube, ns, "dw", 3)
    bare_cluster.faults.drop_watches()
    kubelet.run_all(pods)
    wait_state(kube, ns, "dw", "Running")
    before = _server_lists(bare_cluster, informers)
    lists_before = {i.resource.plural: i.lists for i in informers}
    # The next four watches get 410 Gone, and every watch ends now: each informer that opens
    # one of them must relist. (Which informers open them is a race: one whose watch ends with
    # no events backs off a moment, and a fast one may take two in a row.)
    for _ in range(4):
        bare_cluster.faults.expire_next_watch()
    bare_cluster.faults.drop_watches()
    kubelet.failed(pods["dw-worker-1"], 1)
    status = wait_state(kube, ns, "dw", "Failed")
    assert status["replicaStatuses"]["Worker"]["failed"] == 1

    def relists() -> dict[str, int]:
        now = _server_lists(bare_cluster, informers)
        return {r: now[r] - before[r] for r in now}

    def informers_relisted() -> dict[str, int]:
        return {i.resource.plural: i.lists - lists_before[i.resource.plural] for i in informers}

    # One relist per 410, as the server counts them (the test itself lists none of these
    # resources), and the informers have the same LISTs back (an informer counts its LIST
    # once the answer is in, a moment after the server counted it).
    wait_for(
        lambda: sum(relists().values()) >= 4 and informers_relisted() == relists(),
        "a relist for each of the four 410s, served and received",
    )
    assert sum(relists().values()) == 4, relists()
    assert informers_relisted() == relists()


def test_a_job_that_breaks_the_planner_is_reported_and_others_carry_on(
    kube: KubeClient, kubelet: Kubelet, ns: str, mocker: Any
) -> None:
    real_plan = planning.plan

    def plan_or_break(job: dict[str, Any], *args: Any, **kwargs: Any) -> planning.Plan:
        if job["metadata"]["name"] == "boom":
            raise RuntimeError("planner bug")
        return real_plan(job, *args, **kwargs)

    mocker.patch.object(planning, "plan", side_effect=plan_or_break)
    kube.create(ASCENDJOBS, ns, pytorch_job("boom"))
    kube.create(ASCENDJOBS, ns, pytorch_job("fine"))
    event = wait_event(kube, ns, "boom", "ReconcileError")
    assert event["type"] == "Warning"
    assert "RuntimeError" in event["message"], event["message"]
    pods = wait_pods(kube, ns, "fine", 2)
    kubelet.run_all(pods)
    kubelet.succeed_all(pods)
    wait_state(kube, ns, "fine", "Succeeded")
    assert status_of(kube, ns, "boom") in (None, {}), "no status is written from a failed plan"

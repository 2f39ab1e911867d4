"""The controller as operators run it: the console script, probes, signals, JSON logs, leases."""

from __future__ import annotations

import json
import signal
import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.ship.tools import ControllerProcess, get_job, kubectl_apply, small_job, wait_job

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

Start = Callable[..., ControllerProcess]


@pytest.fixture
def start_controller(tmp_path: Path) -> Iterator[Start]:
    started: list[ControllerProcess] = []

    def start(cluster: Any, *extra: str, name: str = "ctl") -> ControllerProcess:
        process = ControllerProcess(str(cluster.kubeconfig_path), tmp_path, *extra, name=name)
        started.append(process)
        return process

    yield start
    for process in started:
        process.stop()


def lease(cluster: Any, name: str, namespace: str = "default") -> dict[str, Any] | None:
    from kubernetes import client as k8s

    api = k8s.CustomObjectsApi(cluster.api_client())
    try:
        found: dict[str, Any] = api.get_namespaced_custom_object(
            "coordination.k8s.io", "v1", namespace, "leases", name
        )
    except k8s.ApiException as err:
        if err.status == 404:
            return None
        raise
    return found


def holder(cluster: Any, name: str) -> str | None:
    found = lease(cluster, name)
    return ((found or {}).get("spec") or {}).get("holderIdentity") or None


def job_pods(cluster: Any, job: str, namespace: str = "default") -> dict[str, str]:
    """name -> uid of the job's pods."""
    from kubernetes import client as k8s

    pods = k8s.CoreV1Api(cluster.api_client()).list_namespaced_pod(
        namespace, label_selector=f"training.kubeflow.org/job-name={job}"
    )
    return {pod.metadata.name: pod.metadata.uid for pod in pods.items}


def identity(process: ControllerProcess) -> str:
    return f"{socket.gethostname()}_{process.pid}"


def leader_flags(lease_id: str) -> tuple[str, ...]:
    return (
        "--leader-elect",
        "--leader-election-namespace", "default",
        "--leader-election-id", lease_id,
        "--leader-election-lease-duration", "4s",
        "--leader-election-renew-deadline", "3s",
        "--leader-election-retry-period", "500ms",
    )  # fmt: skip


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_readyz_is_500_until_the_caches_sync(bare_cluster: Any, start_controller: Start) -> None:
    bare_cluster.faults.fail("list", "pods", code=500)
    try:
        controller = start_controller(bare_cluster)
        controller.wait_for(lambda: controller.probe("/healthz")[0] == 200, 90, "/healthz")
        status, body = controller.probe("/readyz")
        assert status == 500, body
        assert "[-]informers-synced failed" in body
        assert controller.probe("/healthz") == (200, "ok")  # alive, just not ready
    finally:
        bare_cluster.faults.clear()
    controller.wait_ready(timeout=120)
    status, body = controller.probe("/readyz?verbose")
    assert status == 200
    assert "[+]informers-synced ok" in body


def test_sigterm_releases_the_lease_and_exits_0(bare_cluster: Any, start_controller: Start) -> None:
    controller = start_controller(bare_cluster, *leader_flags("ship-sigterm"))
    controller.wait_ready()
    controller.wait_for(
        lambda: holder(bare_cluster, "ship-sigterm") == identity(controller), 60, "the lease"
    )
    controller.signal(signal.SIGTERM)
    assert controller.wait(timeout=60) == 0, controller.logs()
    assert holder(bare_cluster, "ship-sigterm") is None  # released: a standby takes over at once
    assert controller.stderr_path.read_text() == ""


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_sigterm_ends_the_retries_of_a_reconcile_in_flight(
    bare_cluster: Any, kubectl_bin: str, start_controller: Start
) -> None:
    """On SIGTERM a request in flight gets no further attempt (client-go's cancelled context).

    Every pod create is refused with 503 and Retry-After: 1, which the client retries five
    times. The signal comes right after the first pod's first attempt; before the stop
    cancelled retries, the graceful stop waited out the other five, a second apart.
    """
    controller = start_controller(bare_cluster)
    controller.wait_ready()
    bare_cluster.faults.fail("create", "pods", code=503)
    try:
        job = small_job("ship-refused", 1)
        _, after = _pod_creates_around_sigterm(controller, bare_cluster, kubectl_bin, job, 1)
        # At most one attempt that had begun before the signal reached the client.
        assert after <= 1, controller.logs()
    finally:
        bare_cluster.faults.clear()
    events = [json.loads(line).get("event") for line in controller.log_lines()]
    assert "controller_stopped" in events
    assert controller.stderr_path.read_text() == ""


@pytest.mark.local_only("counts requests through the embedded server's hooks")
def test_sigterm_stops_a_batch_of_creates_waiting_for_the_rate_limiter(
    bare_cluster: Any, kubectl_bin: str, start_controller: Start
) -> None:
    """The creates of a slow-start batch that wait for the client's next token are not sent
    after SIGTERM; they used to drain at the client's QPS (here 5/s: 20 s for 100 pods)
    while the process waited for them to exit."""
    controller = start_controller(bare_cluster, "--kube-api-qps", "5", "--kube-api-burst", "5")
    controller.wait_ready()
    wide = small_job("ship-wide", 60)
    at = wide.rindex("replicas: 1")  # the Worker's
    wide = wide[:at] + "replicas: 100" + wide[at + 11 :]
    before, after = _pod_creates_around_sigterm(controller, bare_cluster, kubectl_bin, wide, 8)
    # At most the creates that had their token before the signal reached the client.
    assert after <= 2, controller.logs()
    assert before < 101  # the batch was cut short, not finished before the signal


def _pod_creates_around_sigterm(
    controller: ControllerProcess, cluster: Any, kubectl_bin: str, job: str, at_least: int
) -> tuple[int, int]:
    """Apply `job`, SIGTERM the controller once `at_least` pod creates reached the server,
    and see it exit 0: the pod creates before the signal, and those after it."""
    kubectl_apply(kubectl_bin, cluster, "-f", "-", stdin=job)
    controller.wait_for(
        lambda: cluster.request_count("create", "pods") >= at_least, 60, "pod creates"
    )
    before = cluster.request_count("create", "pods")
    controller.signal(signal.SIGTERM)
    assert controller.wait(timeout=60) == 0, controller.logs()
    return before, cluster.request_count("create", "pods") - before


def test_the_api_server_files_our_writes_under_our_name(
    bare_cluster: Any, kubectl_bin: str, start_controller: Start
) -> None:
    """The User-Agent names the controller, as client-go's does, so the API server's
    managedFields (and audit log) say who wrote: not the official client's "OpenAPI-Generator"."""
    from kubernetes import client as k8s

    controller = start_controller(bare_cluster)
    controller.wait_ready()
    kubectl_apply(kubectl_bin, bare_cluster, "-f", "-", stdin=small_job("ship-agent", 1))
    job = wait_job(bare_cluster, "ship-agent", ("Created", "Running", "Succeeded"))
    core = k8s.CoreV1Api(bare_cluster.api_client())
    selector = "training.kubeflow.org/job-name=ship-agent"

    def pods() -> list[Any]:
        return list(core.list_namespaced_pod("default", label_selector=selector).items)

    controller.wait_for(lambda: len(pods()) == 2, 60, "the job's two pods")
    for pod in pods():
        ours = [
            (m.manager, m.operation, m.subresource or "")
            for m in pod.metadata.managed_fields
            if m.manager == "ascendjob-controller"
        ]
        assert ours == [("ascendjob-controller", "Update", "")], pod.metadata.managed_fields
    status_writers = {
        m["manager"] for m in job["metadata"]["managedFields"] if m.get("subresource") == "status"
    }
    assert status_writers == {"ascendjob-controller"}, job["metadata"]["managedFields"]


def test_logs_are_json_lines_with_the_fields(
    local_cluster: Any, kubectl_bin: str, start_controller: Start
) -> None:
    controller = start_controller(local_cluster)
    controller.wait_ready()
    kubectl_apply(kubectl_bin, local_cluster, "-f", "-", stdin=small_job("ship-logs", 1))
    job = wait_job(local_cluster, "ship-logs", ("Succeeded",))
    controller.signal(signal.SIGINT)
    assert controller.wait(timeout=60) == 0
    lines = [json.loads(line) for line in controller.log_lines()]  # every line is JSON
    assert lines
    for line in lines:
        assert {"timestamp", "level", "event", "logger"} <= line.keys(), line
        assert line["timestamp"].endswith("Z")
    about_job = [line for line in lines if line.get("name") == "ship-logs"]
    assert about_job
    for line in about_job:
        assert (line["namespace"], line["uid"]) == ("default", job["metadata"]["uid"])
    assert any(any("duration" in key for key in line) for line in about_job), about_job


def test_only_the_leader_reconciles_and_a_standby_takes_over(
    local_cluster: Any, kubectl_bin: str, start_controller: Start
) -> None:
    flags = leader_flags("ship-failover")
    first = start_controller(local_cluster, *flags, name="first")
    first.wait_for(lambda: holder(local_cluster, "ship-failover") is not None, 60, "a leader")
    second = start_controller(local_cluster, *flags, name="second")
    first.wait_ready()
    second.wait_ready()  # a standby is ready too
    leader, standby = (first, second)
    if holder(local_cluster, "ship-failover") == identity(second):
        leader, standby = second, first
    assert holder(local_cluster, "ship-failover") == identity(leader)

    kubectl_apply(kubectl_bin, local_cluster, "-f", "-", stdin=small_job("ship-failover", 15))
    running = wait_job(local_cluster, "ship-failover", ("Running",))
    pods_before = job_pods(local_cluster, "ship-failover")
    assert sorted(pods_before) == ["ship-failover-master-0", "ship-failover-worker-0"]
    restarts_before = (running.get("status") or {}).get("restartCount") or 0
    pod_creates = local_cluster.request_count("create", "pods")
    assert leader.metric_sum("controller_runtime_reconcile_total", controller="ascendjob") > 0
    assert standby.metric_sum("controller_runtime_reconcile_total", controller="ascendjob") == 0
    assert leader.metric_sum("leader_election_master_status") == 1
    assert standby.metric_sum("leader_election_master_status") == 0

    leader.signal(signal.SIGKILL)  # no release: the standby must wait out the lease
    leader.wait(timeout=30)
    standby.wait_for(
        lambda: holder(local_cluster, "ship-failover") == identity(standby), 90, "takeover"
    )
    done = wait_job(local_cluster, "ship-failover", ("Succeeded",), timeout=120)
    assert standby.metric_sum("controller_runtime_reconcile_total", controller="ascendjob") > 0
    # The takeover picked the job up where it was: the same two pods (none created, even for
    # a moment, by either controller), and no restart counted.
    assert job_pods(local_cluster, "ship-failover") == pods_before
    assert local_cluster.request_count("create", "pods") == pod_creates, "a pod was created"
    assert ((done.get("status") or {}).get("restartCount") or 0) == restarts_before


def test_namespace_flag_restricts_the_controller(
    local_cluster: Any, kubectl_bin: str, start_controller: Start
) -> None:
    import subprocess

    for namespace in ("ship-team-a", "ship-team-b"):
        created = subprocess.run(
            [kubectl_bin, "--kubeconfig", str(local_cluster.kubeconfig_path),
             "create", "namespace", namespace],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert created.returncode == 0, created.stderr
    controller = start_controller(local_cluster, "--namespace", "ship-team-a")
    controller.wait_ready()
    for namespace in ("ship-team-a", "ship-team-b"):
        kubectl_apply(
            kubectl_bin, local_cluster, "-n", namespace, "-f", "-", stdin=small_job("ship-ns", 1)
        )
    done = wait_job(local_cluster, "ship-ns", ("Succeeded",), namespace="ship-team-a")
    assert done["status"]["conditions"][-1]["type"] == "Succeeded"
    ignored = get_job(local_cluster, "ship-ns", namespace="ship-team-b")
    assert not (ignored.get("status") or {}).get("conditions"), ignored.get("status")


@pytest.mark.local_only("injects lease-renewal failures through the embedded server's hooks")
def test_a_lost_lease_exits_with_status_1_and_says_why(
    bare_cluster: Any, start_controller: Start
) -> None:
    ctl = start_controller(
        bare_cluster,
        "--leader-elect",
        "--leader-election-namespace", "default",
        "--leader-election-id", "lost-lease",
        "--leader-election-lease-duration", "3s",
        "--leader-election-renew-deadline", "2s",
        "--leader-election-retry-period", "0.5s",
        name="lost",
    )  # fmt: skip
    ctl.wait_for(lambda: lease(bare_cluster, "lost-lease") is not None, 60, "the lease")
    # Every renewal from now on fails: the leader must give up within its renew deadline.
    bare_cluster.faults.fail("update", "leases", code=500)
    try:
        assert ctl.wait(timeout=60) == 1
    finally:
        bare_cluster.faults.clear()
    events = [json.loads(line) for line in ctl.log_lines() if line.startswith("{")]
    [lost] = [e for e in events if e.get("event") == "leader_lost"]
    assert lost["level"] == "error"
    assert "--leader-election-renew-deadline (2s)" in lost["reason"]
    assert any(e.get("event") == "controller_stopped" and e.get("lost_lease") for e in events)

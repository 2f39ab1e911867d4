"""The simulated kubelet against the real embedded API server, observed with the official client.

The cluster is started without its own kubelet (`bare_cluster`); each module starts ours, so
every write the tests observe went over HTTP exactly as a real kubelet's would. On the local
cluster every test runs a second time with the kubelet in-process (`inprocess.DirectClient`,
what `LocalCluster` gives its own kubelet): it must behave the same without the sockets.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client

from ascendjob_controller.localcluster.kubelet import (
    USER_AGENT,
    SimulatedKubelet,
    exit_code_for_run,
    parse_exit_codes,
    parse_run_seconds,
)

pytestmark = pytest.mark.integration

WAIT = 30.0  # generous: the machine is shared


@pytest.fixture(scope="module", params=["http", "in-process"])
def kubelet(bare_cluster: Any, request: pytest.FixtureRequest) -> Iterator[SimulatedKubelet]:
    transport = None
    if request.param == "in-process":
        if not hasattr(bare_cluster, "state"):
            pytest.skip("in-process serving is the local cluster's")
        from ascendjob_controller.localcluster.inprocess import DirectClient

        transport = DirectClient(bare_cluster.state, user_agent=USER_AGENT)
    k = SimulatedKubelet(
        bare_cluster.url, credentials=bare_cluster.credentials(), transport=transport
    )
    k.start()
    yield k
    k.stop()


@pytest.fixture(scope="module")
def core(bare_cluster: Any) -> client.CoreV1Api:
    return client.CoreV1Api(bare_cluster.api_client())


def pod_exists(core: client.CoreV1Api, name: str) -> bool:
    try:
        core.read_namespaced_pod(name, "default")
    except client.ApiException as err:
        if err.status == 404:
            return False
        raise
    return True


def wait_for(fn: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}; last value {last!r}")


def make_pod(
    core: client.CoreV1Api,
    name: str,
    *,
    policy: str = "Never",
    codes: str | None = None,
    seconds: str = "0.3",
    finalizers: list[str] | None = None,
    containers: int = 1,
) -> None:
    annotations = {"sim.acjob.local/run-seconds": seconds}
    if codes is not None:
        annotations["sim.acjob.local/exit-code"] = codes
    body = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "annotations": annotations, "finalizers": finalizers or []},
        "spec": {
            "restartPolicy": policy,
            "containers": [{"name": f"c{i}", "image": "img"} for i in range(containers)],
        },
    }
    core.create_namespaced_pod("default", body)


def phase_is(core: client.CoreV1Api, name: str, *phases: str) -> Callable[[], Any]:
    def check() -> Any:
        pod = core.read_namespaced_pod(name, "default")
        return pod if pod.status.phase in phases else None

    return check


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_exit_code_script_helpers() -> None:
    assert parse_exit_codes(None) == [0]
    assert parse_exit_codes("137, 0") == [137, 0]
    assert parse_exit_codes("x") == [1]
    assert [exit_code_for_run([137, 0], k) for k in range(4)] == [137, 0, 0, 0]
    assert parse_run_seconds(None) == 2.0
    assert parse_run_seconds("0.5") == 0.5
    assert parse_run_seconds("junk") == 2.0


def test_pod_runs_to_success(kubelet: SimulatedKubelet, core: client.CoreV1Api) -> None:
    name = unique("ok")
    make_pod(core, name, containers=2)
    running = wait_for(phase_is(core, name, "Running", "Succeeded"), "Running")
    assert running.spec.node_name == "local-node-1"
    assert running.status.pod_ip.startswith("10.244.")
    assert running.status.host_ip
    pod = wait_for(phase_is(core, name, "Succeeded"), "Succeeded")
    assert pod.status.start_time is not None
    assert {c.type for c in pod.status.conditions} >= {
        "Ready",
        "ContainersReady",
        "PodScheduled",
        "Initialized",
    }
    ready = next(c for c in pod.status.conditions if c.type == "Ready")
    assert ready.status == "False"
    assert [c.name for c in pod.status.container_statuses] == ["c0", "c1"]
    for cs in pod.status.container_statuses:
        term = cs.state.terminated
        assert term.exit_code == 0 and term.reason == "Completed"
        assert term.started_at is not None and term.finished_at is not None
        assert cs.restart_count == 0


def test_writes_are_filed_under_the_kubelet(
    kubelet: SimulatedKubelet, core: client.CoreV1Api
) -> None:
    """A real kubelet's User-Agent makes its managedFields entries "kubelet", apart from the
    pod's creator (here the official client, "OpenAPI-Generator")."""
    name = unique("agent")
    make_pod(core, name, containers=1)
    pod = wait_for(phase_is(core, name, "Succeeded"), "Succeeded")
    entries = {(m.manager, m.subresource or "") for m in pod.metadata.managed_fields}
    assert ("kubelet", "status") in entries, entries
    assert ("OpenAPI-Generator", "") in entries, entries
    assert not any(manager == "unknown" for manager, _ in entries), entries


def test_running_pod_is_ready(kubelet: SimulatedKubelet, core: client.CoreV1Api) -> None:
    name = unique("ready")
    make_pod(core, name, seconds="30")
    pod = wait_for(phase_is(core, name, "Running"), "Running")
    conds = {c.type: c.status for c in pod.status.conditions}
    assert conds["Ready"] == "True" and conds["ContainersReady"] == "True"
    assert conds["PodScheduled"] == "True" and conds["Initialized"] == "True"
    [cs] = pod.status.container_statuses
    assert cs.ready is True and cs.state.running is not None
    core.delete_namespaced_pod(name, "default")


def test_never_policy_failure(kubelet: SimulatedKubelet, core: client.CoreV1Api) -> None:
    name = unique("fail")
    make_pod(core, name, codes="3")
    pod = wait_for(phase_is(core, name, "Failed"), "Failed")
    [cs] = pod.status.container_statuses
    assert cs.state.terminated.exit_code == 3
    assert cs.state.terminated.reason == "Error"
    assert cs.restart_count == 0


def test_on_failure_restarts_in_place_then_succeeds(
    kubelet: SimulatedKubelet, core: client.CoreV1Api
) -> None:
    name = unique("onfail")
    make_pod(core, name, policy="OnFailure", codes="137,0")
    pod = wait_for(phase_is(core, name, "Succeeded"), "Succeeded")
    [cs] = pod.status.container_statuses
    assert cs.restart_count == 1
    assert cs.last_state.terminated.exit_code == 137
    assert cs.last_state.terminated.reason == "Error"
    assert cs.state.terminated.exit_code == 0
    assert kubelet.runs_started("default", name) == 2


def test_always_policy_restarts_even_on_success(
    kubelet: SimulatedKubelet, core: client.CoreV1Api
) -> None:
    name = unique("always")
    make_pod(core, name, policy="Always", seconds="0.7")
    first = wait_for(phase_is(core, name, "Running"), "Running")
    scheduled_at = next(
        c.last_transition_time for c in first.status.conditions if c.type == "PodScheduled"
    )

    def restarted() -> Any:
        pod = core.read_namespaced_pod(name, "default")
        statuses = pod.status.container_statuses or []
        return pod if statuses and statuses[0].restart_count >= 2 else None

    pod = wait_for(restarted, "two in-place restarts")
    assert pod.status.phase == "Running"
    assert pod.status.container_statuses[0].last_state.terminated.exit_code == 0
    # Over 1.4 s of restarts, the unchanged condition keeps its transition time.
    assert (
        next(c.last_transition_time for c in pod.status.conditions if c.type == "PodScheduled")
        == scheduled_at
    )
    core.delete_namespaced_pod(name, "default")


def test_recreated_pod_uses_the_next_exit_code(
    kubelet: SimulatedKubelet, core: client.CoreV1Api
) -> None:
    name = unique("again")
    make_pod(core, name, codes="1,0")
    first = wait_for(phase_is(core, name, "Failed"), "first run Failed")
    assert first.status.container_statuses[0].state.terminated.exit_code == 1
    core.delete_namespaced_pod(name, "default")
    wait_for(
        lambda: name not in {p.metadata.name for p in core.list_namespaced_pod("default").items},
        "deleted",
    )
    make_pod(core, name, codes="1,0")
    second = wait_for(phase_is(core, name, "Succeeded"), "second run Succeeded")
    assert second.status.container_statuses[0].state.terminated.exit_code == 0


def test_pod_ips_are_unique(kubelet: SimulatedKubelet, core: client.CoreV1Api) -> None:
    names = [unique("ip") for _ in range(5)]
    for name in names:
        make_pod(core, name, seconds="30")
    ips = [wait_for(phase_is(core, n, "Running"), n).status.pod_ip for n in names]
    assert len(set(ips)) == 5
    for name in names:
        core.delete_namespaced_pod(name, "default")


def test_terminating_pods_are_left_alone(kubelet: SimulatedKubelet, core: client.CoreV1Api) -> None:
    name = unique("term")
    make_pod(core, name, seconds="0.5", finalizers=["example.com/hold"])
    wait_for(phase_is(core, name, "Running"), "Running")
    core.delete_namespaced_pod(name, "default")
    pod = core.read_namespaced_pod(name, "default")
    assert pod.metadata.deletion_timestamp is not None
    rv = pod.metadata.resource_version
    time.sleep(1.5)  # past its run-seconds: a kubelet driving it would have finished it
    pod = core.read_namespaced_pod(name, "default")
    assert pod.status.phase == "Running"
    # At most one write: the kubelet's confirmation of the graceful delete (grace 0). A server
    # that deletes at once for a pod with finalizers leaves the pod untouched instead.
    confirmed = pod.metadata.deletion_grace_period_seconds == 0
    assert confirmed or pod.metadata.resource_version == rv
    core.patch_namespaced_pod(name, "default", {"metadata": {"finalizers": None}})


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_survives_api_errors_and_dropped_watches(
    bare_cluster: Any, kubelet: SimulatedKubelet, core: client.CoreV1Api
) -> None:
    bare_cluster.faults.fail("patch", "pods", code=500, percent=50)
    try:
        name = unique("flaky")
        make_pod(core, name)
        bare_cluster.faults.drop_watches()
        wait_for(phase_is(core, name, "Succeeded"), "Succeeded despite 500s")
    finally:
        bare_cluster.faults.clear()
    bare_cluster.faults.expire_next_watch()
    bare_cluster.faults.drop_watches()
    name = unique("after")
    make_pod(core, name)
    wait_for(phase_is(core, name, "Succeeded"), "Succeeded after a forced relist")


def test_podgroup_goes_inqueue(bare_cluster: Any, kubelet: SimulatedKubelet) -> None:
    custom = client.CustomObjectsApi(bare_cluster.api_client())
    name = unique("pg")
    custom.create_namespaced_custom_object(
        "scheduling.volcano.sh",
        "v1beta1",
        "default",
        "podgroups",
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name},
            "spec": {"minMember": 2},
        },
    )

    def inqueue() -> Any:
        pg = custom.get_namespaced_custom_object(
            "scheduling.volcano.sh", "v1beta1", "default", "podgroups", name
        )
        return pg if (pg.get("status") or {}).get("phase") == "Inqueue" else None

    wait_for(inqueue, "PodGroup Inqueue")


def test_stop_returns_promptly(bare_cluster: Any) -> None:
    extra = SimulatedKubelet(
        bare_cluster.url, node_name="other-node", credentials=bare_cluster.credentials()
    )
    extra.start()
    time.sleep(0.5)  # let its watches open
    started = time.monotonic()
    extra.stop()
    assert time.monotonic() - started < 5.0  # the contract is ~2 s; generous for a busy box


def test_writes_for_a_deleted_pod_never_land_on_its_same_name_successor(
    bare_cluster: Any, kubelet: SimulatedKubelet, core: client.CoreV1Api
) -> None:
    from ascendjob_controller.localcluster.kubelet import _PodRun

    name = unique("succ")
    make_pod(core, name, seconds="30")
    old = bare_cluster.api_client().sanitize_for_serialization(
        core.read_namespaced_pod(name, "default")
    )
    core.delete_namespaced_pod(name, "default")
    # A real server keeps a bound pod through its grace period (409 "object is being deleted")
    # until the kubelet confirms the delete; the local cluster deletes at once.
    wait_for(lambda: not pod_exists(core, name), "the old pod gone")
    make_pod(core, name, seconds="30")
    wait_for(phase_is(core, name, "Running"), "successor Running")
    idle = SimulatedKubelet(
        bare_cluster.url, node_name="unused", credentials=bare_cluster.credentials()
    )  # never started: no threads
    run = _PodRun(key=f"default/{name}", stage="running")
    try:
        assert not idle._patch(old, {"status": {"phase": "Failed"}}, True, run)
    finally:
        idle.stop()  # closes the connection _patch opened in this thread
    assert run.stage == "done"
    assert core.read_namespaced_pod(name, "default").status.phase == "Running"
    core.delete_namespaced_pod(name, "default")

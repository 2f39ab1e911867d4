"""status.restartCount survives a controller restart in the middle of a job.

This module starts and stops its own controllers (the shared `controller` fixture is not used).
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ascendjob_controller.kube.client import ASCENDJOBS, KubeClient
from tests.integration.controller.conftest import start_controller
from tests.integration.controller.helpers import (
    Kubelet,
    fresh_namespace,
    pods_of,
    pytorch_job,
    reconciles,
    status_of,
    wait_for,
    wait_pods,
    wait_recreated,
    wait_state,
)

pytestmark = pytest.mark.integration


def _restart_count_is(kube: KubeClient, ns: str, name: str, n: int) -> bool:
    return status_of(kube, ns, name).get("restartCount") == n


def test_restart_count_survives_a_controller_restart(
    bare_cluster: object, kube: KubeClient, kubelet: Kubelet
) -> None:
    ns = fresh_namespace(kube)
    first = start_controller(bare_cluster)
    try:
        kube.create(ASCENDJOBS, ns, pytorch_job("of", policy="OnFailure"))
        kube.create(ASCENDJOBS, ns, pytorch_job("ec", policy="ExitCode"))
        of_pods, ec_pods = wait_pods(kube, ns, "of", 2), wait_pods(kube, ns, "ec", 2)
        kubelet.run_all(of_pods)
        kubelet.run_all(ec_pods)
        wait_state(kube, ns, "of", "Running")
        wait_state(kube, ns, "ec", "Running")
        kubelet.restart_container(of_pods["of-worker-0"], restart_count=1)
        kubelet.failed(ec_pods["ec-worker-0"], 137)
        wait_for(lambda: _restart_count_is(kube, ns, "of", 1), "of restartCount 1")
        wait_for(lambda: _restart_count_is(kube, ns, "ec", 1), "ec restartCount 1")
    finally:
        first.stop(10.0)

    # While no controller runs, kubelet restarts the container again.
    kubelet.restart_container(of_pods["of-worker-0"], restart_count=2)

    second = start_controller(bare_cluster)
    try:
        # The new controller folds in the one restart it has not seen, and nothing twice.
        wait_for(lambda: _restart_count_is(kube, ns, "of", 2), "of restartCount 2")
        ec_new = wait_recreated(
            kube, ns, "ec", "ec-worker-0", ec_pods["ec-worker-0"]["metadata"]["uid"]
        )
        # Once it has reconciled both jobs from what the server holds, it has folded in all it
        # ever will: a restart counted twice would show now.
        done = reconciles(second)
        done.wait_caught_up(kube, ns, "of")
        done.wait_caught_up(kube, ns, "ec")
        assert status_of(kube, ns, "of")["restartCount"] == 2
        assert status_of(kube, ns, "ec")["restartCount"] == 1

        kubelet.succeed_all(pods_of(kube, ns, "of"))
        kubelet.succeeded(ec_new)
        kubelet.succeeded(ec_pods["ec-master-0"])
        assert wait_state(kube, ns, "of", "Succeeded")["restartCount"] == 2
        assert wait_state(kube, ns, "ec", "Succeeded")["restartCount"] == 1
    finally:
        second.stop(10.0)


def test_deadline_and_ttl_are_kept_across_a_controller_restart(
    bare_cluster: object, kube: KubeClient, kubelet: Kubelet
) -> None:
    """Both clocks run from persisted times (startTime, completionTime), not from memory."""
    ns = fresh_namespace(kube)
    first = start_controller(bare_cluster)
    try:
        kube.create(ASCENDJOBS, ns, pytorch_job("dl", run_policy={"activeDeadlineSeconds": 3}))
        kube.create(ASCENDJOBS, ns, pytorch_job("ttl", run_policy={"ttlSecondsAfterFinished": 2}))
        wait_state(kube, ns, "dl", "Created")
        pods = wait_pods(kube, ns, "ttl", 2)
        kubelet.run_all(pods)
        kubelet.succeed_all(pods)
        wait_state(kube, ns, "ttl", "Succeeded")
    finally:
        first.stop(10.0)

    # Both deadlines pass while no controller runs (counted from the persisted times, which
    # have whole seconds: a second more covers the truncation).
    started = datetime.fromisoformat(status_of(kube, ns, "dl")["startTime"])
    completed = datetime.fromisoformat(status_of(kube, ns, "ttl")["completionTime"])
    passed = max(started + timedelta(seconds=3), completed + timedelta(seconds=2))
    pause = threading.Event()
    while datetime.now(UTC) < passed + timedelta(seconds=1):
        pause.wait(0.05)
    assert status_of(kube, ns, "dl")["conditions"][-1]["type"] == "Created"
    second = start_controller(bare_cluster)
    try:
        status = wait_state(kube, ns, "dl", "Failed", timeout=15.0)
        assert status["conditions"][-1]["reason"] == "DeadlineExceeded"
        wait_for(lambda: status_of(kube, ns, "ttl") == {}, "the TTL deletion", 15.0)
    finally:
        second.stop(10.0)


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_a_recorded_restart_is_carried_out_once_by_the_next_controller(
    bare_cluster: Any, kube: KubeClient, kubelet: Kubelet
) -> None:
    """Record then act, across processes: the first controller counts the restart but cannot
    delete the failed pod; the next one deletes and recreates it without counting again."""
    ns = fresh_namespace(kube)
    first = start_controller(bare_cluster)
    try:
        kube.create(ASCENDJOBS, ns, pytorch_job("ra", policy="ExitCode"))
        pods = wait_pods(kube, ns, "ra", 2)
        kubelet.run_all(pods)
        wait_state(kube, ns, "ra", "Running")
        bare_cluster.faults.fail("delete", "pods", code=403)
        deletes_before = bare_cluster.request_count("delete", "pods")
        kubelet.failed(pods["ra-worker-0"], 137)
        wait_for(lambda: _restart_count_is(kube, ns, "ra", 1), "the restart recorded")
        # The first controller tries (and fails) to delete: the server saw the request.
        wait_for(
            lambda: bare_cluster.request_count("delete", "pods") > deletes_before,
            "the refused delete of ra-worker-0",
        )
        assert (
            pods_of(kube, ns, "ra")["ra-worker-0"]["metadata"]["uid"]
            == (pods["ra-worker-0"]["metadata"]["uid"])
        )
    finally:
        first.stop(10.0)
        bare_cluster.faults.clear()

    second = start_controller(bare_cluster)
    try:
        new = wait_recreated(kube, ns, "ra", "ra-worker-0", pods["ra-worker-0"]["metadata"]["uid"])
        kubelet.running(new)
        kubelet.succeed_all(pods_of(kube, ns, "ra"))
        assert wait_state(kube, ns, "ra", "Succeeded")["restartCount"] == 1
    finally:
        second.stop(10.0)

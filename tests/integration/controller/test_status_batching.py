"""A status write that only moves replica counts waits for the batch period (issue 12, P2).

Soon after our last status write, a pod update that changes nothing but `replicaStatuses`
is not written on its own: it rides along with the next transition, or is written once the
period has passed. Followed through the API, so it holds on both servers.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ascendjob_controller.controller import AscendJobController, ControllerOptions
from ascendjob_controller.job.plan import PlanOptions
from ascendjob_controller.kube.client import ASCENDJOBS, KubeClient
from tests.integration.controller.helpers import (
    Kubelet,
    fresh_namespace,
    make_client,
    pytorch_job,
    reconciles,
    started,
    status_of,
    wait_for,
    wait_pods,
    wait_recreated,
    wait_state,
)

pytestmark = pytest.mark.integration


def start(cluster: Any, period: float) -> AscendJobController:
    options = ControllerOptions(
        workers=2, gang_scheduling=False, plan_options=PlanOptions(status_batch_seconds=period)
    )
    return started(cluster, options)


@pytest.fixture
def held(bare_cluster: Any) -> Iterator[AscendJobController]:
    """Counts-only writes held for 10 minutes: longer than any test waits."""
    ctl = start(bare_cluster, 600.0)
    yield ctl
    ctl.stop(10.0)


@pytest.fixture
def short(bare_cluster: Any) -> Iterator[AscendJobController]:
    ctl = start(bare_cluster, 0.5)
    yield ctl
    ctl.stop(10.0)


def workers(kube: KubeClient, ns: str, name: str) -> dict[str, Any]:
    counts: dict[str, Any] = status_of(kube, ns, name).get("replicaStatuses", {}).get("Worker")
    return counts or {}


def running_job(
    kube: KubeClient, kubelet: Kubelet, ns: str, policy: str = "Never"
) -> dict[str, dict[str, Any]]:
    kube.create(ASCENDJOBS, ns, pytorch_job("b", workers=1, policy=policy))
    pods = wait_pods(kube, ns, "b", 2)
    kubelet.run_all(pods)
    wait_state(kube, ns, "b", "Running")
    wait_for(lambda: workers(kube, ns, "b").get("active") == 1, "the Worker counted active")
    return pods


def test_counts_ride_along_with_the_next_transition(
    bare_cluster: Any, held: AscendJobController, kubelet: Kubelet
) -> None:
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    pods = running_job(kube, kubelet, ns)
    before = status_of(kube, ns, "b")

    # The Worker finishes first: the job stays Running, only the counts would change.
    kubelet.succeeded(pods["b-worker-0"])
    reconciles(held).wait_cache_reconciled(f"{ns}/b")
    assert status_of(kube, ns, "b") == before  # the counts-only write is held back

    # The Master's success is a transition: written at once, with the held counts.
    kubelet.succeeded(pods["b-master-0"])
    done = wait_state(kube, ns, "b", "Succeeded")
    for rtype in ("Master", "Worker"):
        counts = done["replicaStatuses"][rtype]
        assert (counts.get("active"), counts.get("succeeded")) == (0, 1), counts


def test_held_counts_are_written_once_the_period_has_passed(
    bare_cluster: Any, short: AscendJobController, kubelet: Kubelet
) -> None:
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    pods = running_job(kube, kubelet, ns)
    kubelet.succeeded(pods["b-worker-0"])
    # No other event comes: the requeue at the end of the period writes them.
    wait_for(lambda: workers(kube, ns, "b").get("succeeded") == 1, "the Worker counted succeeded")
    assert workers(kube, ns, "b").get("active") == 0
    assert status_of(kube, ns, "b")["conditions"][-1]["type"] == "Running"


def test_a_replacement_does_not_push_held_counts_out(
    bare_cluster: Any, held: AscendJobController, kubelet: Kubelet
) -> None:
    """The restart is written at once; the replacement's create no longer writes counts.

    Recording the restart stores `failed: 1`; once the failed pod is deleted and its
    replacement created in the same reconcile, the Worker's counts read `failed: 0`, a
    counts-only change that now waits for the next transition like any other.
    """
    kube = make_client(bare_cluster)
    ns = fresh_namespace(kube)
    pods = running_job(kube, kubelet, ns, policy="ExitCode")
    old = pods["b-worker-0"]
    kubelet.failed(old, 137)  # SIGKILL: ExitCode retries it
    new = wait_recreated(kube, ns, "b", "b-worker-0", old["metadata"]["uid"])
    reconciles(held).wait_cache_reconciled(f"{ns}/b")
    status = status_of(kube, ns, "b")
    assert status.get("restartCount") == 1, status
    assert workers(kube, ns, "b").get("failed") == 1  # as the restart's write left it

    # The replacement running is a transition (Restarting -> Running): the counts go with it.
    kubelet.running(new)
    wait_state(kube, ns, "b", "Running")
    assert workers(kube, ns, "b").get("failed", 0) == 0
    assert workers(kube, ns, "b").get("active") == 1

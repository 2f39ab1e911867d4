"""The simulated kubelet's agenda: a wake steps only the pods that are due, each once.

The driver used to scan every tracked pod on every wake. These tests drive the bookkeeping
directly (no server: a transport that records requests and answers 200), so they pin what the
heap must keep: every live run on it exactly once, stale entries ignored, forgotten pods gone.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from ascendjob_controller.localcluster.kubelet import SimulatedKubelet


class _Recorder:
    """A Transport that answers every request 200 and never watches."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, str]] = []

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        decode: bool = True,
    ) -> tuple[int, Any]:
        self.requests.append((method, path))
        return 200, None

    def close(self) -> None:
        pass

    def watcher(self, *args: Any) -> Any:
        return None


def _pod(name: str, *, phase: str = "Pending", node: str = "local-node-1") -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {"nodeName": node, "containers": [{"name": "ascend", "image": "x"}]},
        "status": {"phase": phase},
    }


@pytest.fixture
def kubelet() -> SimulatedKubelet:
    return SimulatedKubelet("http://unused", transport=_Recorder())  # type: ignore[arg-type]


def _due_names(k: SimulatedKubelet, at: float) -> list[str]:
    with k._lock:
        return sorted(run.key for _, _, run in k._take_due(at))


def test_only_due_runs_are_taken(kubelet: SimulatedKubelet) -> None:
    for i in range(50):
        kubelet._on_pod_event("ADDED", _pod(f"p{i}"))
    with kubelet._lock:
        for uid, run in kubelet._runs.items():
            if uid != "uid-p7":
                run.due = time.monotonic() + 3600  # moved later without a new entry
    now = time.monotonic() + 1
    assert _due_names(kubelet, now) == ["default/p7"]
    assert _due_names(kubelet, now) == []  # taken once
    # The 49 moved ones went back on the agenda at their real due, and are taken then.
    assert len(_due_names(kubelet, time.monotonic() + 3601)) == 49


def test_a_stepped_run_comes_back_at_its_new_due(kubelet: SimulatedKubelet) -> None:
    kubelet._on_pod_event("ADDED", _pod("a"))
    kubelet._on_pod_event("ADDED", _pod("b"))
    kubelet._drive_once()  # both bound (nodeName set), their start is start_delay away
    with kubelet._lock:
        runs = dict(kubelet._runs)
    assert {r.stage for r in runs.values()} == {"bound"}
    assert _due_names(kubelet, time.monotonic() - 1) == []  # nothing due before start_delay
    later = max(r.due for r in runs.values()) + 0.001
    assert _due_names(kubelet, later) == ["default/a", "default/b"]
    assert len(kubelet._agenda) == 0


def test_forgotten_and_finished_runs_leave_the_agenda(kubelet: SimulatedKubelet) -> None:
    kubelet._on_pod_event("ADDED", _pod("gone"))
    kubelet._on_pod_event("ADDED", _pod("done"))
    kubelet._on_pod_event("ADDED", _pod("kept"))
    kubelet._on_pod_event("DELETED", _pod("gone"))
    with kubelet._lock:
        kubelet._runs["uid-done"].stage = "done"
    assert _due_names(kubelet, time.monotonic() + 1) == ["default/kept"]


def test_a_rescheduled_run_is_taken_once(kubelet: SimulatedKubelet) -> None:
    kubelet._on_pod_event("ADDED", _pod("r"))
    with kubelet._lock:
        run = kubelet._runs["uid-r"]
        run.due = time.monotonic() - 5
        kubelet._schedule("uid-r", run)  # two entries now; only the newer one is current
        assert len(kubelet._agenda) == 2
    assert _due_names(kubelet, time.monotonic() + 1) == ["default/r"]
    assert kubelet._agenda == []


def test_a_pod_seen_again_is_not_scheduled_twice(kubelet: SimulatedKubelet) -> None:
    kubelet._on_pod_event("ADDED", _pod("s"))
    kubelet._on_pod_event("MODIFIED", _pod("s"))
    kubelet._on_pod_relist([_pod("s")])
    assert len(kubelet._agenda) == 1


def test_a_wake_with_many_running_pods_steps_none_of_them(kubelet: SimulatedKubelet) -> None:
    transport = kubelet._http
    assert isinstance(transport, _Recorder)
    for i in range(200):
        kubelet._on_pod_event("ADDED", _pod(f"w{i}"))
    with kubelet._lock:
        for uid, run in kubelet._runs.items():
            run.stage, run.due = "running", time.monotonic() + 3600
            kubelet._schedule(uid, run)
    transport.requests.clear()
    assert len(kubelet._agenda) == 400  # 200 current, 200 stale from ADDED
    kubelet._drive_once()
    assert transport.requests == []
    assert len(kubelet._agenda) == 200  # the stale ones went, stepping nothing

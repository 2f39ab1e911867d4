"""Leader election with two electors against the local cluster (short durations)."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from ascendjob_controller import metrics
from ascendjob_controller.kube.client import LEASES, KubeClient
from ascendjob_controller.kube.leaderelection import LeaderElector
from tests.integration.kube.helpers import make_client, wait_for

pytestmark = pytest.mark.integration

LEASE, RENEW, RETRY = 2.0, 1.5, 0.3


class Timeline:
    """Every leading interval of every elector, to prove no two ever overlap."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.intervals: list[list[Any]] = []  # [identity, start, end or None]

    def started(self, identity: str) -> None:
        with self.lock:
            self.intervals.append([identity, time.monotonic(), None])

    def stopped(self, identity: str) -> None:
        with self.lock:
            for interval in reversed(self.intervals):
                if interval[0] == identity and interval[2] is None:
                    interval[2] = time.monotonic()
                    return

    def leaders(self) -> list[str]:
        with self.lock:
            return [i[0] for i in self.intervals if i[2] is None]

    def started_at(self, identity: str) -> float | None:
        with self.lock:
            starts = [i[1] for i in self.intervals if i[0] == identity]
            return starts[-1] if starts else None

    def assert_never_overlapping(self) -> None:
        with self.lock:
            spans = sorted(
                (s, e if e is not None else float("inf"), who) for who, s, e in self.intervals
            )
        for (_s1, e1, w1), (s2, _, w2) in itertools.pairwise(spans):
            assert s2 >= e1, f"{w1} led until {e1:.3f} but {w2} started at {s2:.3f}"


class Candidate:
    def __init__(
        self, client: KubeClient, lease: str, identity: str, timeline: Timeline, **kw: Any
    ) -> None:
        self.identity = identity
        self.stop = threading.Event()
        self.elector = LeaderElector(
            client,
            "default",
            lease,
            identity,
            lease_duration=LEASE,
            renew_deadline=RENEW,
            retry_period=RETRY,
            on_started_leading=lambda: timeline.started(identity),
            on_stopped_leading=lambda: timeline.stopped(identity),
            **kw,
        )
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def kill(self) -> None:
        self.stop.set()
        self.thread.join(30)
        assert not self.thread.is_alive()


@pytest.fixture(autouse=True)
def _clear_faults(bare_cluster: Any) -> Iterator[None]:
    if hasattr(bare_cluster, "faults"):  # only the local cluster injects faults
        bare_cluster.faults.clear()
    yield
    if hasattr(bare_cluster, "faults"):  # only the local cluster injects faults
        bare_cluster.faults.clear()


@pytest.fixture
def lease_name() -> str:
    return f"lease-{uuid.uuid4().hex[:8]}"


def test_exactly_one_leads_then_handover_after_a_crash(bare_cluster: Any, lease_name: str) -> None:
    timeline = Timeline()
    a = Candidate(make_client(bare_cluster), lease_name, "a", timeline, release_on_cancel=False)
    b = Candidate(make_client(bare_cluster), lease_name, "b", timeline, release_on_cancel=False)
    try:
        wait_for(lambda: len(timeline.leaders()) == 1, what="a leader")
        time.sleep(3 * LEASE)  # several renewals: the leader keeps it, the other waits
        leaders = timeline.leaders()
        assert len(leaders) == 1 and len(timeline.intervals) == 1
        leader, standby = (a, b) if leaders == ["a"] else (b, a)
        assert leader.elector.is_leader() and not standby.elector.is_leader()
        gauge = metrics.REGISTRY.get_sample_value(
            "leader_election_master_status", {"name": lease_name}
        )
        assert gauge is not None
        killed_at = time.monotonic()
        leader.kill()  # a crash: no release, the lease must expire
        wait_for(lambda: timeline.leaders() == [standby.identity], what="handover")
        handover = timeline.started_at(standby.identity)
        assert handover is not None
        # within lease duration + retry period (+ slack for a loaded machine)
        assert handover - killed_at <= LEASE + RETRY + 2.0
        lease = make_client(bare_cluster).get(LEASES, "default", lease_name)
        assert lease["spec"]["holderIdentity"] == standby.identity
        assert lease["spec"]["leaseTransitions"] >= 1
        timeline.assert_never_overlapping()
    finally:
        a.kill()
        b.kill()
    timeline.assert_never_overlapping()


def test_stop_releases_the_lease_for_an_immediate_takeover(
    bare_cluster: Any, lease_name: str
) -> None:
    timeline = Timeline()
    client = make_client(bare_cluster)
    a = Candidate(client, lease_name, "a", timeline)
    try:
        wait_for(lambda: timeline.leaders() == ["a"], what="a leads")
        a.kill()
        assert timeline.leaders() == []
        assert client.get(LEASES, "default", lease_name)["spec"]["holderIdentity"] == ""
        b = Candidate(client, lease_name, "b", timeline)
        try:
            wait_for(lambda: timeline.leaders() == ["b"], what="b takes the released lease")
        finally:
            b.kill()
    finally:
        a.kill()
    timeline.assert_never_overlapping()


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_a_leader_whose_renewals_fail_stops_before_its_lease_expires(
    bare_cluster: Any, lease_name: str
) -> None:
    timeline = Timeline()
    a = Candidate(make_client(bare_cluster), lease_name, "a", timeline)
    wait_for(lambda: timeline.leaders() == ["a"], what="a leads")
    b = Candidate(make_client(bare_cluster), lease_name, "b", timeline)
    try:
        time.sleep(2 * RETRY)
        bare_cluster.faults.fail("update", "leases", code=500)
        wait_for(lambda: timeline.leaders() == [], what="a steps down")
        stopped_at = timeline.intervals[0][2]
        last_renew_sent = a.elector._last_renew
        assert stopped_at - last_renew_sent < LEASE, "stepped down before the lease could expire"
        assert not a.elector.is_leader()
        bare_cluster.faults.clear()
        wait_for(lambda: timeline.leaders() == ["b"], what="b takes over once the API heals")
        assert timeline.started_at("b") - last_renew_sent >= LEASE - 0.05  # type: ignore[operator]
    finally:
        a.kill()
        b.kill()
    timeline.assert_never_overlapping()


def test_many_candidates_never_overlap(bare_cluster: Any, lease_name: str) -> None:
    """Four electors, leaders crash one by one; at every moment at most one leads."""
    timeline = Timeline()
    candidates = [
        Candidate(
            make_client(bare_cluster), lease_name, f"c{i}", timeline, release_on_cancel=(i % 2 == 0)
        )
        for i in range(4)
    ]
    try:
        for _ in range(3):
            wait_for(lambda: len(timeline.leaders()) == 1, what="a leader")
            leader = timeline.leaders()[0]
            next(c for c in candidates if c.identity == leader).kill()
            timeline.assert_never_overlapping()
        wait_for(lambda: len(timeline.leaders()) == 1, what="the last leader")
    finally:
        for c in candidates:
            c.kill()
    assert len(timeline.intervals) == 4
    timeline.assert_never_overlapping()


def test_renewals_do_not_queue_behind_the_controllers_throttled_traffic(
    bare_cluster: Any, lease_name: str
) -> None:
    """The shared client is starved (2 qps, dozens of requests queued); the leader holds on."""
    timeline = Timeline()
    shared = make_client(bare_cluster, qps=2.0, burst=1)
    a = Candidate(shared, lease_name, "a", timeline)
    wait_for(lambda: timeline.leaders() == ["a"], what="a leads")
    b = Candidate(make_client(bare_cluster), lease_name, "b", timeline)
    stop = threading.Event()

    def traffic() -> None:
        while not stop.is_set():
            shared.list(LEASES, "default")

    workers = [threading.Thread(target=traffic, daemon=True) for _ in range(8)]
    for w in workers:
        w.start()
    try:
        time.sleep(4 * LEASE)
        assert timeline.leaders() == ["a"] and len(timeline.intervals) == 1
    finally:
        stop.set()
        a.kill()
        b.kill()
        for w in workers:
            w.join(60)
    timeline.assert_never_overlapping()

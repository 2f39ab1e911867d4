"""Leader election with several electors against the local cluster.

Most tests drive the electors' clock by hand (`FakeClock`, shared by every elector of a test):
lease expiry and renew deadlines then move only when the test says so, and each step waits for
the electors to have acted at that time (an attempt, a renewal), so a slow renewal on a loaded
machine cannot end a lease early. The API calls, retry sleeps and overlap checks stay real.
`test_renewals_do_not_queue_behind_the_controllers_throttled_traffic` is the one real-time test,
with generous margins.
"""

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

LEASE, RENEW, RETRY = 2.0, 1.5, 0.3  # lease timing in FakeClock seconds; RETRY is real time


class FakeClock:
    """The electors' monotonic clock, moved only by the test."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._now = 1000.0

    def __call__(self) -> float:
        with self.lock:
            return self._now

    def advance_to(self, when: float) -> None:
        with self.lock:
            assert when >= self._now, "a monotonic clock never goes back"
            self._now = when

    def advance(self, seconds: float) -> None:
        self.advance_to(self() + seconds)


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
        self,
        client: KubeClient,
        lease: str,
        identity: str,
        timeline: Timeline,
        *,
        lease_duration: float = LEASE,
        renew_deadline: float = RENEW,
        retry_period: float = RETRY,
        **kw: Any,
    ) -> None:
        self.identity = identity
        self.stop = threading.Event()
        self.elector = LeaderElector(
            client,
            "default",
            lease,
            identity,
            lease_duration=lease_duration,
            renew_deadline=renew_deadline,
            retry_period=retry_period,
            on_started_leading=lambda: timeline.started(identity),
            on_stopped_leading=lambda: timeline.stopped(identity),
            **kw,
        )
        self._clock = self.elector._clock
        # Every finished acquire/renew attempt: (its clock when it began, whether it succeeded).
        self._attempts: list[tuple[float, bool]] = []
        self._attempts_lock = threading.Lock()
        attempt = self.elector._try_acquire_or_renew

        def counted(timeout: float) -> bool:
            began = self._clock()
            ok = attempt(timeout)
            with self._attempts_lock:
                self._attempts.append((began, ok))
            return ok

        setattr(self.elector, "_try_acquire_or_renew", counted)  # noqa: B010
        self.thread = threading.Thread(target=self.elector.run, args=(self.stop,), daemon=True)
        self.thread.start()

    def attempts(self) -> int:
        with self._attempts_lock:
            return len(self._attempts)

    def renewals(self) -> int:
        with self._attempts_lock:
            return sum(ok for _, ok in self._attempts)

    def wait_attempts(self, more: int = 2) -> None:
        """Wait for `more` further attempts to finish: with two, one began after this call."""
        target = self.attempts() + more
        wait_for(lambda: self.attempts() >= target, what=f"{self.identity} to try {more} times")

    def wait_renewed_at(self, when: float) -> None:
        """Wait until an attempt that began at clock `when` (or later) succeeded."""

        def renewed() -> bool:
            with self._attempts_lock:
                return any(ok and began >= when for began, ok in self._attempts)

        wait_for(renewed, what=f"{self.identity} to renew at {when}")

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


def gauge(lease_name: str) -> float | None:
    return metrics.REGISTRY.get_sample_value("leader_election_master_status", {"name": lease_name})


def holder_of(cluster: Any, lease_name: str) -> str:
    return str(make_client(cluster).get(LEASES, "default", lease_name)["spec"]["holderIdentity"])


def test_exactly_one_leads_then_handover_after_a_crash(bare_cluster: Any, lease_name: str) -> None:
    clock = FakeClock()
    timeline = Timeline()
    kw: dict[str, Any] = {"release_on_cancel": False, "clock": clock}
    a = Candidate(make_client(bare_cluster), lease_name, "a", timeline, **kw)
    b = Candidate(make_client(bare_cluster), lease_name, "b", timeline, **kw)
    try:
        wait_for(lambda: len(timeline.leaders()) == 1, what="a leader")
        leader, standby = (a, b) if timeline.leaders() == ["a"] else (b, a)
        # Three lease durations in steps shorter than the renew deadline: at each step the
        # leader renews at the new time and the standby sees that renewal; the leader keeps
        # the lease, the other waits.
        for _ in range(int(3 * LEASE / 0.5)):
            clock.advance(0.5)
            leader.wait_renewed_at(clock())
            standby.wait_attempts()
            assert timeline.leaders() == [leader.identity] and len(timeline.intervals) == 1
            assert leader.elector.is_leader() and not standby.elector.is_leader()
        assert holder_of(bare_cluster, lease_name) == leader.identity
        leader.kill()  # a crash: no release, the lease must expire
        assert gauge(lease_name) == 0.0, "the crashed leader's gauge dropped"
        standby.wait_attempts()  # it has seen the crashed leader's last renewal...
        last_seen = clock()  # ...at this time
        # Not a moment before the lease expires by the standby's clock...
        clock.advance_to(last_seen + LEASE - 0.05)
        standby.wait_attempts()
        assert timeline.leaders() == [] and holder_of(bare_cluster, lease_name) == leader.identity
        # ...and at the first attempt after it does.
        clock.advance_to(last_seen + LEASE + 0.05)
        wait_for(lambda: timeline.leaders() == [standby.identity], what="handover")
        assert gauge(lease_name) == 1.0, "leader_election_master_status of the new leader"
        lease = make_client(bare_cluster).get(LEASES, "default", lease_name)
        assert lease["spec"]["holderIdentity"] == standby.identity
        assert lease["spec"]["leaseTransitions"] == 1
        timeline.assert_never_overlapping()
    finally:
        a.kill()
        b.kill()
    assert gauge(lease_name) == 0.0
    timeline.assert_never_overlapping()


def test_stop_releases_the_lease_for_an_immediate_takeover(
    bare_cluster: Any, lease_name: str
) -> None:
    clock = FakeClock()  # never advanced: only the release can hand the lease over
    timeline = Timeline()
    client = make_client(bare_cluster)
    a = Candidate(client, lease_name, "a", timeline, clock=clock)
    try:
        wait_for(lambda: timeline.leaders() == ["a"], what="a leads")
        assert gauge(lease_name) == 1.0
        a.kill()
        assert timeline.leaders() == []
        assert gauge(lease_name) == 0.0
        assert client.get(LEASES, "default", lease_name)["spec"]["holderIdentity"] == ""
        b = Candidate(client, lease_name, "b", timeline, clock=clock)
        try:
            wait_for(lambda: timeline.leaders() == ["b"], what="b takes the released lease")
            assert gauge(lease_name) == 1.0
        finally:
            b.kill()
        assert gauge(lease_name) == 0.0
    finally:
        a.kill()
    timeline.assert_never_overlapping()


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_a_leader_whose_renewals_fail_stops_before_its_lease_expires(
    bare_cluster: Any, lease_name: str
) -> None:
    clock = FakeClock()
    timeline = Timeline()
    a = Candidate(make_client(bare_cluster), lease_name, "a", timeline, clock=clock)
    wait_for(lambda: timeline.leaders() == ["a"], what="a leads")
    b = Candidate(make_client(bare_cluster), lease_name, "b", timeline, clock=clock)
    try:
        bare_cluster.faults.fail("update", "leases", code=500)
        a.wait_attempts()  # a renewal failed: the lease record no longer changes
        last_renew_sent = a.elector._last_renew
        b.wait_attempts()  # b has seen that last record, at this time
        assert clock() == last_renew_sent
        # a holds on while its renew deadline has not passed, retrying...
        clock.advance_to(last_renew_sent + RENEW - 0.05)
        a.wait_attempts()
        assert timeline.leaders() == ["a"] and a.elector.is_leader()
        # ...and steps down as soon as it has, well before the lease could expire.
        clock.advance_to(last_renew_sent + RENEW + 0.01)
        wait_for(lambda: timeline.leaders() == [], what="a steps down")
        assert clock() - last_renew_sent < LEASE, "stepped down before the lease could expire"
        assert not a.elector.is_leader()
        bare_cluster.faults.clear()
        # b waits the lease out, counted from when it last saw the record change.
        b.wait_attempts()
        clock.advance_to(last_renew_sent + LEASE - 0.05)
        b.wait_attempts()
        assert timeline.leaders() == [], "b took a lease that had not expired"
        clock.advance_to(last_renew_sent + LEASE + 0.01)
        wait_for(lambda: timeline.leaders() == ["b"], what="b takes over once the API heals")
        assert clock() - last_renew_sent >= LEASE
    finally:
        a.kill()
        b.kill()
    timeline.assert_never_overlapping()


def test_many_candidates_never_overlap(bare_cluster: Any, lease_name: str) -> None:
    """Four electors, leaders crash one by one; at every moment at most one leads."""
    clock = FakeClock()
    timeline = Timeline()
    candidates = [
        Candidate(
            make_client(bare_cluster),
            lease_name,
            f"c{i}",
            timeline,
            release_on_cancel=(i % 2 == 0),
            clock=clock,
        )
        for i in range(4)
    ]
    try:
        for _ in range(3):
            wait_for(lambda: len(timeline.leaders()) == 1, what="a leader")
            leader = timeline.leaders()[0]
            crashed = next(c for c in candidates if c.identity == leader)
            crashed.kill()
            timeline.assert_never_overlapping()
            live = [c for c in candidates if c.thread.is_alive()]
            # A released lease is taken at once; one that was not, once it has expired: move
            # the clock on in steps shorter than the renew deadline, each seen by every
            # standby, until someone leads (a leader's first renewal must not fall behind).
            for _ in range(int(4 * LEASE / 0.5)):
                for c in live:
                    c.wait_attempts()
                if timeline.leaders():
                    break
                clock.advance(0.5)
        wait_for(lambda: len(timeline.leaders()) == 1, what="the last leader")
    finally:
        for c in candidates:
            c.kill()
    assert len(timeline.intervals) == 4
    timeline.assert_never_overlapping()


def test_renewals_do_not_queue_behind_the_controllers_throttled_traffic(
    bare_cluster: Any, lease_name: str
) -> None:
    """The shared client is starved (2 qps, dozens of requests queued); the leader holds on.

    Real time, with margins for a loaded machine: a renewal has 3.5 s, where queueing behind
    the starved bucket would take several seconds for each of its two requests.
    """
    timing = {"lease_duration": 5.0, "renew_deadline": 3.5, "retry_period": 0.5}
    timeline = Timeline()
    shared = make_client(bare_cluster, qps=2.0, burst=1)
    a = Candidate(shared, lease_name, "a", timeline, **timing)
    wait_for(lambda: timeline.leaders() == ["a"], what="a leads")
    b = Candidate(make_client(bare_cluster), lease_name, "b", timeline, **timing)
    stop = threading.Event()

    def traffic() -> None:
        while not stop.is_set():
            shared.list(LEASES, "default")

    workers = [threading.Thread(target=traffic, daemon=True) for _ in range(8)]
    for w in workers:
        w.start()
    try:
        # Ten renewals while starved (about one lease duration at this retry period).
        renewed = a.renewals()
        wait_for(lambda: a.renewals() >= renewed + 10, what="ten renewals by a")
        assert timeline.leaders() == ["a"] and len(timeline.intervals) == 1
        assert not b.elector.is_leader()
    finally:
        stop.set()
        a.kill()
        b.kill()
        for w in workers:
            w.join(60)
    timeline.assert_never_overlapping()

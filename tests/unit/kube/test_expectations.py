"""Expectations: AND semantics, TTL, and a lagging informer never causes a double create."""

from __future__ import annotations

import contextlib
import threading

from ascendjob_controller.kube.expectations import Expectations


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_unknown_job_is_satisfied() -> None:
    assert Expectations().satisfied("ns/job")


def test_creations_and_deletions_must_all_be_observed() -> None:
    exp = Expectations()
    exp.expect_creations("ns/j", ["ns/j-master-0", "ns/j-worker-0"])
    exp.expect_deletions("ns/j", ["ns/j-worker-1"])
    exp.creation_observed("ns/j", "ns/j-master-0")
    assert not exp.satisfied("ns/j")
    exp.creation_observed("ns/j", "ns/j-worker-0")
    assert not exp.satisfied("ns/j"), "a pending delete still blocks (AND, not OR)"
    exp.deletion_observed("ns/j", "ns/j-worker-1")
    assert exp.satisfied("ns/j")


def test_observations_are_idempotent_and_scoped_to_keys() -> None:
    exp = Expectations()
    exp.expect_creations("ns/j", ["ns/a", "ns/b"])
    exp.creation_observed("ns/j", "ns/a")
    exp.creation_observed("ns/j", "ns/a")
    exp.creation_observed("ns/j", "ns/unrelated")
    exp.creation_observed("ns/other", "ns/b")
    assert not exp.satisfied("ns/j")
    assert exp.pending("ns/j") == (frozenset({"ns/b"}), frozenset())


def test_failed_calls_lower_expectations() -> None:
    exp = Expectations()
    exp.expect_creations("ns/j", ["ns/a"])
    exp.expect_deletions("ns/j", ["ns/b"])
    exp.creation_failed("ns/j", "ns/a")
    exp.deletion_failed("ns/j", "ns/b")
    assert exp.satisfied("ns/j")


def test_expires_after_ttl_and_forget_clears() -> None:
    clock = FakeClock()
    exp = Expectations(ttl=300, clock=clock)
    exp.expect_creations("ns/j", ["ns/a"])
    clock.now = 299.0
    assert not exp.satisfied("ns/j")
    clock.now = 300.5
    assert exp.satisfied("ns/j")
    exp.expect_creations("ns/j", ["ns/c"])  # a fresh expectation restarts the clock
    assert not exp.satisfied("ns/j")
    exp.forget("ns/j")
    assert exp.satisfied("ns/j")
    assert exp.pending("ns/j") == (frozenset(), frozenset())


class LaggingCache:
    """A server plus an informer cache that only sees objects when `deliver` is called."""

    def __init__(self, exp: Expectations, job: str) -> None:
        self.server: set[str] = set()
        self.cache: set[str] = set()
        self.backlog: list[str] = []
        self.create_calls: list[str] = []
        self.exp = exp
        self.job = job
        self.lock = threading.Lock()

    def create(self, key: str) -> None:
        with self.lock:
            self.create_calls.append(key)
            if key in self.server:
                raise RuntimeError(f"AlreadyExists {key}")
            self.server.add(key)
            self.backlog.append(key)

    def deliver(self) -> None:
        with self.lock:
            backlog, self.backlog = self.backlog, []
        for key in backlog:
            self.cache.add(key)
            self.exp.creation_observed(self.job, key)


def reconcile(cache: LaggingCache, desired: list[str]) -> None:
    """The reconciler pattern: plan from the cache only when expectations are satisfied."""
    if not cache.exp.satisfied(cache.job):
        return
    missing = [k for k in desired if k not in cache.cache]
    cache.exp.expect_creations(cache.job, missing)
    for key in missing:
        try:
            cache.create(key)
        except RuntimeError:
            cache.exp.creation_failed(cache.job, key)


def test_lagging_informer_never_double_creates() -> None:
    exp = Expectations()
    cache = LaggingCache(exp, "ns/j")
    desired = ["ns/j-master-0", "ns/j-worker-0", "ns/j-worker-1"]
    for round_ in range(20):
        reconcile(cache, desired)
        if round_ % 7 == 6:  # the informer catches up only now and then
            cache.deliver()
    cache.deliver()
    reconcile(cache, desired)
    assert sorted(cache.create_calls) == sorted(desired)
    assert exp.satisfied("ns/j")


def test_without_expectations_the_lagging_cache_would_double_create() -> None:
    """Control for the test above: the simulation does detect double creates."""
    exp = Expectations()
    cache = LaggingCache(exp, "ns/j")
    for _ in range(3):
        missing = [k for k in ["ns/j-master-0"] if k not in cache.cache]
        for key in missing:
            with contextlib.suppress(RuntimeError):
                cache.create(key)
    assert len(cache.create_calls) == 3


def test_concurrent_reconciles_from_threads_do_not_double_create() -> None:
    """Workers for one job key are serialised by the queue; observers run on another thread."""
    exp = Expectations()
    cache = LaggingCache(exp, "ns/j")
    desired = [f"ns/j-worker-{i}" for i in range(10)]
    stop = threading.Event()

    def informer() -> None:
        while not stop.is_set():
            cache.deliver()
            stop.wait(0.001)

    thread = threading.Thread(target=informer)
    thread.start()
    try:
        for _ in range(200):
            reconcile(cache, desired)
    finally:
        stop.set()
        thread.join()
    cache.deliver()
    reconcile(cache, desired)
    assert sorted(cache.create_calls) == sorted(desired)


def test_expires_in_counts_down_to_the_ttl_and_is_none_when_nothing_waits() -> None:
    clock = FakeClock()
    exp = Expectations(ttl=300, clock=clock)
    assert exp.expires_in("ns/j") is None
    exp.expect_creations("ns/j", ["ns/a"])
    clock.now = 100.0
    assert exp.expires_in("ns/j") == 200.0
    clock.now = 400.0
    assert exp.expires_in("ns/j") == 0.0
    exp.creation_observed("ns/j", "ns/a")
    assert exp.expires_in("ns/j") is None


def test_an_observation_says_whether_it_was_awaited() -> None:
    """The controller batches the sync of a child it created or deleted itself, and no other."""
    exp = Expectations()
    exp.expect_creations("ns/j", ["ns/a"])
    exp.expect_deletions("ns/j", ["ns/b"])
    assert exp.creation_observed("ns/j", "ns/a") is True
    assert exp.creation_observed("ns/j", "ns/a") is False, "the second sighting is not ours"
    assert exp.creation_observed("ns/j", "ns/stray") is False
    assert exp.creation_observed("ns/other", "ns/a") is False
    assert exp.deletion_observed("ns/j", "ns/a") is False, "a create awaited is not a delete"
    assert exp.deletion_observed("ns/j", "ns/b") is True
    assert exp.deletion_observed("ns/j", "ns/b") is False
    assert exp.satisfied("ns/j")

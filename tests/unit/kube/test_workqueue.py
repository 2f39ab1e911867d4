"""Work queue invariants: dedupe, no concurrent processing, re-add while processing, delays."""

from __future__ import annotations

import itertools
import threading
import time
import uuid
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pytest_mock import MockerFixture

from ascendjob_controller import metrics
from ascendjob_controller.kube.ratelimit import ItemExponentialFailureRateLimiter
from ascendjob_controller.kube.workqueue import LONGEST_SLEEP_SECONDS, RateLimitingQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


class WatchedClock:
    """The real monotonic clock, telling when a thread first reads it.

    `get()` reads the queue's clock under the queue's lock right before it waits on its
    condition (which releases the lock): once the getter has read it, the next caller that
    takes the lock finds the getter blocked in that wait.
    """

    def __init__(self) -> None:
        self.getter_in = threading.Event()

    def __call__(self) -> float:
        if threading.current_thread().name == "getter":
            self.getter_in.set()
        return time.monotonic()


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.001)


def qname() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


def sample(metric: str, name: str) -> float:
    value = metrics.REGISTRY.get_sample_value(metric, {"name": name})
    return 0.0 if value is None else value


def test_waiting_key_is_queued_once() -> None:
    q = RateLimitingQueue(qname())
    for _ in range(5):
        q.add("ns/a")
    q.add("ns/b")
    assert len(q) == 2
    assert q.get(timeout=1) == "ns/a"
    assert q.get(timeout=1) == "ns/b"
    assert q.get(timeout=0.05) is None


def test_key_added_while_processing_is_processed_again_after_done() -> None:
    q = RateLimitingQueue(qname())
    q.add("ns/a")
    assert q.get(timeout=1) == "ns/a"
    q.add("ns/a")
    q.add("ns/a")
    assert len(q) == 0, "not handed out while a worker holds it"
    assert q.get(timeout=0.05) is None
    q.done("ns/a")
    assert len(q) == 1
    assert q.get(timeout=1) == "ns/a"
    q.done("ns/a")
    assert q.get(timeout=0.05) is None


def test_add_after_waits_for_the_clock_and_keeps_earliest_deadline() -> None:
    clock = FakeClock()
    q = RateLimitingQueue(qname(), clock=clock)
    q.add_after("ns/a", 10)
    q.add_after("ns/a", 5)
    q.add_after("ns/a", 30)
    assert q.get(timeout=0) is None
    clock.now += 4.9
    assert q.get(timeout=0) is None
    clock.now += 0.2
    assert q.get(timeout=0) == "ns/a"
    q.done("ns/a")
    clock.now += 100
    assert q.get(timeout=0) is None, "the superseded deadlines do not fire again"


def test_add_after_wakes_a_blocked_getter_on_the_real_clock() -> None:
    clock = WatchedClock()
    q = RateLimitingQueue(qname(), clock=clock)
    got: list[str | None] = []
    # No timeout of its own: only add_after's wake-up can hand it the key.
    thread = threading.Thread(target=lambda: got.append(q.get()), name="getter", daemon=True)
    thread.start()
    assert clock.getter_in.wait(30), "the getter entered get()"
    q.add_after("ns/a", 0.05)  # takes the lock: the getter is blocked in its wait by now
    thread.join(30)
    assert got == ["ns/a"]


@pytest.mark.parametrize(
    ("clock", "delay", "longest_sleep"),
    [(None, 300.0, 300.0), (None, 1e10, LONGEST_SLEEP_SECONDS), (FakeClock(), 300.0, 1.0)],
    ids=[
        "real clock: sleeps until the deadline",
        "real clock: a deadline centuries away, within what Condition.wait takes",
        "injected clock: wakes each second",
    ],
)
def test_the_timer_sleeps_until_a_distant_deadline_on_the_real_clock(
    clock: FakeClock | None, delay: float, longest_sleep: float, mocker: MockerFixture
) -> None:
    """An idle controller with one distant deadline (a TTL, an active deadline) should not
    wake every second; only a fake clock, which a test advances, needs that cap. A valid
    activeDeadlineSeconds may put the deadline past what Condition.wait accepts."""
    q = RateLimitingQueue(qname(), clock=clock)
    q.add_after("ns/a", delay)
    waits = mocker.spy(q._cond, "wait")
    got: list[str | None] = []
    thread = threading.Thread(target=lambda: got.append(q.get()), daemon=True)
    thread.start()
    wait_until(lambda: waits.call_count >= 1, "the getter to sleep")
    q.shutdown()
    thread.join(30)
    slept = waits.call_args_list[0].args[0]
    assert longest_sleep - 1.0 < slept <= longest_sleep
    assert got == [None], "the getter returned on shutdown, nothing raised in its sleep"


def test_add_after_merges_with_a_waiting_key() -> None:
    clock = FakeClock()
    q = RateLimitingQueue(qname(), clock=clock)
    q.add("ns/a")
    q.add_after("ns/a", 1)
    clock.now += 2
    assert q.get(timeout=0) == "ns/a"
    assert q.get(timeout=0) is None, "the delayed add found it still waiting: one copy only"


def test_rate_limited_adds_back_off_and_forget_resets() -> None:
    clock = FakeClock()
    name = qname()
    q = RateLimitingQueue(name, ItemExponentialFailureRateLimiter(1.0, 60.0), clock)
    q.add_rate_limited("ns/a")
    q.add_rate_limited("ns/a")  # second failure: 2 s, but the 1 s deadline wins
    assert q.num_requeues("ns/a") == 2
    clock.now += 0.9
    assert q.get(timeout=0) is None
    clock.now += 0.2
    assert q.get(timeout=0) == "ns/a"
    q.done("ns/a")
    q.add_rate_limited("ns/a")  # third failure: 4 s
    clock.now += 3.9
    assert q.get(timeout=0) is None
    clock.now += 0.2
    assert q.get(timeout=0) == "ns/a"
    q.done("ns/a")
    q.forget("ns/a")
    assert q.num_requeues("ns/a") == 0
    assert sample("workqueue_retries_total", name) == 3


def test_shutdown_drain_hands_out_waiting_keys_then_none() -> None:
    q = RateLimitingQueue(qname())
    q.add("ns/a")
    q.add("ns/b")
    assert q.get(timeout=1) == "ns/a"
    result: list[bool] = []
    closer = threading.Thread(target=lambda: result.append(q.shutdown(drain=True, timeout=30)))
    closer.start()
    q.add("ns/c")  # ignored once shutting down (or queued just before: both are fine)
    # shutdown() has run up to its wait (it sets the flag and waits under one lock hold);
    # had it not waited for the in-flight key it would return at once, so give it a moment.
    wait_until(q.shutting_down, "the closer to start shutting down")
    closer.join(0.05)
    assert closer.is_alive() and result == [], "drain waits for the in-flight key"
    q.done("ns/a")
    remaining = []
    while (key := q.get(timeout=1)) is not None:
        remaining.append(key)
        q.done(key)
    closer.join(30)
    assert result == [True]
    assert "ns/b" in remaining
    assert q.shutting_down()
    q.add("ns/d")
    assert q.get(timeout=0) is None


def test_shutdown_without_drain_drops_waiting_keys() -> None:
    q = RateLimitingQueue(qname())
    q.add("ns/a")
    q.add("ns/b")
    assert q.get(timeout=1) == "ns/a"
    assert q.shutdown(drain=False) is False, "one key still in flight"
    assert q.get(timeout=0) is None
    q.add("ns/a")
    q.done("ns/a")
    assert q.get(timeout=0) is None


def test_shutdown_drain_timeout_reports_stuck_work() -> None:
    q = RateLimitingQueue(qname())
    q.add("ns/a")
    assert q.get(timeout=1) == "ns/a"
    assert q.shutdown(drain=True, timeout=0.05) is False


def test_blocked_getter_returns_none_on_shutdown() -> None:
    clock = WatchedClock()
    q = RateLimitingQueue(qname(), clock=clock)
    got: list[str | None] = ["sentinel"]
    thread = threading.Thread(
        target=lambda: got.__setitem__(0, q.get()), name="getter", daemon=True
    )
    thread.start()
    assert clock.getter_in.wait(30), "the getter entered get()"
    q.shutdown(drain=False)  # takes the lock: the getter is blocked in its wait by now
    thread.join(30)
    assert got == [None]


def test_metrics_move() -> None:
    clock = FakeClock()
    name = qname()
    q = RateLimitingQueue(name, clock=clock)
    q.add("ns/a")
    q.add("ns/a")
    q.add("ns/b")
    assert sample("workqueue_adds_total", name) == 2
    assert sample("workqueue_depth", name) == 2
    clock.now += 3
    assert q.get(timeout=0) == "ns/a"
    assert sample("workqueue_depth", name) == 1
    assert sample("workqueue_queue_duration_seconds_count", name) == 1
    assert sample("workqueue_queue_duration_seconds_sum", name) == 3
    clock.now += 2
    assert sample("workqueue_unfinished_work_seconds", name) == 2
    assert sample("workqueue_longest_running_processor_seconds", name) == 2
    q.done("ns/a")
    assert sample("workqueue_work_duration_seconds_count", name) == 1
    assert sample("workqueue_work_duration_seconds_sum", name) == 2
    assert sample("workqueue_unfinished_work_seconds", name) == 0


def test_add_batched_fires_after_its_period_once() -> None:
    clock = FakeClock()
    q = RateLimitingQueue(qname(), clock=clock)
    q.add_batched("ns/a", 1.0)
    clock.now += 0.5
    q.add_batched("ns/a", 1.0)  # a later event in the same batch: the first deadline holds
    clock.now += 0.4
    assert q.get(timeout=0) is None
    clock.now += 0.2
    assert q.get(timeout=0) == "ns/a"
    q.done("ns/a")
    clock.now += 10
    assert q.get(timeout=0) is None, "one processing for the whole batch"


def test_a_processing_that_starts_later_meets_the_batch() -> None:
    clock = FakeClock()
    q = RateLimitingQueue(qname(), clock=clock)
    q.add_batched("ns/a", 1.0)
    q.add("ns/a")  # an urgent event for the same key: at once, not after the batch
    assert q.get(timeout=0) == "ns/a"
    q.done("ns/a")
    clock.now += 5
    assert q.get(timeout=0) is None, "the processing read the batched event's cache too"


def test_a_waiting_key_needs_no_batch() -> None:
    clock = FakeClock()
    q = RateLimitingQueue(qname(), clock=clock)
    q.add("ns/a")
    q.add_batched("ns/a", 1.0)
    assert q.get(timeout=0) == "ns/a"
    q.done("ns/a")
    clock.now += 5
    assert q.get(timeout=0) is None


def test_an_event_during_processing_is_batched_after_it() -> None:
    """The worker may have read the cache before the event: one more processing is owed,
    within the period, not at done()."""
    clock = FakeClock()
    q = RateLimitingQueue(qname(), clock=clock)
    q.add("ns/a")
    assert q.get(timeout=0) == "ns/a"
    q.add_batched("ns/a", 1.0)
    q.done("ns/a")
    assert q.get(timeout=0) is None, "not at once"
    clock.now += 1.1
    assert q.get(timeout=0) == "ns/a"


def test_processing_keeps_an_add_after_timer() -> None:
    """A requeue timer (a deadline, a held status write) is not an event: processing the key
    does not meet it, however batched deadlines come and go around it."""
    clock = FakeClock()
    q = RateLimitingQueue(qname(), clock=clock)
    q.add_after("ns/a", 2.0)
    q.add_batched("ns/a", 1.0)
    clock.now += 1.1
    assert q.get(timeout=0) == "ns/a"  # the batch
    q.done("ns/a")
    assert q.get(timeout=0) is None
    clock.now += 1.0
    assert q.get(timeout=0) == "ns/a"  # the timer


def test_add_batched_with_no_period_adds_at_once() -> None:
    q = RateLimitingQueue(qname(), clock=FakeClock())
    q.add_batched("ns/a", 0)
    assert q.get(timeout=0) == "ns/a"


def test_shutdown_drops_batched_deadlines() -> None:
    clock = FakeClock()
    q = RateLimitingQueue(qname(), clock=clock)
    q.add_batched("ns/a", 1.0)
    assert q.shutdown(drain=True, timeout=1)
    clock.now += 5
    assert q.get(timeout=0) is None


# --- property-based: random interleavings from several threads ---------------------------

KEYS = ["ns/a", "ns/b", "ns/c", "ns/d"]
op = st.one_of(
    st.tuples(st.just("add"), st.sampled_from(KEYS)),
    st.tuples(st.just("add_after"), st.sampled_from(KEYS)),
    st.tuples(st.just("add_batched"), st.sampled_from(KEYS)),
    st.tuples(st.just("work"), st.sampled_from(KEYS)),  # get; maybe re-add the key we hold
    st.tuples(st.just("work_forget"), st.sampled_from(KEYS)),  # get; done; forget
)
programs = st.lists(st.lists(op, min_size=1, max_size=25), min_size=2, max_size=4)


class Recorder:
    """A linearisation clock plus the facts the invariants are checked against."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tick = itertools.count()
        self.holding: dict[str, int] = {}  # key -> worker id holding it
        self.adds: list[tuple[str, int]] = []  # (key, tick just before the add)
        self.gets: list[tuple[str, int]] = []  # (key, tick just after the get)
        self.violations: list[str] = []

    def before_add(self, key: str) -> None:
        with self.lock:
            self.adds.append((key, next(self.tick)))

    def got(self, key: str, worker: int) -> None:
        with self.lock:
            self.gets.append((key, next(self.tick)))
            if key in self.holding:
                self.violations.append(f"{key} held by {self.holding[key]} and {worker}")
            self.holding[key] = worker

    def releasing(self, key: str) -> None:
        with self.lock:
            del self.holding[key]


def run_worker(q: RateLimitingQueue, rec: Recorder, worker: int, program: list[tuple]) -> None:
    for step, (kind, key) in enumerate(program):
        if kind == "add":
            rec.before_add(key)
            q.add(key)
        elif kind == "add_after":
            rec.before_add(key)
            q.add_after(key, 0.001 * (step % 5 + 1))
        elif kind == "add_batched":
            rec.before_add(key)
            q.add_batched(key, 0.001 * (step % 5 + 1))
        else:
            got = q.get(timeout=0.01)
            if got is None:
                continue
            rec.got(got, worker)
            if len(q) > len(KEYS):
                rec.violations.append(f"queue holds {len(q)} > {len(KEYS)} distinct keys")
            if kind == "work" and got == key:
                rec.before_add(got)
                q.add(got)  # re-added while processing: must be processed again
            rec.releasing(got)
            q.done(got)
            if kind == "work_forget":
                q.forget(got)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(programs)
def test_random_interleavings_keep_the_invariants(program_list: list[list[tuple]]) -> None:
    q = RateLimitingQueue(qname())
    rec = Recorder()
    threads = [
        threading.Thread(target=run_worker, args=(q, rec, i, prog))
        for i, prog in enumerate(program_list)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
        assert not t.is_alive()
    # Drain: once every delayed add is due and no one adds, each key can come out at most once.
    time.sleep(0.02)
    drained: list[str] = []
    while (key := q.get(timeout=0.1)) is not None:
        rec.got(key, -1)
        drained.append(key)
        rec.releasing(key)
        q.done(key)
    assert rec.violations == []
    assert len(drained) == len(set(drained)), f"duplicates waiting: {drained}"
    # Nothing lost: every add is followed by a get of that key.
    last_get: dict[str, int] = {}
    for key, tick in rec.gets:
        last_get[key] = max(tick, last_get.get(key, -1))
    for key, tick in rec.adds:
        assert last_get.get(key, -1) > tick, f"add of {key} at {tick} never processed"
    assert len(q) == 0 and q.in_flight() == 0


# --- one worker sleeps until the next deadline (the timer); the others until an add ----------
class Getters:
    """`count` threads that take keys with a plain `get()` (no timeout of their own) and
    finish each at once, until the queue shuts down."""

    def __init__(self, q: RateLimitingQueue, count: int) -> None:
        self.q = q
        self.lock = threading.Lock()
        self.got: list[str] = []
        self.threads = [
            threading.Thread(target=self._run, name=f"getter-{i}", daemon=True)
            for i in range(count)
        ]
        for thread in self.threads:
            thread.start()

    def _run(self) -> None:
        while (key := self.q.get()) is not None:
            with self.lock:
                self.got.append(key)
            self.q.done(key)

    def taken(self) -> list[str]:
        with self.lock:
            return list(self.got)

    def stop(self) -> None:
        self.q.shutdown(drain=False)
        for thread in self.threads:
            thread.join(30)
            assert not thread.is_alive()


def test_every_deadline_reaches_a_sleeping_worker() -> None:
    """Deadlines of both kinds, set while the workers sleep, take and finish keys: none is lost
    when the timer takes a key and leaves (another idle worker must take the role over)."""
    q = RateLimitingQueue(qname())
    getters = Getters(q, 4)
    try:
        time.sleep(0.05)  # all four asleep in get()
        keys = [f"ns/k{i}" for i in range(120)]
        for i, key in enumerate(keys):
            delay = 0.001 * (i * 7 % 40)
            if i % 3 == 0:
                q.add_after(key, delay)
            elif i % 3 == 1:
                q.add_batched(key, delay)
            else:
                q.add(key)
        wait_until(lambda: sorted(getters.taken()) == sorted(keys), "every key taken once")
    finally:
        getters.stop()


def test_the_timer_hands_over_when_it_takes_a_key() -> None:
    """The timer, woken by an add, takes that key and never comes back; the other sleeper,
    with nothing else to wake it, must take over the timer's deadline."""
    q = RateLimitingQueue(qname())
    first: list[str | None] = []
    one_shot = threading.Thread(target=lambda: first.append(q.get()), name="one", daemon=True)
    one_shot.start()
    time.sleep(0.05)
    q.add_after("ns/b", 0.3)  # wakes the only sleeper: the one-shot thread becomes the timer
    time.sleep(0.05)
    getters = Getters(q, 1)  # asleep after the timer: a Condition wakes in order
    try:
        time.sleep(0.05)
        q.add("ns/a")  # wakes the timer, which takes it and leaves
        one_shot.join(30)
        assert first == ["ns/a"]
        wait_until(lambda: getters.taken() == ["ns/b"], "the deadline met by the other worker")
    finally:
        getters.stop()


def test_a_sooner_deadline_wakes_the_timer() -> None:
    clock = WatchedClock()
    q = RateLimitingQueue(qname(), clock=clock)
    got: list[str | None] = []
    thread = threading.Thread(target=lambda: got.append(q.get()), name="getter", daemon=True)
    q.add_after("ns/late", 0.9)
    thread.start()
    assert clock.getter_in.wait(30)
    started = time.monotonic()
    q.add_after("ns/soon", 0.05)  # the getter sleeps until 0.9 s: it must wake for this one
    thread.join(30)
    assert got == ["ns/soon"]
    assert time.monotonic() - started < 0.6, "taken at the sooner deadline, not the later one"
    q.shutdown(drain=False)

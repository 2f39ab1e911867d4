"""A de-duplicating, delaying, rate-limited work queue of string keys.

Invariants (client-go `util/workqueue`, design section 3):

1. A key that is waiting is queued once, however often it is added ("dirty" set).
2. A key is never handed to two workers at once ("processing" set): `get` moves it from the
   queue to processing, and an `add` while it is processing only marks it dirty.
3. A key added while it was processing is queued again when its worker calls `done`, so the
   change that caused the add is never lost.
4. `add_after` keeps one deadline per key (the earliest); when it passes the key is added.
   `add_batched` keeps one more, apart, which any processing of the key that starts after it
   satisfies and cancels (the Kubernetes Job controller's batched pod-event syncs).
5. After `shutdown`, adds are ignored. With ``drain=True`` workers still receive the keys already
   waiting and `shutdown` waits (optionally bounded) for in-flight keys to be `done`; with
   ``drain=False`` `get` returns None at once and waiting keys are dropped.

The seven workqueue metrics are kept with label ``name``; the two "in progress" gauges are
computed at scrape time, so no background thread is needed.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
import weakref
from collections import deque

from ascendjob_controller import metrics
from ascendjob_controller.kube.ratelimit import Clock, RateLimiter, default_controller_rate_limiter

#: The longest the timer worker sleeps on the real clock before looking at the deadlines again.
LONGEST_SLEEP_SECONDS = 3600.0


class RateLimitingQueue:
    """The controller's queue: dedupe, delayed adds, per-key rate-limited retries."""

    def __init__(
        self,
        name: str,
        rate_limiter: RateLimiter | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.name = name
        self._clock: Clock = clock or time.monotonic
        # The timer's longest sleep. An injected clock may be fake: a test advancing it is
        # noticed within a second. The real clock needs only a bound Condition.wait accepts (a
        # valid activeDeadlineSeconds may be centuries away: OverflowError past TIMEOUT_MAX),
        # so an idle controller with a distant deadline pending wakes at most once an hour.
        self._sleep_cap = LONGEST_SLEEP_SECONDS if self._clock is time.monotonic else 1.0
        self._limiter: RateLimiter = rate_limiter or default_controller_rate_limiter(self._clock)
        self._cond = threading.Condition(threading.Lock())
        self._queue: deque[str] = deque()
        self._dirty: set[str] = set()
        self._processing: dict[str, float] = {}  # key -> when its worker got it
        self._added_at: dict[str, float] = {}  # key -> when it became dirty (queue latency)
        # One heap of (ready_at, seq, key, batched) for both kinds of deadline; an entry is
        # live while the dict of its kind still holds that deadline for that key.
        self._delayed: list[tuple[float, int, str, bool]] = []
        self._ready_at: dict[str, float] = {}  # key -> its live add_after deadline
        self._batch_at: dict[str, float] = {}  # key -> its live add_batched deadline
        self._seq = itertools.count()
        # When the one worker that sleeps until the next deadline (the timer) wakes; None while
        # no worker has that role. The other idle workers sleep until an add wakes one.
        self._timer_at: float | None = None
        self._shutting_down = False
        self._drop_waiting = False
        self._init_metrics()

    # --- metrics ---------------------------------------------------------------------------
    def _init_metrics(self) -> None:
        self._m_depth = metrics.WORKQUEUE_DEPTH.labels(name=self.name)
        self._m_adds = metrics.WORKQUEUE_ADDS.labels(name=self.name)
        self._m_queue_dur = metrics.WORKQUEUE_QUEUE_DURATION.labels(name=self.name)
        self._m_work_dur = metrics.WORKQUEUE_WORK_DURATION.labels(name=self.name)
        self._m_retries = metrics.WORKQUEUE_RETRIES.labels(name=self.name)
        self._m_depth.set(0)
        # A weak reference: the registry is global, the queue must still be collectable.
        ref = weakref.ref(self)

        def unfinished() -> float:
            q = ref()
            return q.unfinished_work_seconds() if q is not None else 0.0

        def longest() -> float:
            q = ref()
            return q.longest_running_processor_seconds() if q is not None else 0.0

        metrics.WORKQUEUE_UNFINISHED_WORK.labels(name=self.name).set_function(unfinished)
        metrics.WORKQUEUE_LONGEST_RUNNING.labels(name=self.name).set_function(longest)

    def unfinished_work_seconds(self) -> float:
        """Sum of how long every in-flight key has been processing (stuck-worker signal)."""
        with self._cond:
            now = self._clock()
            return sum(now - start for start in self._processing.values())

    def longest_running_processor_seconds(self) -> float:
        with self._cond:
            now = self._clock()
            return max((now - start for start in self._processing.values()), default=0.0)

    # --- adding ------------------------------------------------------------------------------
    def add(self, key: str) -> None:
        with self._cond:
            self._add_locked(key)

    def _add_locked(self, key: str) -> None:
        if self._shutting_down or key in self._dirty:
            return
        self._m_adds.inc()
        self._dirty.add(key)
        self._added_at[key] = self._clock()
        if key in self._processing:
            return  # invariant 3: done() re-queues it
        self._queue.append(key)
        self._m_depth.set(len(self._queue))
        self._cond.notify()

    def add_after(self, key: str, delay: float) -> None:
        """Add `key` once `delay` seconds have passed; the earliest pending deadline wins."""
        with self._cond:
            self._defer_locked(key, delay, batched=False)

    def add_batched(self, key: str, period: float) -> None:
        """Process `key` within `period` seconds, together with whatever else comes for it.

        For an event that can wait (a pod making progress): the key is added once `period`
        has passed, unless a processing of it starts before then, which reads the cache this
        event is already in and so makes the deadline moot. A key already waiting in the
        queue (or to be queued again when its worker is done) needs nothing more. Unlike
        `add_after`'s, this deadline never delays an `add`, and a timer set with `add_after`
        is kept apart, never cancelled by processing.
        """
        with self._cond:
            if key in self._dirty:
                return  # queued, or queued again at done(): that processing starts later
            self._defer_locked(key, period, batched=True)

    def _defer_locked(self, key: str, delay: float, batched: bool) -> None:
        """Give `key` a deadline `delay` from now in the table of its kind (earliest wins)."""
        if self._shutting_down:
            return
        if delay <= 0:
            self._add_locked(key)
            return
        deadlines = self._batch_at if batched else self._ready_at
        ready_at = self._clock() + delay
        current = deadlines.get(key)
        if current is not None and current <= ready_at:
            return
        deadlines[key] = ready_at
        heapq.heappush(self._delayed, (ready_at, next(self._seq), key, batched))
        if self._timer_at is None:
            self._cond.notify()  # an idle worker, if any, becomes the timer
        elif ready_at < self._timer_at:
            # The timer sleeps past this deadline; it cannot be told apart from the other
            # sleepers, so all wake (a deadline sooner than every other is rare under load:
            # waking every idle worker per deferral cost more than the reconciles it saved).
            self._cond.notify_all()

    def add_rate_limited(self, key: str) -> None:
        """Retry `key` after its rate limiter's delay (error path)."""
        self._m_retries.inc()
        self.add_after(key, self._limiter.when(key))

    def forget(self, key: str) -> None:
        """Reset the key's back-off (success path); does not remove it from the queue."""
        self._limiter.forget(key)

    def num_requeues(self, key: str) -> int:
        return self._limiter.num_requeues(key)

    def _promote_ready_locked(self) -> float | None:
        """Move delayed keys whose deadline passed into the queue; return the next deadline."""
        now = self._clock()
        while self._delayed:
            ready_at, _, key, batched = self._delayed[0]
            live = self._batch_at if batched else self._ready_at
            if live.get(key) != ready_at:
                heapq.heappop(self._delayed)  # superseded by an earlier deadline, or met
                continue
            if ready_at > now:
                return ready_at
            heapq.heappop(self._delayed)
            del live[key]
            self._add_locked(key)
        return None

    # --- consuming ---------------------------------------------------------------------------
    def get(self, timeout: float | None = None) -> str | None:
        """The next key to process, or None once shut down (and drained) or on timeout.

        The caller owns the key until it calls `done(key)`.
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while True:
                next_ready = None if self._shutting_down else self._promote_ready_locked()
                if self._queue and not self._drop_waiting:
                    key = self._take_locked()
                    self._hand_timer_over_locked()
                    return key
                if self._shutting_down:
                    return None
                wait: float | None = None
                if deadline is not None:
                    wait = deadline - time.monotonic()
                    if wait <= 0:
                        self._hand_timer_over_locked()
                        return None
                timer = next_ready is not None and self._timer_at is None
                if timer:
                    assert next_ready is not None
                    until_ready = min(max(0.0, next_ready - self._clock()), self._sleep_cap)
                    wait = until_ready if wait is None else min(wait, until_ready)
                    self._timer_at = self._clock() + wait
                try:
                    self._cond.wait(wait)
                finally:
                    if timer:
                        self._timer_at = None

    def _take_locked(self) -> str:
        """Hand the next queued key to the calling worker."""
        key = self._queue.popleft()
        self._m_depth.set(len(self._queue))
        now = self._clock()
        self._processing[key] = now
        self._dirty.discard(key)
        self._batch_at.pop(key, None)  # this processing meets it
        added = self._added_at.pop(key, now)
        self._m_queue_dur.observe(max(0.0, now - added))
        return key

    def _hand_timer_over_locked(self) -> None:
        """A worker leaves get() while no worker is the timer and deadlines are pending: wake
        an idle one, if any, to take the role (a finished worker's next get() would too)."""
        if self._timer_at is None and self._delayed and not self._shutting_down:
            self._cond.notify()

    def done(self, key: str) -> None:
        """Mark `key` finished; if it was added meanwhile, queue it again (invariant 3)."""
        with self._cond:
            start = self._processing.pop(key, None)
            if start is not None:
                self._m_work_dur.observe(max(0.0, self._clock() - start))
            if key in self._dirty and not self._drop_waiting:
                self._queue.append(key)
                self._m_depth.set(len(self._queue))
                self._cond.notify()  # one worker can take it
            if self._shutting_down:
                # shutdown() waits for the in-flight keys. Otherwise nobody waits for a
                # done(): waking every idle worker per key was 6% of the controller's CPU.
                self._cond.notify_all()

    # --- lifecycle ---------------------------------------------------------------------------
    def shutdown(self, drain: bool = True, timeout: float | None = None) -> bool:
        """Stop accepting keys. Return True if every in-flight key was done in time.

        drain=True: waiting keys are still handed out, then `get` returns None; this call waits
        (up to `timeout`) for in-flight keys. drain=False: `get` returns None at once.
        """
        with self._cond:
            self._shutting_down = True
            self._delayed.clear()
            self._ready_at.clear()
            self._batch_at.clear()
            if not drain:
                self._drop_waiting = True
                self._queue.clear()
                self._dirty.clear()
                self._m_depth.set(0)
            self._cond.notify_all()
            if not drain:
                return not self._processing
            deadline = None if timeout is None else time.monotonic() + timeout
            while self._processing or self._queue:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cond.wait(remaining)
            return True

    def shutting_down(self) -> bool:
        with self._cond:
            return self._shutting_down

    def __len__(self) -> int:
        with self._cond:
            return len(self._queue)

    def in_flight(self) -> int:
        """How many keys workers hold right now."""
        with self._cond:
            return len(self._processing)

"""Full garbage collections when the process is idle, and over young objects only.

CPython collects its oldest generation once the objects that survived into it have grown by a
quarter since the last full collection, and a full collection walks every tracked object with
the GIL held. A controller caching 1,000 AscendJobs and their 2,000 pods tracks ~110,000
objects; each full collection took 60-90 ms and came every 2-5 s while pods churned
(hack/bench_latency.py, timed with `gc.callbacks`), and a pod failure that arrived during one
waited for it. (Removing them did not move the failure -> replacement p99 beyond the
run-to-run spread of a shared 2-core host: docs/benchmarks.md.) The Go controllers this one follows
run on a concurrent collector; Python's stops the world, so the pause is made short and moved
to a quiet moment instead:

- `take_over` raises the oldest generation's threshold so that no allocation starts a full
  collection. The young generations are collected as before (a few ms at most), so
  short-lived cycles are still freed at once; acyclic garbage never waits for a collector at
  all (reference counting frees it).
- `FullCollector` collects once the caches have synced and the work queue is first idle
  (or `max_interval` after start, idle or not), then whenever `interval` has passed and the
  work queue is idle (or `max_interval` has passed, idle or not), and after each
  collection freezes what survived (`gc.freeze`): objects that lived through a full
  collection are the cache and the process's own, and no later collection walks them again,
  so each pause covers only what was allocated since the last. Frozen objects are still
  freed by reference counting when dropped (the cache's objects are acyclic JSON).
- `freeze_start_up` does one collection and freeze before any of that, when `run` starts:
  the modules, classes and functions loaded at start-up are frozen before the first LIST,
  so not even the first idle collection walks them.
- Only a frozen object that later ends up in a garbage cycle would outlive its use; every
  `thaw_interval` (when idle) the frozen objects are thawed and one complete collection
  reclaims those, then freezes again: one long pause per half hour, not one every few
  seconds.

Process-wide state, so only whole processes install it: the `run` command's
(controller._start_caches) and the local cluster's (localcluster/main.py), never a library
caller or a test process. One benchmark borrows `take_over` alone, restoring the thresholds
after: hack/bench_controller.py times an informer's sync as `run` would run it.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

#: No allocation count reaches it: full collections happen only through `FullCollector`.
NEVER = 2**31 - 1
INTERVAL = 60.0
MAX_INTERVAL = 300.0
THAW_INTERVAL = 1800.0
POLL = 1.0

#: What `decide` can ask for.
NOTHING, COLLECT, THAW = "nothing", "collect", "thaw"


def take_over() -> tuple[int, int, int]:
    """Stop allocations from starting full collections; returns the thresholds to restore."""
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], NEVER)
    return before


def freeze_start_up() -> int:
    """Collect once and freeze what survives: the process's modules, classes and functions.

    Called by `run` after `take_over` and before the informers start. Those objects live as
    long as the process, yet the first full collection (at the first idle moment after
    sync) walked them all: 30-40 ms with every thread held, the kubernetes client's modules
    most of it. Frozen before any work arrives, they are never walked again, and that first
    pause covers only the cache and what the work allocated. Returns what was collected.
    """
    collected = gc.collect()
    gc.freeze()
    return collected


@dataclass(frozen=True)
class Schedule:
    """When to collect and thaw; `collect=False` makes a due collection a freeze alone.

    A freeze moves the young survivors out of every later collection's way without walking
    them (CPython splices its generation lists). It suits a process whose survivors are not
    garbage: in the local cluster, the once-a-second full collections freed nothing in a
    whole peers benchmark and were 4 % of its CPU. Cycles that do end up frozen wait for the
    next thaw, which still collects everything.
    """

    interval: float = INTERVAL
    max_interval: float = MAX_INTERVAL
    thaw_interval: float = THAW_INTERVAL
    collect: bool = True


def decide(
    since_collect: float | None, since_thaw: float, idle: bool, synced: bool, schedule: Schedule
) -> str:
    """NOTHING, COLLECT (the unfrozen objects) or THAW (all of them); a pure decision.

    `since_collect` is None until the first collection, which waits for the caches to sync
    and then, like the others, for an idle moment, but never past `max_interval` after start
    (`since_thaw`, which counts from start until the first thaw). A controller that starts
    with work (the resync of every job after a restart, a burst of new jobs) does it first:
    the first collection held every thread for 30-70 ms in the middle of the peers
    benchmark's burst, and freed nothing. Nothing walks the old generation meanwhile, so
    waiting costs nothing.
    A thaw waits for an idle moment past `thaw_interval`, but never past twice that.
    """
    if since_collect is None:
        first_due = idle or since_thaw >= schedule.max_interval
        return COLLECT if synced and first_due else NOTHING
    if since_thaw >= 2 * schedule.thaw_interval or (idle and since_thaw >= schedule.thaw_interval):
        return THAW
    if since_collect >= schedule.max_interval or (idle and since_collect >= schedule.interval):
        return COLLECT
    return NOTHING


class FullCollector:
    """Runs the full collections `take_over` took from the allocator, on its own thread.

    `idle()` says the work queue is empty and no reconcile runs; `synced()` that the caches
    hold their first lists.
    """

    def __init__(
        self,
        idle: Callable[[], bool],
        synced: Callable[[], bool],
        schedule: Schedule = Schedule(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._idle = idle
        self._synced = synced
        self._schedule = schedule
        self._clock = clock
        self._last: float | None = None
        self._last_thaw = clock()
        self._restore: tuple[int, int, int] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, poll: float = POLL) -> None:
        self._restore = take_over()
        self._thread = threading.Thread(target=self._loop, args=(poll,), name="full-gc")
        self._thread.daemon = True
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread; give full collections back to the allocator, over every object."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        if self._restore is not None:
            gc.unfreeze()
            gc.set_threshold(*self._restore)

    def _loop(self, poll: float) -> None:
        while not self._stop.wait(poll):
            try:
                self.tick()
            except Exception:  # never let housekeeping end the thread
                log.exception("full_gc_failed")

    def tick(self) -> str:
        """One look; returns what it did (NOTHING, COLLECT or THAW)."""
        now = self._clock()
        since = None if self._last is None else now - self._last
        action = decide(since, now - self._last_thaw, self._idle(), self._synced(), self._schedule)
        if action == NOTHING:
            return action
        start = time.perf_counter()
        if action == THAW:
            gc.unfreeze()
            self._last_thaw = now
        collected = gc.collect() if action == THAW or self._schedule.collect else 0
        gc.freeze()  # (gc.get_freeze_count() walks every frozen object: never call it here)
        self._last = self._clock()
        log.debug(
            "full_gc",
            extra={
                "action": action,
                "collected": collected,
                "pause_ms": round(1000 * (time.perf_counter() - start), 1),
            },
        )
        return action


__all__ = ["FullCollector", "Schedule", "decide", "freeze_start_up", "take_over"]

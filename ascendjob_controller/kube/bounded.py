"""Run a function over items on a shared thread pool, at most `width` of them in flight.

`ThreadPoolExecutor.map` submits everything at once: on a pool that several reconciles
share, one job's 512-pod batch would queue ahead of every other job's creates. Submitting
them in fixed groups of `width` instead makes each group wait for its slowest request before
the next starts. This keeps a sliding window: a new item starts as soon as any one finishes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def map_bounded(pool: Executor, fn: Callable[[T], R], items: Sequence[T], width: int) -> list[R]:
    """[fn(item) for item in items], run on `pool` with at most `width` calls in flight.

    Results come back in the order of `items`. Every item is run even if some raise; the
    first exception (in item order) is raised once all have finished.
    """
    futures: list[Future[R]] = []
    running: set[Future[R]] = set()
    for item in items:
        if len(running) >= max(1, width):
            _, running = wait(running, return_when=FIRST_COMPLETED)
        futures.append(pool.submit(fn, item))
        running.add(futures[-1])
    wait(running)
    return [future.result() for future in futures]

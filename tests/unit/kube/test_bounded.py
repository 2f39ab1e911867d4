"""map_bounded: results in order, never more than `width` in flight, no barrier per group."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from ascendjob_controller.kube.bounded import map_bounded


@pytest.fixture
def pool() -> ThreadPoolExecutor:
    with ThreadPoolExecutor(8) as executor:
        yield executor  # type: ignore[misc]


def test_results_come_back_in_item_order(pool: ThreadPoolExecutor) -> None:
    def slow_for_small(n: int) -> int:
        time.sleep(0.002 * (10 - n))
        return n * n

    assert map_bounded(pool, slow_for_small, list(range(10)), 3) == [n * n for n in range(10)]


@pytest.mark.parametrize("width", [1, 2, 5])
def test_never_more_than_width_in_flight(pool: ThreadPoolExecutor, width: int) -> None:
    lock = threading.Lock()
    now = {"in_flight": 0, "peak": 0}

    def work(_: int) -> None:
        with lock:
            now["in_flight"] += 1
            now["peak"] = max(now["peak"], now["in_flight"])
        time.sleep(0.003)
        with lock:
            now["in_flight"] -= 1

    map_bounded(pool, work, list(range(20)), width)
    assert now["peak"] == width


def test_a_slow_item_does_not_hold_back_the_next_group(pool: ThreadPoolExecutor) -> None:
    """With width 2 and one item that waits for a release, all the other items still run:
    a new one starts whenever any in-flight one returns. Groups of 2 would stall at item 1."""
    release = threading.Event()
    started: list[int] = []

    def work(n: int) -> int:
        started.append(n)
        if n == 0:
            assert release.wait(5), "never released"
        return n

    seen_at_release: list[int] = []

    def release_when_all_others_ran() -> None:
        deadline = time.monotonic() + 2
        while len(started) < 10 and time.monotonic() < deadline:
            time.sleep(0.001)
        seen_at_release.append(len(started))
        release.set()

    helper = threading.Thread(target=release_when_all_others_ran)
    helper.start()
    assert map_bounded(pool, work, list(range(10)), 2) == list(range(10))
    helper.join()
    assert seen_at_release == [10]  # all ten started while item 0 was still in flight


def test_every_item_runs_and_the_first_error_is_raised(pool: ThreadPoolExecutor) -> None:
    ran: list[int] = []

    def work(n: int) -> int:
        ran.append(n)
        if n in (3, 6):
            raise ValueError(f"item {n}")
        return n

    with pytest.raises(ValueError, match="item 3"):
        map_bounded(pool, work, list(range(8)), 2)
    assert sorted(ran) == list(range(8))


def test_no_items(pool: ThreadPoolExecutor) -> None:
    assert map_bounded(pool, str, [], 4) == []

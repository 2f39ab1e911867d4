"""hack/bench_controller.wait_still: how every benchmark waits for a process to go quiet.

Its reads are scripted and time-stamped here; the assertions are on what it returns (which
value, which read it dates the last change from, whether it held), never on how long it took.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator

from hack.bench_controller import wait_still


def scripted(values: Iterator[int], stamps: list[tuple[float, int]]) -> Callable[[], int]:
    def read() -> int:
        value = next(values)
        stamps.append((time.perf_counter(), value))
        return value

    return read


def test_returns_once_the_value_held_for_quiet_seconds() -> None:
    stamps: list[tuple[float, int]] = []
    values = itertools.chain([1, 2, 3], itertools.repeat(4))
    seen = wait_still(scripted(values, stamps), quiet=0.05, timeout=10, poll=0.005)
    assert seen.still and seen.value == 4
    first_four, second_four = [at for at, value in stamps if value == 4][:2]
    assert first_four <= seen.changed_at < second_four
    assert stamps[-1][0] - first_four >= 0.05  # it did wait out the quiet period


def test_an_unsettled_value_restarts_the_quiet_period() -> None:
    stamps: list[tuple[float, int]] = []
    # The key never changes (always 7 // 10 == 0), but the first reads are not settled.
    values = itertools.chain([-1] * 5, itertools.repeat(7))
    seen = wait_still(
        scripted(values, stamps),
        quiet=0.03,
        timeout=10,
        poll=0.005,
        key=lambda value: value // 10 if value >= 0 else 0,
        settled=lambda value: value >= 0,
    )
    assert seen.still and seen.value == 7
    last_unsettled = max(at for at, value in stamps if value < 0)
    assert seen.changed_at >= last_unsettled


def test_gives_up_at_the_timeout_and_says_so() -> None:
    stamps: list[tuple[float, int]] = []
    seen = wait_still(scripted(itertools.count(), stamps), quiet=0.05, timeout=0.1, poll=0.005)
    assert not seen.still
    assert seen.value == stamps[-1][1]
    assert seen.changed_at >= stamps[-1][0]

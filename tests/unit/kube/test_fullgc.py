"""Full garbage collections taken from the allocator and run at quiet moments (kube/fullgc.py).

The decision is a table; the collector is driven tick by tick on a fake clock, with gc's own
functions spied on (pytest-mock) so that nothing in the test process is frozen; one test lets
the real collector free a real cycle.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Iterator
from typing import Any

import pytest
from pytest_mock import MockerFixture

from ascendjob_controller.kube import fullgc
from ascendjob_controller.kube.fullgc import (
    COLLECT,
    NEVER,
    NOTHING,
    THAW,
    FullCollector,
    Schedule,
    decide,
    take_over,
)

S = Schedule(interval=60, max_interval=300, thaw_interval=1800)


@pytest.mark.parametrize(
    ("since_collect", "since_thaw", "idle", "synced", "expected"),
    [
        # The first collection (and freeze) waits for the caches, then for an idle moment
        # (a controller starting with work does that first)...
        (None, 0, True, False, NOTHING),
        (None, 0, False, True, NOTHING),
        (None, 0, True, True, COLLECT),
        (None, 299.9, False, True, NOTHING),
        # ...but not past max_interval after start (since_thaw counts from start).
        (None, 300, False, True, COLLECT),
        (None, 5000, False, False, NOTHING),
        # Then one per interval, at an idle moment...
        (59.9, 100, True, True, NOTHING),
        (60, 100, True, True, COLLECT),
        (120, 100, False, True, NOTHING),
        # ...but never more than max_interval apart.
        (299.9, 100, False, True, NOTHING),
        (300, 100, False, True, COLLECT),
        # A thaw (the complete collection) at an idle moment past thaw_interval...
        (10, 1799.9, True, True, NOTHING),
        (10, 1800, True, True, THAW),
        (10, 1800, False, True, NOTHING),
        (300, 1800, False, True, COLLECT),
        # ...and at twice that, idle or not.
        (10, 3600, False, True, THAW),
    ],
)
def test_decide(
    since_collect: float | None, since_thaw: float, idle: bool, synced: bool, expected: str
) -> None:
    assert decide(since_collect, since_thaw, idle, synced, S) == expected


@pytest.fixture
def thresholds() -> Iterator[tuple[int, int, int]]:
    """The process's thresholds, put back whatever the test does."""
    before = gc.get_threshold()
    try:
        yield before
    finally:
        gc.set_threshold(*before)


def test_take_over_leaves_young_generations_and_returns_what_to_restore(
    thresholds: tuple[int, int, int],
) -> None:
    assert take_over() == thresholds
    assert gc.get_threshold() == (thresholds[0], thresholds[1], NEVER)


def test_allocations_no_longer_start_full_collections(thresholds: tuple[int, int, int]) -> None:
    """Real gc: young cycles are still collected, the oldest generation is left alone."""
    gc.collect()
    gc.set_threshold(100, 2, 2)  # a full collection every few hundred allocations...
    take_over()  # ...until the allocator no longer starts them
    full_before, young_before = gc.get_stats()[2]["collections"], gc.get_stats()[0]["collections"]
    for _ in range(20_000):
        cycle: list[Any] = []
        cycle.append(cycle)
    assert gc.get_stats()[0]["collections"] > young_before
    assert gc.get_stats()[2]["collections"] == full_before


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def spied(mocker: MockerFixture) -> dict[str, Any]:
    """gc.collect, gc.freeze and gc.unfreeze as seen by fullgc, recorded in call order."""
    calls: list[str] = []
    for name in ("collect", "freeze", "unfreeze"):
        mocker.patch.object(
            fullgc.gc, name, side_effect=lambda *a, _n=name, **k: calls.append(_n) or 0
        )
    return {"calls": calls}


def test_the_collector_freezes_after_sync_then_collects_when_due(spied: dict[str, Any]) -> None:
    clock, state = Clock(), {"idle": False, "synced": False}
    collector = FullCollector(
        idle=lambda: state["idle"], synced=lambda: state["synced"], schedule=S, clock=clock
    )
    assert collector.tick() == NOTHING  # caches not synced yet
    state["synced"] = True
    assert collector.tick() == NOTHING  # synced, but reconciling what the lists brought
    assert spied["calls"] == []
    state["idle"] = True
    assert collector.tick() == COLLECT
    assert spied["calls"] == ["collect", "freeze"]  # survivors frozen: later pauses are short
    state["idle"] = False
    clock.now += 61
    assert collector.tick() == NOTHING  # busy
    state["idle"] = True
    assert collector.tick() == COLLECT
    assert collector.tick() == NOTHING  # the interval starts again from that collection
    clock.now += 1800
    spied["calls"].clear()
    assert collector.tick() == THAW
    assert spied["calls"] == ["unfreeze", "collect", "freeze"]
    clock.now += 61
    assert collector.tick() == COLLECT  # after a thaw, plain collections again


def test_start_and_stop_give_the_thresholds_back(
    thresholds: tuple[int, int, int], spied: dict[str, Any]
) -> None:
    collector = FullCollector(idle=lambda: True, synced=lambda: True, schedule=S)
    collector.start(poll=0.01)
    assert gc.get_threshold()[2] == NEVER
    deadline = time.monotonic() + 10
    while not spied["calls"] and time.monotonic() < deadline:
        time.sleep(0.01)
    collector.stop()
    assert gc.get_threshold() == thresholds
    assert spied["calls"][:2] == ["collect", "freeze"]  # the thread ticked
    assert spied["calls"][-1] == "unfreeze"  # nothing stays frozen after stop


def test_a_failing_tick_does_not_end_the_thread(
    thresholds: tuple[int, int, int], mocker: MockerFixture
) -> None:
    ticks: list[int] = []

    def synced() -> bool:
        ticks.append(1)
        if len(ticks) == 1:
            raise RuntimeError("boom")
        return False

    collector = FullCollector(idle=lambda: True, synced=synced, schedule=S)
    logged = mocker.spy(fullgc.log, "exception")
    collector.start(poll=0.01)
    try:
        deadline = time.monotonic() + 10
        while len(ticks) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
    finally:
        collector.stop()
    assert len(ticks) >= 3
    logged.assert_called_once()


def test_a_tick_does_not_count_the_frozen_objects(
    spied: dict[str, Any], mocker: MockerFixture
) -> None:
    """gc.get_freeze_count() walks every frozen object: once a second in the bed, logging it
    cost more CPU than the bed's own work while it listed 20,000 pods (py-spy: 83 %)."""
    mocker.patch.object(fullgc.gc, "get_freeze_count", side_effect=AssertionError("O(frozen)"))
    collector = FullCollector(idle=lambda: True, synced=lambda: True, schedule=S)
    assert collector.tick() == COLLECT


def test_a_freeze_only_schedule_freezes_without_walking_until_the_thaw(
    spied: dict[str, Any],
) -> None:
    """The bed's schedule: a due collection is a freeze alone; the thaw still collects all."""
    clock = Clock()
    schedule = Schedule(interval=1, max_interval=1, thaw_interval=1800, collect=False)
    collector = FullCollector(
        idle=lambda: True, synced=lambda: True, schedule=schedule, clock=clock
    )
    assert collector.tick() == COLLECT
    clock.now += 1
    assert collector.tick() == COLLECT
    assert spied["calls"] == ["freeze", "freeze"]
    spied["calls"].clear()
    clock.now += 1800
    assert collector.tick() == THAW
    assert spied["calls"] == ["unfreeze", "collect", "freeze"]

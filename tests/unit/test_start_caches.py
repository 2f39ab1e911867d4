"""The `run` process hands full collections to its FullCollector before the first LIST.

The initial LISTs allocate the whole cache; had the informers started first, CPython's own
schedule would have walked the growing cache in a full collection at every 25 % of growth.
"""

from __future__ import annotations

import gc

from pytest_mock import MockerFixture

from ascendjob_controller.controller import _start_caches
from ascendjob_controller.kube import fullgc


class _Controller:
    """What _start_caches uses of AscendJobController; records the gen2 threshold at start."""

    def __init__(self) -> None:
        self.threshold_at_start: int | None = None
        self.gc_calls_at_start: list[str] = []
        self.gc_calls: list[str] | None = None

    def idle(self) -> bool:
        return False

    def has_synced(self) -> bool:
        return False

    def start_informers(self) -> None:
        self.threshold_at_start = gc.get_threshold()[2]
        self.gc_calls_at_start = list(self.gc_calls or [])


def test_full_collections_are_taken_over_before_the_informers_start() -> None:
    before = gc.get_threshold()
    ctl = _Controller()
    collector = _start_caches(ctl)  # type: ignore[arg-type]
    try:
        assert ctl.threshold_at_start == fullgc.NEVER
    finally:
        collector.stop()
    assert gc.get_threshold() == before


def test_the_start_ups_objects_are_collected_and_frozen_before_the_informers_start(
    mocker: MockerFixture,
) -> None:
    """The first full collection would walk every module and class; frozen first, never."""
    calls: list[str] = []
    for name in ("collect", "freeze", "unfreeze"):
        real = getattr(gc, name)
        mocker.patch.object(
            fullgc.gc,
            name,
            side_effect=lambda *a, _n=name, _r=real, **k: calls.append(_n) or _r(*a, **k),
        )
    ctl = _Controller()
    ctl.gc_calls = calls
    collector = _start_caches(ctl)  # type: ignore[arg-type]
    try:
        assert ctl.gc_calls_at_start == ["collect", "freeze"]
        assert gc.get_freeze_count() > 0  # the real freeze ran
    finally:
        collector.stop()
    assert calls[-1] == "unfreeze" and gc.get_freeze_count() == 0

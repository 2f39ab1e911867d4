"""The `run` process hands full collections to its FullCollector before the first LIST.

The initial LISTs allocate the whole cache; had the informers started first, CPython's own
schedule would have walked the growing cache in a full collection at every 25 % of growth.
"""

from __future__ import annotations

import gc

from ascendjob_controller.controller import _start_caches
from ascendjob_controller.kube import fullgc


class _Controller:
    """What _start_caches uses of AscendJobController; records the gen2 threshold at start."""

    def __init__(self) -> None:
        self.threshold_at_start: int | None = None

    def idle(self) -> bool:
        return False

    def has_synced(self) -> bool:
        return False

    def start_informers(self) -> None:
        self.threshold_at_start = gc.get_threshold()[2]


def test_full_collections_are_taken_over_before_the_informers_start() -> None:
    before = gc.get_threshold()
    ctl = _Controller()
    collector = _start_caches(ctl)  # type: ignore[arg-type]
    try:
        assert ctl.threshold_at_start == fullgc.NEVER
    finally:
        collector.stop()
    assert gc.get_threshold() == before

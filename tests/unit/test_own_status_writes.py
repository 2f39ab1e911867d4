"""OwnStatusWrites, the guard against re-planning from a job our own status write replaced."""

from __future__ import annotations

from ascendjob_controller.reconciler import STALE_JOB_GIVE_UP_SECONDS, OwnStatusWrites


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_stale_until_the_cache_moves_on() -> None:
    writes = OwnStatusWrites(Clock())
    writes.wrote("ns/a", "5", "6")
    assert writes.stale("ns/a", "5")
    assert writes.stale("ns/a", "5")
    assert not writes.stale("ns/a", "6")
    # Once caught up it is forgotten, even if an older copy were seen again.
    assert not writes.stale("ns/a", "5")


def test_other_jobs_and_unmoved_writes_are_not_held() -> None:
    writes = OwnStatusWrites(Clock())
    writes.wrote("ns/a", "5", "6")
    assert not writes.stale("ns/b", "5")
    writes.wrote("ns/c", "7", "7")  # the server kept the object as it was
    assert not writes.stale("ns/c", "7")
    writes.wrote("ns/d", "7", None)
    assert not writes.stale("ns/d", "7")


def test_gives_up_after_a_while_and_forgets() -> None:
    clock = Clock()
    writes = OwnStatusWrites(clock)
    writes.wrote("ns/a", "5", "6")
    clock.t += STALE_JOB_GIVE_UP_SECONDS + 1
    assert not writes.stale("ns/a", "5")
    writes.wrote("ns/a", "8", "9")
    writes.forget("ns/a")
    assert not writes.stale("ns/a", "8")

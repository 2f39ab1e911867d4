"""Runner: results map to queue actions and metrics; shutdown finishes in-flight work."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from ascendjob_controller import metrics
from ascendjob_controller.kube.runner import Result, Runner
from ascendjob_controller.kube.workqueue import RateLimitingQueue


def label() -> str:
    return f"test-{uuid.uuid4().hex[:8]}"


def reconciles(controller: str, result: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "controller_runtime_reconcile_total", {"controller": controller, "result": result}
    )
    assert value is not None, "every result label starts at 0"
    return value


def gauge(name: str, controller: str) -> float | None:
    return metrics.REGISTRY.get_sample_value(name, {"controller": controller})


def wait_until(cond: Any, timeout: float = 30.0) -> None:
    event = threading.Event()
    for _ in range(int(timeout / 0.01)):
        if cond():
            return
        event.wait(0.01)
    raise AssertionError("condition not met in time")


def test_metrics_start_at_zero_and_move_per_result() -> None:
    ctl = label()
    outcomes = {"ns/ok": Result(), "ns/later": Result(requeue_after=3600), "ns/again": None}
    calls: list[str] = []
    again_calls = threading.Event()

    def reconcile(key: str) -> Result:
        calls.append(key)
        if key == "ns/boom":
            raise RuntimeError("reconcile bug")
        if key == "ns/again":
            if again_calls.is_set():
                return Result()
            again_calls.set()
            return Result(requeue=True)
        outcome = outcomes[key]
        assert outcome is not None
        return outcome

    queue = RateLimitingQueue(ctl)
    runner = Runner(ctl, queue, reconcile, workers=2, controller_label=ctl)
    for result in metrics.RECONCILE_RESULTS:
        assert reconciles(ctl, result) == 0
    assert gauge("controller_runtime_max_concurrent_reconciles", ctl) == 2
    assert runner.start(sync_timeout=5)
    for key in ("ns/ok", "ns/later", "ns/again", "ns/boom"):
        queue.add(key)
    wait_until(lambda: reconciles(ctl, "success") == 2 and reconciles(ctl, "error") >= 1)
    assert reconciles(ctl, "requeue_after") == 1
    assert reconciles(ctl, "requeue") == 1
    assert (gauge("controller_runtime_reconcile_errors_total", ctl) or 0) >= 1
    assert calls.count("ns/again") == 2, "requeue=True is processed again"
    assert calls.count("ns/later") == 1, "requeue_after waits its delay"
    assert queue.num_requeues("ns/boom") >= 1, "errors are rate-limited requeues"
    assert queue.num_requeues("ns/ok") == 0
    count = metrics.REGISTRY.get_sample_value(
        "controller_runtime_reconcile_time_seconds_count", {"controller": ctl}
    )
    assert count is not None and count >= 5
    assert runner.stop(timeout=30)


def test_graceful_shutdown_finishes_in_flight_and_takes_no_new_keys() -> None:
    ctl = label()
    entered = threading.Event()
    release = threading.Event()
    finished: list[str] = []

    def reconcile(key: str) -> Result:
        entered.set()
        release.wait(30)
        finished.append(key)
        return Result()

    queue = RateLimitingQueue(ctl)
    runner = Runner(ctl, queue, reconcile, workers=1, controller_label=ctl)
    runner.start()
    queue.add("ns/a")
    queue.add("ns/b")
    assert entered.wait(30)
    assert gauge("controller_runtime_active_workers", ctl) == 1
    stopped: list[bool] = []
    stopper = threading.Thread(target=lambda: stopped.append(runner.stop(timeout=60)))
    stopper.start()
    wait_until(queue.shutting_down)
    assert stopper.is_alive(), "stop waits for the in-flight reconcile"
    release.set()
    stopper.join(60)
    assert stopped == [True]
    assert finished == ["ns/a"], "the waiting key was not started after stop"
    assert gauge("controller_runtime_active_workers", ctl) == 0
    assert reconciles(ctl, "success") == 1


def test_stop_gives_up_at_the_deadline() -> None:
    ctl = label()
    entered = threading.Event()
    release = threading.Event()

    def reconcile(key: str) -> Result:
        entered.set()
        release.wait(30)
        return Result()

    queue = RateLimitingQueue(ctl)
    runner = Runner(ctl, queue, reconcile, workers=1, controller_label=ctl)
    runner.start()
    queue.add("ns/a")
    assert entered.wait(30)
    assert runner.stop(timeout=0.1) is False
    release.set()


def test_start_waits_for_informers() -> None:
    class Unsynced:
        def wait_for_sync(self, timeout: float) -> bool:
            threading.Event().wait(min(timeout, 0.01))
            return False

    ctl = label()
    runner = Runner(ctl, RateLimitingQueue(ctl), lambda k: Result(), informers=[Unsynced()])  # type: ignore[list-item]
    assert runner.start(sync_timeout=0.2) is False
    assert not runner.started()


def test_workers_must_be_positive() -> None:
    with pytest.raises(ValueError):
        Runner("x", RateLimitingQueue(label()), lambda k: Result(), workers=0)


class FixedDelay:
    """A rate limiter that always waits `delay` (a long, plain retry)."""

    def __init__(self, delay: float) -> None:
        self.delay = delay

    def when(self, item: str) -> float:
        return self.delay

    def forget(self, item: str) -> None:
        pass

    def num_requeues(self, item: str) -> int:
        return 0


def calls_after(script: list[Any], poke_after_first: bool, settle: float) -> list[str]:
    """Run one key through a runner whose reconcile follows `script` (a Result, or an
    exception to raise), the last entry repeating; optionally add the key again as soon as the
    first reconcile is done. Returns the keys reconciled once `settle` seconds have passed."""
    ctl = label()
    calls: list[str] = []
    first_done = threading.Event()

    def reconcile(key: str) -> Result:
        step = script[min(len(calls), len(script) - 1)]
        calls.append(key)
        if len(calls) == 1:
            threading.Timer(0.05, first_done.set).start()
        if isinstance(step, Exception):
            raise step
        assert isinstance(step, Result)
        return step

    queue = RateLimitingQueue(ctl, rate_limiter=FixedDelay(0.4))
    runner = Runner(ctl, queue, reconcile, workers=1, controller_label=ctl)
    runner.start()
    try:
        queue.add("ns/a")
        assert first_done.wait(30)
        if poke_after_first:
            queue.add("ns/a")
        threading.Event().wait(settle)
        return list(calls)
    finally:
        runner.stop(timeout=10)


def test_requeue_after_comes_back_by_itself() -> None:
    assert calls_after([Result(requeue_after=0.2), Result()], False, 1.0) == ["ns/a"] * 2


def test_requeue_after_is_dropped_by_a_sooner_processing() -> None:
    """That processing returned its own Result; the older deadline would reconcile for
    nothing (controller-runtime keeps it, and the Job controller's syncs then no-op)."""
    assert calls_after([Result(requeue_after=0.4), Result()], True, 1.2) == ["ns/a"] * 2


def test_a_later_processing_sets_its_own_requeue() -> None:
    script = [Result(requeue_after=0.4), Result(requeue_after=0.3), Result()]
    assert calls_after(script, True, 1.5) == ["ns/a"] * 3


def test_an_error_retry_is_kept_whatever_happens() -> None:
    """After an error the retry stands, even if the key was processed again meanwhile."""
    script = [RuntimeError("boom"), Result()]
    assert calls_after(script, True, 1.2) == ["ns/a"] * 3

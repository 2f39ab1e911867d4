"""Rate limiter formulas (client-go semantics) and forget."""

from __future__ import annotations

import pytest

from ascendjob_controller.kube.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    TokenBucket,
    default_controller_rate_limiter,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_exponential_delays_double_from_base_and_cap() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    delays = [limiter.when("ns/a") for _ in range(25)]
    for n, delay in enumerate(delays):
        assert delay == pytest.approx(min(0.005 * 2**n, 1000.0))
    assert delays[-1] == 1000.0
    assert limiter.num_requeues("ns/a") == 25


def test_exponential_is_per_key_and_forget_resets() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.01, 1.0)
    limiter.when("a")
    limiter.when("a")
    assert limiter.when("b") == pytest.approx(0.01)
    assert limiter.when("a") == pytest.approx(0.04)
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.01)


def test_exponential_survives_huge_failure_counts() -> None:
    limiter = ItemExponentialFailureRateLimiter(0.005, 1000.0)
    for _ in range(2000):
        delay = limiter.when("k")
    assert delay == 1000.0


def test_bucket_gives_burst_then_spaces_by_qps() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter(10.0, 100, clock)
    assert all(limiter.when(f"k{i}") == 0.0 for i in range(100))
    assert limiter.when("x") == pytest.approx(0.1)
    assert limiter.when("y") == pytest.approx(0.2)
    clock.now += 20.0  # refill fully (capped at burst)
    assert all(limiter.when(f"z{i}") == 0.0 for i in range(100))
    assert limiter.when("w") == pytest.approx(0.1)


def test_token_bucket_try_take_drops_without_debt() -> None:
    clock = FakeClock()
    bucket = TokenBucket(1.0, 2, clock)
    assert bucket.try_take() and bucket.try_take()
    assert not bucket.try_take()
    clock.now += 1.0
    assert bucket.try_take()
    assert not bucket.try_take()


def test_token_bucket_acquire_sleeps_for_debt() -> None:
    clock = FakeClock()
    bucket = TokenBucket(5.0, 1, clock)
    slept: list[float] = []
    assert bucket.acquire(slept.append) == 0.0
    assert bucket.acquire(slept.append) == pytest.approx(0.2)
    assert slept == [pytest.approx(0.2)]


def test_max_of_takes_the_larger_and_forgets_all() -> None:
    clock = FakeClock()
    limiter = MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0), BucketRateLimiter(10.0, 2, clock)
    )
    assert limiter.when("a") == pytest.approx(0.005)
    assert limiter.when("a") == pytest.approx(0.01)
    # the bucket (burst 2) is now empty: its 0.1 s beats the per-key 0.02 s
    assert limiter.when("a") == pytest.approx(0.1)
    assert limiter.num_requeues("a") == 3
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0


def test_default_controller_limiter() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)
    first = [limiter.when(f"k{i}") for i in range(100)]
    assert first == [pytest.approx(0.005)] * 100
    # the 101st failure in the same instant waits for the overall bucket
    assert limiter.when("k100") == pytest.approx(0.1)
    clock.now += 100
    for _ in range(15):
        delay = limiter.when("hot")
    assert delay == pytest.approx(0.005 * 2**14)

"""Rate limiters for work-queue retries and client-side API throttling.

Semantics follow client-go's `util/workqueue` limiters:

* `ItemExponentialFailureRateLimiter`: the n-th consecutive failure of one key waits
  ``base * 2**n`` seconds (n counted from 0), capped at ``max_delay``; `forget` resets the key.
* `BucketRateLimiter`: one token bucket shared by every key, so a storm of failing keys cannot
  hammer the API server; each `when` reserves a token and returns how long to wait for it.
* `MaxOfRateLimiter`: the larger delay of its members, so the default controller limiter is
  per-key back-off *and* an overall cap.

`TokenBucket` is the shared primitive; the REST client blocks on it for its QPS/burst limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol

Clock = Callable[[], float]
"""A monotonic clock in seconds; tests inject a fake one."""


class RateLimiter(Protocol):
    """How long a key must wait before it is retried."""

    def when(self, item: str) -> float: ...

    def forget(self, item: str) -> None: ...

    def num_requeues(self, item: str) -> int: ...


class TokenBucket:
    """A token bucket (rate `qps`, capacity `burst`) that hands out reservations.

    A reservation always succeeds and returns the wait until its token exists; debt is allowed,
    so concurrent callers are served in order instead of racing for the next token.
    """

    def __init__(self, qps: float, burst: int, clock: Clock = time.monotonic) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("qps must be > 0 and burst >= 1")
        self._qps = qps
        self._burst = float(burst)
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock()
        self._lock = threading.Lock()

    def reserve(self) -> float:
        """Take one token; return how many seconds the caller must wait before using it."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self._qps

    def try_take(self) -> bool:
        """Take a token only if one is available now (a spam filter drops instead of waiting)."""
        with self._lock:
            now = self._clock()
            self._tokens = min(self._burst, self._tokens + (now - self._last) * self._qps)
            self._last = now
            if self._tokens < 1.0:
                return False
            self._tokens -= 1.0
            return True

    def acquire(self, sleep: Callable[[float], None] = time.sleep) -> float:
        """Block until a token is ours; return the time spent waiting."""
        delay = self.reserve()
        if delay > 0:
            sleep(delay)
        return delay


class ItemExponentialFailureRateLimiter:
    """Per-key exponential back-off: base * 2**failures, capped at max_delay."""

    def __init__(self, base_delay: float, max_delay: float) -> None:
        self._base = base_delay
        self._max = max_delay
        self._failures: dict[str, int] = {}
        self._lock = threading.Lock()

    def when(self, item: str) -> float:
        with self._lock:
            exp = self._failures.get(item, 0)
            self._failures[item] = exp + 1
        # Cap the exponent before computing, so a key failing for days cannot overflow a float.
        if exp > 64:
            return self._max
        return min(self._base * (2**exp), self._max)

    def forget(self, item: str) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: str) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class BucketRateLimiter:
    """An overall token bucket: the delay is the wait for the next shared token."""

    def __init__(self, qps: float, burst: int, clock: Clock = time.monotonic) -> None:
        self._bucket = TokenBucket(qps, burst, clock)

    def when(self, item: str) -> float:
        return self._bucket.reserve()

    def forget(self, item: str) -> None:
        """Nothing per key to reset: the bucket refills on its own."""

    def num_requeues(self, item: str) -> int:
        return 0


class MaxOfRateLimiter:
    """The worst case of several limiters; forget resets all of them."""

    def __init__(self, *limiters: RateLimiter) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self._limiters = limiters

    def when(self, item: str) -> float:
        # Every member must see the failure (each keeps its own state), so no short-circuit.
        return max([limiter.when(item) for limiter in self._limiters])

    def forget(self, item: str) -> None:
        for limiter in self._limiters:
            limiter.forget(item)

    def num_requeues(self, item: str) -> int:
        return max(limiter.num_requeues(item) for limiter in self._limiters)


def default_controller_rate_limiter(clock: Clock = time.monotonic) -> MaxOfRateLimiter:
    """client-go's DefaultControllerRateLimiter: 5 ms doubling to 1000 s, and 10 qps / burst 100."""
    return MaxOfRateLimiter(
        ItemExponentialFailureRateLimiter(0.005, 1000.0),
        BucketRateLimiter(10.0, 100, clock),
    )

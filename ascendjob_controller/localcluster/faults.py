"""Fault injection for tests and benchmarks: failing requests, latency, dropped watches.

The server consults this on every request, so a test can make the API misbehave the way a
real cluster sometimes does (5xx bursts, slow responses, watches cut or expired) and check
that the controller copes.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _FailRule:
    verb: str
    resource: str | None
    code: int
    percent: float
    remaining: int | None


@dataclass
class _LatencyRule:
    seconds: float
    verb: str | None
    remaining: int | None  # None: every matching request


def resource_matches(wanted: str | None, resource: str) -> bool:
    """`pods` matches pods and its subresources; `pods/status` only the status subresource."""
    if wanted is None:
        return True
    return resource == wanted or resource.startswith(wanted + "/")


class Faults:
    """Rules set by tests; thread-safe, read on the request path."""

    def __init__(self, seed: int | None = None) -> None:
        self._lock = threading.Lock()
        self._rand = random.Random(seed)
        self._fail: list[_FailRule] = []
        self._latency: list[_LatencyRule] = []
        self._expire_next = 0
        self._expire_for: list[str] = []  # plurals whose next watch gets a 410
        self.watch_epoch = 0  # bumped by drop_watches; open watches end when it changes
        self.on_drop: Callable[[], None] | None = None  # wakes watchers so they end at once

    def fail(
        self,
        verb: str,
        resource: str | None = None,
        code: int = 500,
        percent: float = 100.0,
        count: int | None = None,
    ) -> None:
        """Fail `percent`% of `verb` requests (on `resource`, if given) with `code`.

        `count` bounds how many failures are injected in total; None means until clear().
        """
        with self._lock:
            self._fail.append(_FailRule(verb, resource, code, percent, count))

    def latency(self, seconds: float, verb: str | None = None, count: int | None = None) -> None:
        """Delay requests (of `verb`) by `seconds`: all of them, or the next `count`."""
        with self._lock:
            self._latency.append(_LatencyRule(seconds, verb, count))

    def drop_watches(self) -> None:
        with self._lock:
            self.watch_epoch += 1
        if self.on_drop is not None:
            self.on_drop()

    def expire_next_watch(self, resource: str | None = None) -> None:
        """Answer the next watch (of `resource`, a plural, if given) with 410 Expired.

        With a resource, a watch of something else (another informer of the same process)
        cannot take the 410 meant for the one under test.
        """
        with self._lock:
            if resource is None:
                self._expire_next += 1
            else:
                self._expire_for.append(resource)

    def clear(self, then_expire: str | None = None) -> None:
        """Drop every rule. `then_expire` (a plural) also answers that resource's next watch
        with 410 Expired, in the same step: a reflector whose retry came between a clear()
        and an expire_next_watch() would resume its old watch and never relist."""
        with self._lock:
            self._fail.clear()
            self._latency.clear()
            self._expire_next = 0
            self._expire_for.clear()
            if then_expire is not None:
                self._expire_for.append(then_expire)

    # --- used by the server ---------------------------------------------------------------
    def failure_for(self, verb: str, resource: str) -> int | None:
        """The code to fail this request with, or None to serve it."""
        if not self._fail:
            return None
        with self._lock:
            for rule in self._fail:
                if rule.verb not in (verb, "*") or not resource_matches(rule.resource, resource):
                    continue
                if rule.remaining is not None and rule.remaining <= 0:
                    continue
                if self._rand.random() * 100.0 >= rule.percent:
                    continue
                if rule.remaining is not None:
                    rule.remaining -= 1
                return rule.code
        return None

    def delay_for(self, verb: str) -> float:
        if not self._latency:
            return 0.0
        with self._lock:
            total = 0.0
            for rule in self._latency:
                if rule.verb in (None, verb) and rule.remaining != 0:
                    total += rule.seconds
                    if rule.remaining is not None:
                        rule.remaining -= 1
            return total

    def take_expire(self, resource: str = "") -> bool:
        with self._lock:
            if resource and resource in self._expire_for:
                self._expire_for.remove(resource)
                return True
            if self._expire_next > 0:
                self._expire_next -= 1
                return True
            return False

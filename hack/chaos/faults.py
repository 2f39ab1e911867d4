"""The fault schedule: what the API does to its clients while the jobs run.

From a `localcluster.faults.Faults`: the local cluster's own hooks, or on the real backend
the fault proxy's (faultproxy.py), which consults the same object in front of kube-apiserver:
- a share of every request (any verb, any resource; on local any client: the controllers, the
  simulated kubelet, this driver; on real only the controllers) answered 500 or 429 (with
  Retry-After: 1), half each;
- every open watch cut every `drop_every` seconds;
- the next watch opened answered 410 Expired, every `expire_every` seconds.
From the replicas' proxies (replicas.py), since the hooks have no such fault:
- every open connection of both replicas reset (RST) mid-stream every `reset_every` seconds,
  which loses the answer to any request in flight (a create or a status write that did land).

The injected failures are counted by wrapping the hook's `failure_for` on the instance: the
hooks keep no count, and the run reports how many of the resource requests (the only ones
the hooks see; discovery and probes are not faulted) it actually failed.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tests.integration.kube.helpers import BlackholeProxy


@dataclass(frozen=True)
class FaultPlan:
    error_percent: float = 10.0
    drop_every: float = 2.0
    expire_every: float = 5.0
    reset_every: float = 7.0


@dataclass
class FaultCounts:
    injected: Counter[int] = field(default_factory=Counter)
    consulted: int = 0  # resource requests the hooks were asked about (while counting)
    drops: int = 0
    expires: int = 0
    resets: int = 0
    connections_reset: int = 0


def count_injected(faults: Any, counts: FaultCounts, active: threading.Event) -> None:
    """Count, while `active`, the requests the hooks see and the failures they inject."""
    original: Callable[[str, str], int | None] = faults.failure_for
    lock = threading.Lock()

    def counting(verb: str, resource: str) -> int | None:
        code = original(verb, resource)
        if not active.is_set():
            return code
        with lock:
            counts.consulted += 1
            if code is not None:
                counts.injected[code] += 1
        return code

    faults.failure_for = counting


def install_errors(faults: Any, percent: float) -> None:
    """`percent`% of all requests fail: half 500, half 429 (rules are tried in order)."""
    first = percent / 2
    second = 100.0 * (percent - first) / (100.0 - first)  # of the requests the first spared
    faults.fail("*", None, code=500, percent=first)
    faults.fail("*", None, code=429, percent=second)


class FaultSchedule:
    """A thread applying the periodic faults until stop(); the error rules from start()."""

    def __init__(self, faults: Any, proxies: Sequence[BlackholeProxy], plan: FaultPlan) -> None:
        self.faults = faults
        self.proxies = proxies
        self.plan = plan
        self.counts = FaultCounts()
        self._stop = threading.Event()
        self._active = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="chaos-faults", daemon=True)
        count_injected(faults, self.counts, self._active)

    def start(self) -> None:
        install_errors(self.faults, self.plan.error_percent)
        self._active.set()
        self._thread.start()

    def stop(self) -> None:
        """End the schedule and clear every rule: the checks after the run see a calm API."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)
        self.faults.clear()
        self._active.clear()

    def _loop(self) -> None:
        plan = self.plan
        now = time.monotonic()
        due = {"drop": now + plan.drop_every, "expire": now + plan.expire_every}
        due["reset"] = now + plan.reset_every
        while not self._stop.wait(0.05):
            now = time.monotonic()
            if now >= due["drop"]:
                self.faults.drop_watches()
                self.counts.drops += 1
                due["drop"] = now + plan.drop_every
            if now >= due["expire"]:
                self.faults.expire_next_watch()
                self.counts.expires += 1
                due["expire"] = now + plan.expire_every
            if now >= due["reset"]:
                self.counts.connections_reset += sum(p.reset() for p in self.proxies)
                self.counts.resets += 1
                due["reset"] = now + plan.reset_every

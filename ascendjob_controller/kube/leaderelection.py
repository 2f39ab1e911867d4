"""Leader election on a coordination.k8s.io/v1 Lease (client-go `leaderelection` semantics).

Safety argument, against clock skew between replicas:

* A candidate never compares the lease's renewTime with its own wall clock. It remembers when
  *it* last saw the lease record change (its resourceVersion) on its own monotonic clock, and
  treats the lease as expired only after `lease_duration` more seconds pass with no change.
* The leader counts its renew deadline from the moment it *sent* its last successful renewal,
  and stops leading once `renew_deadline` (< `lease_duration`) passes without another. Any
  candidate saw that renewal no earlier than it was sent, and waits `lease_duration` from then,
  so the old leader has stopped before anyone else can take over.
* Every write is a compare-and-swap on resourceVersion: of two racing candidates one gets 409.

Every API call is bounded by the time left before the renew deadline and is not retried inside
the client: the renew loop itself is the retry.
"""

from __future__ import annotations

import logging
import math
import random
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ascendjob_controller import metrics
from ascendjob_controller.kube.client import (
    LEASES,
    ApiError,
    KubeClient,
    is_already_exists,
    is_conflict,
    is_not_found,
)

log = logging.getLogger(__name__)

JSON = dict[str, Any]


def micro_time(now: datetime | None = None) -> str:
    """A metav1.MicroTime string."""
    return (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        identity: str,
        *,
        lease_duration: float = 15,
        renew_deadline: float = 10,
        retry_period: float = 2,
        on_started_leading: Callable[[], None],
        on_stopped_leading: Callable[[], None],
        clock: Callable[[], float] = time.monotonic,
        release_on_cancel: bool = True,
    ) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("need lease_duration > renew_deadline > retry_period > 0")
        # Our own token bucket: renewals must not wait behind the controller's traffic.
        self._client = (
            client.with_rate_limit(qps=5.0, burst=10) if isinstance(client, KubeClient) else client
        )
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._clock = clock
        self._release_on_cancel = release_on_cancel
        self._lock = threading.Lock()
        self._observed: JSON | None = None  # the last lease object we saw
        self._observed_at = 0.0  # our clock when its resourceVersion last changed
        self._leading = False
        self._last_renew = 0.0  # our clock when the last successful renewal was sent
        self._gauge = metrics.LEADER_ELECTION_STATUS.labels(name=name)

    # --- public -----------------------------------------------------------------------------
    def is_leader(self) -> bool:
        with self._lock:
            return self._leading and self._clock() - self._last_renew < self.renew_deadline

    def run(self, stop: threading.Event) -> None:
        """Block: acquire, lead (callbacks), renew; return after losing the lease or on stop.

        `on_started_leading` runs on its own thread (it may block, e.g. waiting for caches);
        `on_stopped_leading` runs on this thread before `run` returns, and before the lease is
        released on stop, so work should be stopped inside it if a standby must not overlap.
        """
        self._gauge.set(0)
        if not self._acquire(stop):
            return
        with self._lock:
            self._leading = True
        self._gauge.set(1)
        log.info("started leading", extra={"lease": self.name, "identity": self.identity})
        threading.Thread(target=self._on_started, name="on-started-leading", daemon=True).start()
        try:
            self._renew_loop(stop)
        finally:
            with self._lock:
                self._leading = False
            self._gauge.set(0)
            log.info("stopped leading", extra={"lease": self.name, "identity": self.identity})
            try:
                self._on_stopped()
            finally:
                if stop.is_set() and self._release_on_cancel:
                    self.release()

    def release(self) -> None:
        """Give the lease up now (holderIdentity cleared) so a standby need not wait it out."""
        with self._lock:
            self._leading = False
        self._gauge.set(0)
        try:
            lease = self._client.get(
                LEASES, self.namespace, self.name, timeout=self.retry_period, retries=0
            )
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            lease["spec"] = {
                **spec,
                "holderIdentity": "",
                "leaseDurationSeconds": 1,
                "renewTime": micro_time(),
            }
            self._client.update(LEASES, self.namespace, lease, timeout=self.retry_period, retries=0)
            log.info("lease released", extra={"lease": self.name, "identity": self.identity})
        except Exception as e:
            log.warning("could not release lease", extra={"lease": self.name, "error": str(e)})

    # --- loops ------------------------------------------------------------------------------
    def _acquire(self, stop: threading.Event) -> bool:
        while not stop.is_set():
            sent = self._clock()
            if self._try_acquire_or_renew(timeout=self.renew_deadline):
                with self._lock:
                    self._last_renew = sent
                return True
            stop.wait(self.retry_period * (1.0 + 0.2 * random.random()))
        return False

    def _renew_loop(self, stop: threading.Event) -> None:
        while True:
            deadline = self._last_renew + self.renew_deadline
            if stop.wait(max(0.0, min(self.retry_period, deadline - self._clock()))):
                return
            remaining = deadline - self._clock()
            if remaining <= 0:
                log.warning("renew deadline passed", extra={"lease": self.name})
                return
            sent = self._clock()
            if self._try_acquire_or_renew(timeout=remaining):
                with self._lock:
                    self._last_renew = sent
            elif self._clock() >= deadline:
                log.warning("failed to renew lease in time", extra={"lease": self.name})
                return

    # --- one attempt --------------------------------------------------------------------------
    def _try_acquire_or_renew(self, timeout: float) -> bool:
        timeout = max(0.05, timeout)
        try:
            return self._attempt(timeout)
        except ApiError as e:
            log.info("lease attempt failed", extra={"lease": self.name, "error": str(e)})
            return False
        except Exception:
            log.exception("lease attempt failed", extra={"lease": self.name})
            return False

    def _attempt(self, timeout: float) -> bool:
        now_wall = datetime.now(UTC)
        try:
            lease = self._client.get(LEASES, self.namespace, self.name, timeout=timeout, retries=0)
        except ApiError as e:
            if not is_not_found(e):
                raise
            return self._create(now_wall, timeout)
        self._observe(lease)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        # The holder's advertised duration, but never less than ours (a rounded record must not
        # shorten what a live leader relies on).
        duration = max(float(spec.get("leaseDurationSeconds") or 0), self.lease_duration)
        if holder and holder != self.identity and self._clock() < self._observed_at + duration:
            return False  # held by someone else, and not expired by OUR clock
        new_spec = {
            **spec,
            "holderIdentity": self.identity,
            "leaseDurationSeconds": math.ceil(self.lease_duration),
            "renewTime": micro_time(now_wall),
        }
        if holder != self.identity:
            new_spec["acquireTime"] = micro_time(now_wall)
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (
                1 if holder else 0
            )
        lease["spec"] = new_spec
        try:
            updated = self._client.update(LEASES, self.namespace, lease, timeout=timeout, retries=0)
        except ApiError as e:
            if is_conflict(e):
                return False  # someone else wrote first
            raise
        self._observe(updated)
        return True

    def _create(self, now_wall: datetime, timeout: float) -> bool:
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": math.ceil(self.lease_duration),
                "acquireTime": micro_time(now_wall),
                "renewTime": micro_time(now_wall),
                "leaseTransitions": 0,
            },
        }
        try:
            created = self._client.create(LEASES, self.namespace, body, timeout=timeout, retries=0)
        except ApiError as e:
            if is_already_exists(e):
                return False
            raise
        self._observe(created)
        return True

    def _observe(self, lease: JSON) -> None:
        rv = (lease.get("metadata") or {}).get("resourceVersion")
        previous = (self._observed or {}).get("metadata", {}).get("resourceVersion")
        if self._observed is None or rv != previous:
            self._observed = lease
            self._observed_at = self._clock()

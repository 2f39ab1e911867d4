"""Creates and deletes in flight, so a stale cache never makes a job create a child twice.

The informer cache lags the API server. Right after a reconcile creates pod P the cache may not
show P yet, and a second reconcile would decide to create P again. So, before each create or
delete, the reconciler records that the job *expects* to observe it; the informer's event
handlers mark it observed. While anything is pending the job is not "satisfied" and must not be
re-planned from the cache.

Unlike Kubeflow (which ORs per-replica-type counters) we track the exact child keys of the whole
job and AND them: the job is satisfied only when every pending create and delete was observed.
Tracking keys rather than counts also makes observations idempotent (a repeated or unrelated
event cannot satisfy someone else's expectation). A key must name one object of one kind: the
reconciler uses `Kind/namespace/name` (`reconciler.expectation_key`), because a job's Service
and its Master pod share a name. A record older than `ttl` counts as
satisfied, so a lost watch event delays a job by at most `ttl`, never forever.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field


@dataclass
class _Record:
    creations: set[str] = field(default_factory=set)
    deletions: set[str] = field(default_factory=set)
    stamp: float = 0.0


class Expectations:
    """Per-job pending child creations and deletions, keyed by child "namespace/name"."""

    def __init__(self, ttl: float = 300.0, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._records: dict[str, _Record] = {}
        self._lock = threading.Lock()

    def expect_creations(self, job_key: str, child_keys: Iterable[str]) -> None:
        with self._lock:
            record = self._records.setdefault(job_key, _Record())
            record.creations.update(child_keys)
            record.stamp = self._clock()

    def expect_deletions(self, job_key: str, child_keys: Iterable[str]) -> None:
        with self._lock:
            record = self._records.setdefault(job_key, _Record())
            record.deletions.update(child_keys)
            record.stamp = self._clock()

    def creation_observed(self, job_key: str, child_key: str) -> bool:
        """Mark the create observed; True when it was awaited (the job created it itself)."""
        with self._lock:
            record = self._records.get(job_key)
            if record is None or child_key not in record.creations:
                return False
            record.creations.discard(child_key)
            return True

    def deletion_observed(self, job_key: str, child_key: str) -> bool:
        """Mark the delete observed; True when it was awaited (the job deleted it itself)."""
        with self._lock:
            record = self._records.get(job_key)
            if record is None or child_key not in record.deletions:
                return False
            record.deletions.discard(child_key)
            return True

    def creation_failed(self, job_key: str, child_key: str) -> None:
        """The create call failed, so no event will ever come for it: stop waiting."""
        self.creation_observed(job_key, child_key)

    def deletion_failed(self, job_key: str, child_key: str) -> None:
        """The delete call failed, so no event will ever come for it: stop waiting."""
        self.deletion_observed(job_key, child_key)

    def satisfied(self, job_key: str) -> bool:
        """True when nothing is pending for the job, or its record has expired."""
        with self._lock:
            record = self._records.get(job_key)
            if record is None:
                return True
            if not record.creations and not record.deletions:
                return True
            return self._clock() - record.stamp > self._ttl

    def expires_in(self, job_key: str) -> float | None:
        """Seconds until the job's pending record expires; None when nothing is pending.

        The reconciler requeues the job at that moment: an expectation that is never met (a
        watch event the informer missed) may delay a job by the ttl, but never strand it.
        """
        with self._lock:
            record = self._records.get(job_key)
            if record is None or (not record.creations and not record.deletions):
                return None
            return max(0.0, record.stamp + self._ttl - self._clock())

    def pending(self, job_key: str) -> tuple[frozenset[str], frozenset[str]]:
        """The (creations, deletions) still awaited; for logs and tests."""
        with self._lock:
            record = self._records.get(job_key)
            if record is None:
                return frozenset(), frozenset()
            return frozenset(record.creations), frozenset(record.deletions)

    def forget(self, job_key: str) -> None:
        """Drop the job's record (the job is gone)."""
        with self._lock:
            self._records.pop(job_key, None)

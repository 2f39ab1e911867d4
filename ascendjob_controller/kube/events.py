"""A core/v1 Event recorder that aggregates, rate-limits, and never bothers its caller.

* `event()` only records the wish in memory and returns: a background thread talks to the API,
  so a slow or failing API server never blocks or breaks a reconcile.
* Identical events (same involved object uid, type, reason, message) are one Event: the first
  is created, later ones bump its `count` and `lastTimestamp` with a merge patch. Identical
  events that arrive before the sender gets to them are coalesced in memory first, so a hot
  loop costs one API call, not one per call, and its count stays exact.
* A per-object token bucket (`qps`, `burst`) bounds the API calls made for any one object;
  what exceeds it waits in memory (still coalescing) instead of being sent. Memory is bounded
  by `max_pending` distinct events and the aggregation cache size; beyond them we drop.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from cachetools import LRUCache

from ascendjob_controller.kube.client import EVENTS, ApiError, KubeClient, is_not_found
from ascendjob_controller.kube.ratelimit import Clock, TokenBucket

log = logging.getLogger(__name__)

JSON = dict[str, Any]
NORMAL = "Normal"
WARNING = "Warning"


class EventKey(NamedTuple):
    """What makes two events "identical" (a tuple: hashed in C, it is a dict key per event)."""

    uid: str
    kind: str
    namespace: str
    name: str
    type: str
    reason: str
    message: str


@dataclass(frozen=True)
class Create:
    namespace: str
    body: JSON


@dataclass(frozen=True)
class Patch:
    namespace: str
    name: str
    body: JSON


@dataclass
class _Sent:
    namespace: str
    name: str
    count: int


def involved_object(obj: JSON) -> JSON:
    meta = obj.get("metadata") or {}
    ref = {
        "apiVersion": obj.get("apiVersion", ""),
        "kind": obj.get("kind", ""),
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
        "uid": meta.get("uid", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    return {k: v for k, v in ref.items() if v}


def event_key(involved: JSON, type_: str, reason: str, message: str) -> EventKey:
    return EventKey(
        uid=involved.get("uid", ""),
        kind=involved.get("kind", ""),
        namespace=involved.get("namespace", ""),
        name=involved.get("name", ""),
        type=type_,
        reason=reason,
        message=message,
    )


def rfc3339(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class EventAggregator:
    """The pure part: decide whether an event creates a new Event or bumps an existing one."""

    def __init__(self, component: str, cache_size: int = 4096) -> None:
        self.component = component
        self._sent: LRUCache[EventKey, _Sent] = LRUCache(maxsize=cache_size)

    def plan(self, key: EventKey, involved: JSON, count: int, now: float) -> Create | Patch:
        stamp = rfc3339(now)
        sent = self._sent.get(key)
        if sent is not None:
            return Patch(
                sent.namespace,
                sent.name,
                {"count": sent.count + count, "lastTimestamp": stamp},
            )
        namespace = key.namespace or "default"
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                "name": f"{key.name or 'unknown'}.{time.time_ns():x}",
                "namespace": namespace,
            },
            "involvedObject": involved,
            "reason": key.reason,
            "message": key.message,
            "type": key.type,
            "count": count,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": self.component},
            "reportingComponent": self.component,
        }
        return Create(namespace, body)

    def sent(self, key: EventKey, namespace: str, name: str, count: int) -> None:
        self._sent[key] = _Sent(namespace, name, count)

    def forget(self, key: EventKey) -> None:
        self._sent.pop(key, None)


@dataclass
class _Pending:
    involved: JSON
    count: int
    not_before: float


class EventRecorder:
    def __init__(
        self,
        client: KubeClient,
        component: str = "ascendjob-controller",
        *,
        qps: float = 1.0,
        burst: int = 25,
        max_pending: int = 4096,
        clock: Clock = time.monotonic,
    ) -> None:
        self._client = client
        self._aggregator = EventAggregator(component)
        self._qps = qps
        self._burst = burst
        self._buckets: LRUCache[str, TokenBucket] = LRUCache(maxsize=4096)
        self._max_pending = max_pending
        self._clock = clock
        self._pending: dict[EventKey, _Pending] = {}
        # Which pending keys to look at, so the sender never scans every pending event: keys
        # that may go now, in arrival order, and a heap of (not before, seq, key) for those
        # an object's rate limit holds back. Stale entries are skipped when taken.
        self._ready: deque[EventKey] = deque()
        self._later: list[tuple[float, int, EventKey]] = []
        self._seq = itertools.count()
        # Per object, the last retry slot handed out: events an object's rate limit refused
        # are retried one per 1/qps, each once, instead of all of them at every token.
        self._slots: LRUCache[str, float] = LRUCache(maxsize=4096)
        self._cond = threading.Condition()
        self._stopping = False
        self._sending = False
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self.api_calls = 0

    # --- the caller's side ----------------------------------------------------------------
    def event(self, obj: JSON, type: str, reason: str, message: str) -> None:
        """Record an event about `obj`; returns at once and never raises."""
        try:
            involved = involved_object(obj)
            key = event_key(involved, type, reason, message)
            with self._cond:
                pending = self._pending.get(key)
                if pending is not None:
                    pending.count += 1  # coalesced: nothing new for the sender to do
                    pending.involved = involved
                elif len(self._pending) >= self._max_pending or self._stopping:
                    self.dropped += 1
                    return
                else:
                    self._pending[key] = _Pending(involved, 1, 0.0)
                    self._ready.append(key)
                    self._cond.notify()
        except Exception:
            log.exception("could not record event", extra={"reason": reason})

    # --- lifecycle --------------------------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Send what is pending (within `timeout`), then stop the sender."""
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until nothing is pending (for tests and shutdown). False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._pending or self._sending:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, 0.05))
            return True

    # --- the sender -------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            batch = self._take_ready()
            if batch is None:
                return
            for key, pending in batch:
                self._send(key, pending)
            with self._cond:
                self._sending = False
                self._cond.notify_all()

    def _take_ready(self) -> list[tuple[EventKey, _Pending]] | None:
        """Block until some pending events may be sent now; None when stopped and flushed."""
        with self._cond:
            while True:
                if self._stopping:
                    ready = list(self._pending.items())  # flush, ignoring the rate limit
                    self._pending.clear()
                    self._ready.clear()
                    self._later.clear()
                    if not ready:
                        return None
                else:
                    ready = self._due(self._clock())
                if ready:
                    self._sending = True
                    return ready
                wait = self._later[0][0] - self._clock() if self._later else None
                self._cond.wait(None if wait is None else max(wait, 0.0))

    def _due(self, now: float) -> list[tuple[EventKey, _Pending]]:
        """Take the pending events that may be sent at `now` (caller holds the lock)."""
        while self._later and self._later[0][0] <= now:
            self._ready.append(heapq.heappop(self._later)[2])
        ready: list[tuple[EventKey, _Pending]] = []
        while self._ready:
            key = self._ready.popleft()
            pending = self._pending.get(key)
            if pending is None:
                continue  # sent already: a stale entry
            if pending.not_before > now:
                heapq.heappush(self._later, (pending.not_before, next(self._seq), key))
                continue
            del self._pending[key]
            ready.append((key, pending))
        return ready

    def _bucket(self, uid: str) -> TokenBucket:
        bucket = self._buckets.get(uid)
        if bucket is None:
            bucket = TokenBucket(self._qps, self._burst, self._clock)
            self._buckets[uid] = bucket
        return bucket

    def _send(self, key: EventKey, pending: _Pending) -> None:
        source = key.uid or key.name
        if not self._stopping and not self._bucket(source).try_take():
            with self._cond:
                again = self._pending.setdefault(key, _Pending(pending.involved, 0, 0.0))
                again.count += pending.count
                slot = max(self._slots.get(source, 0.0), self._clock()) + 1.0 / self._qps
                self._slots[source] = slot
                again.not_before = slot
                heapq.heappush(self._later, (again.not_before, next(self._seq), key))
            return
        try:
            self._write(key, pending)
        except Exception as e:
            log.warning("event not written", extra={"reason": key.reason, "error": str(e)})

    def _write(self, key: EventKey, pending: _Pending) -> None:
        action = self._aggregator.plan(key, pending.involved, pending.count, time.time())
        if isinstance(action, Patch):
            try:
                self.api_calls += 1
                self._client.patch(EVENTS, action.namespace, action.name, action.body)
                self._aggregator.sent(key, action.namespace, action.name, action.body["count"])
                return
            except ApiError as e:
                if not is_not_found(e):
                    raise
                # The Event expired (events have a TTL): start a new one.
                self._aggregator.forget(key)
                action = self._aggregator.plan(key, pending.involved, pending.count, time.time())
        assert isinstance(action, Create)
        self.api_calls += 1
        # Read-back would need `get` on events, which the ClusterRole does not grant. Our
        # Events carry their own name (no generateName): the answer is not even decoded.
        self._client.create(EVENTS, action.namespace, action.body, read_back=False, decode=False)
        name = action.body["metadata"]["name"]
        self._aggregator.sent(key, action.namespace, name, int(action.body["count"]))

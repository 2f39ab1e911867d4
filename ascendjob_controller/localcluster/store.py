"""In-memory object storage with one cluster-wide resourceVersion and a bounded watch history.

Like etcd behind kube-apiserver: every write gets the next revision and one event; watchers
replay history from a revision, and once history is compacted past a revision (every five
minutes, as kube-apiserver compacts etcd, or when the bounded window overflows), watching or
listing exactly from it is answered with 410 Expired. Stored objects are never mutated after
they are written (callers get copies), so readers can use them and their cached JSON outside
the lock.
"""

from __future__ import annotations

import base64
import bisect
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ascendjob_controller.localcluster import fastjson
from ascendjob_controller.localcluster.errors import ApiError, expired, too_old

Key = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects
ObjectRef = tuple[str, str, str]  # (group_resource, namespace, name)


def dumps(obj: Any) -> bytes:
    """The compact UTF-8 JSON clients read (fastjson.dumps: json.dumps's bytes, faster)."""
    return fastjson.dumps(obj)


@dataclass(frozen=True, slots=True)
class Entry:
    """A stored object and its JSON, serialized once at write time for lists and watches."""

    obj: dict[str, Any]
    raw: bytes

    def copy(self) -> dict[str, Any]:
        result: dict[str, Any] = fastjson.loads(self.raw)
        return result

    def copy_status(self) -> dict[str, Any]:
        """A copy for a write that changes only status: its status and the top-level and
        metadata dicts are the caller's own, everything under them (spec, labels,
        managedFields...) is the stored object's, shared.

        Why: decoding a whole stored pod (`copy`) was half of the simulated kubelet's CPU,
        which writes status alone. Sharing is safe as stored objects are never changed; the
        caller may set metadata's own keys (resourceVersion, managedFields) and anything
        under status, nothing else.
        """
        result = dict(self.obj)
        result["metadata"] = dict(result["metadata"])
        if "status" in result:
            result["status"] = fastjson.loads(fastjson.dumps(result["status"]))
        return result


@dataclass(frozen=True, slots=True)
class Event:
    rv: int
    type: str  # ADDED, MODIFIED, DELETED
    resource: str  # group_resource, e.g. "pods"
    namespace: str
    entry: Entry
    prev: dict[str, Any] | None  # the object before this event, for selector transitions


Listener = Callable[[Event], None]


def encode_continue(rv: int, namespace: str, name: str) -> str:
    """An opaque token naming where the next page starts, like the apiserver's."""
    payload = {"v": "meta.k8s.io/v1", "rv": rv, "start": f"{namespace}/{name}\x00"}
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()


def decode_continue(token: str) -> tuple[int, Key]:
    """Return (rv, last key served) or raise ApiError 400 for a token we did not make."""
    try:
        padded = token + "=" * (-len(token) % 4)
        raw = base64.urlsafe_b64decode(padded.encode())
    except ValueError as err:
        raise _bad_continue(f"illegal base64 data at input byte {len(token)}") from err
    try:
        payload = json.loads(raw)
        start = payload["start"]
        if payload.get("v") != "meta.k8s.io/v1" or not start.endswith("\x00"):
            raise KeyError("v")
        namespace, _, name = start[:-1].partition("/")
        return int(payload["rv"]), (namespace, name)
    except ValueError as err:
        first = chr(raw[0]) if raw else ""
        shown = first if first.isascii() and first.isprintable() else f"\\u{ord(first):04x}"
        raise _bad_continue(f"invalid character '{shown}' looking for beginning of value") from err
    except (KeyError, TypeError) as err:
        raise _bad_continue(
            "continue key is not valid: incorrect encoded start resourceVersion"
        ) from err


def _bad_continue(why: str) -> ApiError:
    if not why.startswith("continue key"):
        why = f"continue key is not valid: {why}"
    return ApiError(400, "BadRequest", f"invalid continue token: {why}")


def _owner_uids(meta: dict[str, Any]) -> list[str]:
    """The owner uids of an object, skipping malformed references (indexing must not fail)."""
    refs = meta.get("ownerReferences") or ()
    return [ref["uid"] for ref in refs if isinstance(ref, dict) and ref.get("uid")]


class Store:
    """Objects by resource and key, revision counter, history window, ownership index."""

    def __init__(self, window: int = 10_000, compaction_interval: float = 300.0) -> None:
        if window < 1:
            raise ValueError("window must be positive")
        self.window = window
        # kube-apiserver compacts etcd every 5 minutes to the revision it saw at the previous
        # tick; what is compacted is 410 Expired for watches and exact lists.
        self.compaction_interval = compaction_interval
        self._next_tick = time.monotonic() + compaction_interval
        self._tick_rv: int | None = None
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)
        # Watchers wait on their resource's condition, so a write wakes only the watches of
        # its resource (waking all of them on every write was a tenth of the bed's CPU).
        self._changed_for: dict[str, threading.Condition] = {}
        self._objects: dict[str, dict[Key, Entry]] = {}
        self._sorted: dict[str, list[Key]] = {}
        self._by_uid: dict[str, ObjectRef] = {}
        self._dependents: dict[str, set[ObjectRef]] = {}
        self._rv = 0
        self._history: list[Event] = []
        self._history_rvs: list[int] = []
        self._base = 0  # global index of _history[0]
        self._compacted_rv = 0  # the newest revision no longer in history
        self._listeners: list[Listener] = []

    # --- reads ---------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def compacted_rv(self) -> int:
        return self._compacted_rv

    def get(self, resource: str, namespace: str, name: str) -> Entry | None:
        return self._objects.get(resource, {}).get((namespace, name))

    def by_uid(self, uid: str) -> ObjectRef | None:
        return self._by_uid.get(uid)

    def dependents(self, owner_uid: str) -> list[ObjectRef]:
        with self.lock:
            return sorted(self._dependents.get(owner_uid, ()))

    def count(self, resource: str) -> int:
        return len(self._objects.get(resource, {}))

    def resources(self) -> list[str]:
        return list(self._objects)

    def keys(self, resource: str, namespace: str | None = None) -> list[Key]:
        """Sorted keys, optionally only one namespace's; the order lists and continue use."""
        with self.lock:
            keys = self._sorted_keys(resource)
            if namespace is None:
                return list(keys)
            lo = bisect.bisect_left(keys, (namespace, ""))
            hi = bisect.bisect_left(keys, (namespace + "\x00", ""))
            return keys[lo:hi]

    def _sorted_keys(self, resource: str) -> list[Key]:
        cached = self._sorted.get(resource)
        if cached is None:
            cached = sorted(self._objects.get(resource, {}))
            self._sorted[resource] = cached
        return cached

    def page(
        self,
        resource: str,
        namespace: str | None,
        after: Key | None,
        limit: int,
        match: Callable[[dict[str, Any]], bool] | None,
    ) -> tuple[list[Entry], int, bool, int | None]:
        """One page of a list: (entries, rv, more?, remaining count when knowable).

        Keys are walked in sorted order starting after `after`, so a continue token stays
        meaningful while objects come and go between pages.
        """
        with self.lock:
            keys = self._sorted_keys(resource)
            objects = self._objects.get(resource, {})
            lo = 0 if namespace is None else bisect.bisect_left(keys, (namespace, ""))
            hi = (
                len(keys)
                if namespace is None
                else bisect.bisect_left(keys, (namespace + "\x00", ""))
            )
            if after is not None:
                lo = max(lo, bisect.bisect_right(keys, after))
            out: list[Entry] = []
            pos = lo
            while pos < hi and (limit <= 0 or len(out) < limit):
                entry = objects[keys[pos]]
                pos += 1
                if match is None or match(entry.obj):
                    out.append(entry)
            more = False
            remaining: int | None = None
            if pos < hi:
                if match is None:
                    more, remaining = True, hi - pos
                else:
                    more = any(match(objects[keys[i]].obj) for i in range(pos, hi))
            return out, self._rv, more, remaining

    # --- writes (callers hold self.lock for read-modify-write sequences) ------------------
    def add_listener(self, listener: Listener) -> None:
        with self.lock:
            self._listeners.append(listener)

    def write(self, resource: str, obj: dict[str, Any], event_type: str) -> Entry:
        """Store `obj` (which the caller hands over) at the next revision, recording an event."""
        with self.lock:
            meta = obj["metadata"]
            key = (meta.get("namespace", ""), meta["name"])
            table = self._objects.setdefault(resource, {})
            old = table.get(key)
            self._rv += 1
            meta["resourceVersion"] = str(self._rv)
            entry = Entry(obj, dumps(obj))
            table[key] = entry
            if old is None:
                self._sorted.pop(resource, None)
            else:
                self._unindex(resource, key, old.obj)
            self._index(resource, key, obj)
            prev = old.obj if old is not None else None
            self._record(Event(self._rv, event_type, resource, key[0], entry, prev))
            return entry

    def refresh(self, resource: str, fn: Callable[[dict[str, Any]], bool]) -> None:
        """Let `fn` change stored objects in place, without a revision or an event.

        For what a real server does when decoding from etcd (CRD defaults on read): readers
        see the change, the object's resourceVersion stays.
        """
        with self.lock:
            table = self._objects.get(resource, {})
            for key, entry in list(table.items()):
                obj = entry.copy()
                if fn(obj):
                    table[key] = Entry(obj, dumps(obj))

    def remove(
        self, resource: str, namespace: str, name: str, final: dict[str, Any] | None = None
    ) -> Entry | None:
        """Delete an object; its DELETED event carries the deletion's own revision.

        `final` is the object as the deleting write left it (say, its last finalizer removed).
        """
        with self.lock:
            table = self._objects.get(resource, {})
            old = table.pop((namespace, name), None)
            if old is None:
                return None
            self._sorted.pop(resource, None)
            self._unindex(resource, (namespace, name), old.obj)
            self._rv += 1
            final = fastjson.loads(dumps(final) if final is not None else old.raw)
            final["metadata"]["resourceVersion"] = str(self._rv)
            entry = Entry(final, dumps(final))
            self._record(Event(self._rv, "DELETED", resource, namespace, entry, old.obj))
            return entry

    def _index(self, resource: str, key: Key, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        ref = (resource, key[0], key[1])
        uid = meta.get("uid")
        if uid:
            self._by_uid[uid] = ref
        for owner_uid in _owner_uids(meta):
            self._dependents.setdefault(owner_uid, set()).add(ref)

    def _unindex(self, resource: str, key: Key, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        ref = (resource, key[0], key[1])
        uid = meta.get("uid")
        if uid and self._by_uid.get(uid) == ref:
            del self._by_uid[uid]
        for owner_uid in _owner_uids(meta):
            deps = self._dependents.get(owner_uid)
            if deps is not None:
                deps.discard(ref)
                if not deps:
                    del self._dependents[owner_uid]

    def _record(self, event: Event) -> None:
        self._tick()
        self._history.append(event)
        self._history_rvs.append(event.rv)
        # Compact in batches so appends stay O(1) amortized.
        excess = len(self._history) - self.window
        if excess > max(1, self.window // 10):
            self._compacted_rv = self._history_rvs[excess - 1]
            del self._history[:excess]
            del self._history_rvs[:excess]
            self._base += excess
        for listener in self._listeners:
            listener(event)
        self.changed.notify_all()
        watchers = self._changed_for.get(event.resource)
        if watchers is not None:
            watchers.notify_all()

    def wake_all(self) -> None:
        """Wake every waiter, whatever it waits for (a watch drop, a stopping server)."""
        with self.lock:
            self.changed.notify_all()
            for condition in self._changed_for.values():
                condition.notify_all()

    def _tick(self) -> None:
        """Compact as kube-apiserver's etcd compactor does (the caller holds the lock)."""
        now = time.monotonic()
        while now >= self._next_tick:
            if self._tick_rv is not None:
                self._compact_to(self._tick_rv)
            self._tick_rv = self._rv
            self._next_tick += self.compaction_interval

    def _compact_to(self, rv: int) -> None:
        """Forget the history up to revision `rv`: it is no longer there to replay."""
        drop = bisect.bisect_right(self._history_rvs, rv)
        if drop:
            del self._history[:drop]
            del self._history_rvs[:drop]
            self._base += drop
        self._compacted_rv = max(self._compacted_rv, rv)

    def list_at(self, resource: str, namespace: str | None, rv: int) -> list[Entry]:
        """The objects as they were at revision `rv` (410 when history no longer has it)."""
        with self.lock:
            self._tick()
            if rv < self._compacted_rv:
                raise expired("The resourceVersion for the provided list is too old.")
            table = {k: e for k, e in self._objects.get(resource, {}).items()}
            start = bisect.bisect_right(self._history_rvs, rv)
            for event in reversed(self._history[start:]):
                if event.resource != resource:
                    continue
                meta = event.entry.obj["metadata"]
                key = (meta.get("namespace", ""), meta["name"])
                if event.type == "ADDED":
                    table.pop(key, None)
                elif event.prev is not None:
                    table[key] = Entry(event.prev, dumps(event.prev))
            keys = sorted(k for k in table if namespace is None or k[0] == namespace)
            return [table[k] for k in keys]

    def wait_for_rv(self, rv: int, timeout: float) -> bool:
        """Wait (up to `timeout`) until the store reaches revision `rv`."""
        with self.lock:
            return self.changed.wait_for(lambda: self._rv >= rv, timeout)

    def compact(self, keep: int = 0) -> None:
        """Drop all but the newest `keep` events now (tests use it to force 410)."""
        with self.lock:
            excess = len(self._history) - keep
            if excess > 0:
                self._compacted_rv = self._history_rvs[excess - 1]
                del self._history[:excess]
                del self._history_rvs[:excess]
                self._base += excess

    # --- watch support ---------------------------------------------------------------------
    def position_after(self, rv: int) -> int:
        """The history index of the first event newer than `rv`, or 410 if compacted away."""
        with self.lock:
            self._tick()
            if rv < self._compacted_rv:
                raise too_old(rv, self._compacted_rv)
            return self._base + bisect.bisect_right(self._history_rvs, rv)

    def head(self) -> int:
        """The history index the next event will get."""
        return self._base + len(self._history)

    def wait_events(
        self, position: int, timeout: float, resource: str | None = None
    ) -> tuple[list[Event], int, int]:
        """Events from `position` on (waiting up to `timeout` for one): (events, next, rv).

        With `resource`, the wait ends on a write of that resource (or `wake_all`), not on
        every write; the events returned are still all of them from `position`.
        A watcher that fell behind the window is told 410, as a real server drops slow ones.
        """
        with self.lock:
            if position >= self.head():
                if resource is None:
                    self.changed.wait(timeout)
                else:
                    condition = self._changed_for.get(resource)
                    if condition is None:
                        condition = self._changed_for[resource] = threading.Condition(self.lock)
                    condition.wait(timeout)
            if position < self._base:
                raise expired(
                    f"too old resource version: watcher fell behind ({self._compacted_rv})"
                )
            events = self._history[position - self._base :]
            return events, self.head(), self._rv

    def snapshot(self, resource: str, namespace: str | None) -> tuple[list[Entry], int, int]:
        """Every object of a resource plus the history position and rv they are consistent with."""
        with self.lock:
            keys = self.keys(resource, namespace)
            table = self._objects.get(resource, {})
            return [table[k] for k in keys], self.head(), self._rv

    def iter_all(self, resource: str) -> Iterator[Entry]:
        with self.lock:
            entries = list(self._objects.get(resource, {}).values())
        return iter(entries)

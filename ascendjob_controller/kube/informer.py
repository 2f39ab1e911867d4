"""Informers: a reflector (LIST then WATCH) feeding a thread-safe indexed cache and handlers.

Semantics (client-go `tools/cache`, design section 3):

* The reflector LISTs (paged), replaces the cache, then WATCHes from the list's resourceVersion
  with bookmarks, a random server timeout and a client read timeout a little longer, so a dead
  TCP stream cannot hang it. BOOKMARK only advances the resourceVersion. 410 Gone (a response or
  an ERROR event) means relist. Other errors back off with jitter (0.8 s doubling to 30 s, reset
  after 2 minutes without errors). A watch the server ends normally is resumed at once.
* A relist replaces the cache. Objects that vanished are delivered to on_delete as a
  `DeletedFinalStateUnknown` tombstone carrying the last object we knew; objects whose
  resourceVersion did not change produce no event, so reconnects neither lose nor duplicate.
* Handlers run in order on the informer's own thread, under one dispatch lock, so a handler
  never sees events for one object out of order.
* Cached objects are shared: never mutate one; copy before changing. managedFields and the
  last-applied annotation are stripped before caching (they are most of an object's bytes).
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ascendjob_controller.kube.client import (
    ApiError,
    KubeClient,
    Resource,
    WatchStream,
    WatchTimeoutError,
    is_gone,
)

log = logging.getLogger(__name__)

JSON = dict[str, Any]
IndexFunc = Callable[[JSON], list[str]]
Keys = list[str]  # module level: inside Store, `list` is a method
Objects = list[JSON]
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True)
class DeletedFinalStateUnknown:
    """An object that disappeared while we were not watching; `obj` is its last known state."""

    key: str
    obj: JSON


def object_key(obj: JSON | DeletedFinalStateUnknown) -> str:
    """ "namespace/name", or "name" for a cluster-scoped object."""
    if isinstance(obj, DeletedFinalStateUnknown):
        return obj.key
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        meta = {}  # total: a malformed object still gets a (useless) key, never an exception
    namespace = meta.get("namespace")
    return f"{namespace}/{meta.get('name')}" if namespace else str(meta.get("name"))


def _namespace_of(key: str) -> str | None:
    return key.split("/", 1)[0] if "/" in key else None


def index_by_namespace(obj: JSON) -> list[str]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if namespace else []


def index_by_controller_uid(obj: JSON) -> list[str]:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("uid"):
            return [str(ref["uid"])]
    return []


#: How long the server keeps one watch open (a random value in this range, so informers
#: restarted together do not re-watch together). Short, so that a dead connection is noticed
#: within a minute: kube-apiserver sends a BOOKMARK 2 s before a watch's timeout (its regular
#: ones only every minute), so no data for `timeout + WATCH_SILENCE_MARGIN` means the stream is
#: dead even when nothing changes. Re-watching from the last resourceVersion is one cheap
#: request per informer every ~35 s.
WATCH_TIMEOUT_RANGE = (30, 40)
WATCH_SILENCE_MARGIN = 10.0


def index_by_label(label_key: str) -> IndexFunc:
    """Index by "namespace/<label value>", e.g. pods by their job-name label."""

    def index(obj: JSON) -> list[str]:
        # Total on anything a server could store: an index function that raises would take
        # the object, and the informer's whole event, down with it.
        meta = obj.get("metadata") if isinstance(obj, dict) else None
        labels = meta.get("labels") if isinstance(meta, dict) else None
        value = labels.get(label_key) if isinstance(labels, dict) else None
        if not isinstance(value, str):
            return []
        return [f"{meta.get('namespace', '')}/{value}"]  # type: ignore[union-attr]

    return index


def strip_for_cache(obj: JSON) -> JSON:
    """Drop what the controller never reads; mutates `obj`, which we just decoded and own."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        meta.pop("managedFields", None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict) and LAST_APPLIED in annotations:
            annotations.pop(LAST_APPLIED)
    return obj


def _rv(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


# --- the store ------------------------------------------------------------------------------
class Store:
    """A thread-safe map key -> object with named secondary indexes."""

    def __init__(self, indexers: dict[str, IndexFunc] | None = None) -> None:
        self._lock = threading.RLock()
        self._items: dict[str, JSON] = {}
        self._indexers: dict[str, IndexFunc] = dict(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        with self._lock:
            for name, func in indexers.items():
                if name in self._indexers:
                    if self._indexers[name] is not func:
                        raise ValueError(f"indexer {name!r} already registered")
                    continue
                self._indexers[name] = func
                self._indices[name] = {}
                for key, obj in self._items.items():
                    self._index_one(name, key, obj)

    def get(self, key: str) -> JSON | None:
        with self._lock:
            return self._items.get(key)

    def list(self) -> Objects:
        with self._lock:
            return list(self._items.values())

    def keys(self) -> Keys:
        with self._lock:
            return list(self._items.keys())

    def by_index(self, index: str, value: str) -> Objects:
        with self._lock:
            if index not in self._indices:
                raise KeyError(f"no index named {index!r}")
            return [self._items[k] for k in self._indices[index].get(value, ())]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    # --- writes (the informer's) ----------------------------------------------------------
    def put(self, key: str, obj: JSON) -> JSON | None:
        with self._lock:
            old = self._items.get(key)
            if old is not None:
                self._unindex(key, old)
            self._items[key] = obj
            for name in self._indexers:
                self._index_one(name, key, obj)
            return old

    def delete(self, key: str) -> JSON | None:
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._unindex(key, old)
            return old

    def _index_one(self, name: str, key: str, obj: JSON) -> None:
        for value in self._indexers[name](obj):
            self._indices[name].setdefault(value, set()).add(key)

    def _unindex(self, key: str, obj: JSON) -> None:
        for name, func in self._indexers.items():
            index = self._indices[name]
            for value in func(obj):
                keys = index.get(value)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[value]


# --- handlers -------------------------------------------------------------------------------
OnAdd = Callable[[JSON], None]
OnUpdate = Callable[[JSON, JSON], None]
OnDelete = Callable[[JSON | DeletedFinalStateUnknown], None]


@dataclass(frozen=True)
class _Handler:
    on_add: OnAdd | None
    on_update: OnUpdate | None
    on_delete: OnDelete | None


class _Backoff:
    """Jittered exponential back-off that resets after a quiet period."""

    def __init__(self, initial: float, cap: float, reset_after: float) -> None:
        self._initial, self._cap, self._reset_after = initial, cap, reset_after
        self._next = initial
        self._last_failure = 0.0

    def next_delay(self) -> float:
        now = time.monotonic()
        if now - self._last_failure > self._reset_after:
            self._next = self._initial
        self._last_failure = now
        delay = self._next
        self._next = min(self._cap, self._next * 2)
        return delay * (1.0 + random.random() * 0.5)


# --- the informer ---------------------------------------------------------------------------
class Informer:
    """One resource (optionally namespace- and label-scoped), cached and watched."""

    def __init__(
        self,
        client: KubeClient,
        resource: Resource,
        *,
        namespace: str | None = None,
        namespaces: Sequence[str] | None = None,
        label_selector: str | None = None,
        indexers: dict[str, IndexFunc] | None = None,
        resync_period: float | None = None,
        watch_timeout_range: tuple[int, int] = WATCH_TIMEOUT_RANGE,
        watch_read_timeout: float | None = None,
        backoff: tuple[float, float] = (0.8, 30.0),
        transform: Callable[[JSON], JSON] | None = None,
        list_decoder: Callable[[bytes], JSON] | None = None,
        event_decoder: Callable[[bytes], JSON] | None = None,
    ) -> None:
        self.client = client
        self.resource = resource
        # client-go's SetTransform: applied to every object before it is cached or handed to
        # a handler, so the cache holds only what the controller reads.
        self._transform = transform or strip_for_cache
        # Decodes a LIST page's body in place of json.loads; it may skip whatever the
        # transform drops (pod_view.decode_pod_list), so a page is never decoded in full.
        self._list_decoder = list_decoder
        # The same for each watch event line (pod_view.decode_pod_event).
        self._event_decoder = event_decoder
        self.label_selector = label_selector
        scopes: list[str | None] = list(namespaces) if namespaces else [namespace]
        self._scopes = scopes if resource.namespaced else [None]
        self.store = Store(indexers)
        self._handlers: list[_Handler] = []
        self._resync_period = resync_period
        self._watch_timeout_range = watch_timeout_range
        self._watch_read_timeout = watch_read_timeout
        self._backoff = backoff
        self._dispatch = threading.RLock()
        self._stop = threading.Event()
        self._synced_scopes: set[str | None] = set()
        self._synced = threading.Event()
        self._streams: dict[str | None, WatchStream] = {}
        self._streams_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._started = False
        self.last_sync_resource_version: dict[str | None, str] = {}  # per scope, for tests
        self.watch_restarts = 0  # how many watches were (re)opened, for tests and debugging
        self.lists = 0  # how many full LISTs (sync + relists), likewise

    def __repr__(self) -> str:
        return f"Informer({self.resource.plural}, scopes={self._scopes}, sel={self.label_selector})"

    # --- configuration --------------------------------------------------------------------
    def add_event_handler(
        self,
        on_add: OnAdd | None = None,
        on_update: OnUpdate | None = None,
        on_delete: OnDelete | None = None,
    ) -> None:
        """Register handlers; added after start they first receive an add for every object."""
        handler = _Handler(on_add, on_update, on_delete)
        with self._dispatch:
            self._handlers.append(handler)
            if self._started and on_add is not None:
                for obj in self.store.list():
                    self._call(on_add, obj)

    def add_indexers(self, indexers: dict[str, IndexFunc]) -> None:
        self.store.add_indexers(indexers)

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        if self._started:
            return
        self._started = True
        for scope in self._scopes:
            name = f"reflector-{self.resource.plural}-{scope or 'all'}"
            thread = threading.Thread(target=self._reflect, args=(scope,), name=name, daemon=True)
            self._threads.append(thread)
            thread.start()
        if self._resync_period:
            thread = threading.Thread(
                target=self._resync_loop, name=f"resync-{self.resource.plural}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        self._stop.set()
        with self._streams_lock:
            streams = list(self._streams.values())
        for stream in streams:
            stream.close()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def has_synced(self) -> bool:
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float) -> bool:
        return self._synced.wait(timeout)

    # --- the reflector ----------------------------------------------------------------------
    def _reflect(self, scope: str | None) -> None:
        backoff = _Backoff(self._backoff[0], self._backoff[1], reset_after=120.0)
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list_and_replace(scope)
                    need_list = False
                # Resume from the last resourceVersion *applied*, even if the previous watch
                # broke mid-stream: replaying applied events would make the cache go backwards.
                self._watch(scope, self.last_sync_resource_version[scope])
            except ApiError as e:
                if self._stop.is_set():
                    return
                if is_gone(e):
                    log.info("watch expired, relisting", extra={"informer": repr(self)})
                    need_list = True
                    continue
                delay = 0.0 if isinstance(e, WatchTimeoutError) else backoff.next_delay()
                log.warning(
                    "reflector error",
                    extra={"informer": repr(self), "error": str(e), "retry_in": delay},
                )
                self._stop.wait(delay)
            except Exception:
                if self._stop.is_set():
                    return
                delay = backoff.next_delay()
                log.exception("reflector failure", extra={"informer": repr(self)})
                self._stop.wait(delay)

    def _list_and_replace(self, scope: str | None) -> str:
        # Paged, and each page transformed as it arrives: only one page of full objects is
        # ever held, which bounds the high-water mark of a large initial list.
        listed = self.client.list(
            self.resource,
            scope,
            label_selector=self.label_selector,
            transform=self._transform,
            decode=self._list_decoder,
        )
        self.lists += 1
        items = listed.get("items") or []
        rv = str((listed.get("metadata") or {}).get("resourceVersion") or "")
        self._replace(scope, items)
        self.last_sync_resource_version[scope] = rv
        with self._dispatch:
            self._synced_scopes.add(scope)
            if all(s in self._synced_scopes for s in self._scopes):
                self._synced.set()
        return rv

    def _watch(self, scope: str | None, rv: str) -> str:
        """Follow one watch until the server ends it; return the last resourceVersion seen."""
        low, high = self._watch_timeout_range
        timeout = random.randint(low, high)
        # Silence past the server's own timeout (it bookmarks just before it) means a dead
        # stream: close the socket and resume from `rv`.
        read_timeout = self._watch_read_timeout or timeout + WATCH_SILENCE_MARGIN
        stream = self.client.watch(
            self.resource,
            scope,
            resource_version=rv,
            label_selector=self.label_selector,
            timeout_seconds=timeout,
            read_timeout=read_timeout,
            decode=self._event_decoder,
        )
        with self._streams_lock:
            self._streams[scope] = stream
        self.watch_restarts += 1
        if self._stop.is_set():
            stream.close()
        started = time.monotonic()
        events = 0
        try:
            for kind, obj in stream:
                if self._stop.is_set():
                    break
                events += 1
                new_rv = _rv(obj)
                if kind != "BOOKMARK":
                    self._apply(kind, self._transform(obj))
                if new_rv:
                    rv = new_rv
                    self.last_sync_resource_version[scope] = rv
        finally:
            stream.close()
            with self._streams_lock:
                if self._streams.get(scope) is stream:
                    del self._streams[scope]
        if not events and time.monotonic() - started < 1.0 and not self._stop.is_set():
            # A server that ends watches at once would otherwise make us spin.
            raise ApiError(0, "ShortWatch", "watch ended immediately without events")
        return rv

    # --- applying changes -----------------------------------------------------------------
    def _apply(self, kind: str, obj: JSON) -> None:
        key = object_key(obj)
        with self._dispatch:
            if kind in ("ADDED", "MODIFIED"):
                old = self.store.put(key, obj)
                if old is None:
                    self._notify_add(obj)
                elif _rv(old) != _rv(obj):
                    self._notify_update(old, obj)
            elif kind == "DELETED":
                old = self.store.delete(key)
                if old is not None:
                    self._notify_delete(obj)
            else:
                log.warning("unknown watch event", extra={"type": kind, "key": key})

    def _replace(self, scope: str | None, items: Iterable[JSON]) -> None:
        fresh = {object_key(obj): obj for obj in items}
        with self._dispatch:
            for key in list(self.store.keys()):
                if key in fresh or (scope is not None and _namespace_of(key) != scope):
                    continue
                old = self.store.delete(key)
                if old is not None:
                    self._notify_delete(DeletedFinalStateUnknown(key, old))
            for key, obj in fresh.items():
                old = self.store.put(key, obj)
                if old is None:
                    self._notify_add(obj)
                elif _rv(old) != _rv(obj):
                    self._notify_update(old, obj)

    def _resync_loop(self) -> None:
        assert self._resync_period is not None
        while not self._stop.wait(self._resync_period):
            if not self.has_synced():
                continue
            with self._dispatch:
                for obj in self.store.list():
                    self._notify_update(obj, obj)

    def _notify_add(self, obj: JSON) -> None:
        for h in self._handlers:
            if h.on_add is not None:
                self._call(h.on_add, obj)

    def _notify_update(self, old: JSON, new: JSON) -> None:
        for h in self._handlers:
            if h.on_update is not None:
                self._call(h.on_update, old, new)

    def _notify_delete(self, obj: JSON | DeletedFinalStateUnknown) -> None:
        for h in self._handlers:
            if h.on_delete is not None:
                self._call(h.on_delete, obj)

    def _call(self, func: Callable[..., None], *args: Any) -> None:
        try:
            func(*args)
        except Exception:
            # One broken handler must not stop the cache, nor the other handlers.
            log.exception("event handler failed", extra={"informer": repr(self)})


def wait_for_cache_sync(informers: Iterable[Informer], timeout: float) -> bool:
    """True once every informer has delivered its first list, False on timeout."""
    deadline = time.monotonic() + timeout
    for informer in informers:
        if not informer.wait_for_sync(max(0.0, deadline - time.monotonic())):
            return False
    return True


class InformerFactory:
    """Shares one informer per (resource, label selector) among everyone who asks."""

    def __init__(
        self,
        client: KubeClient,
        namespaces: list[str] | None = None,
        *,
        resync_period: float | None = None,
        watch_timeout_range: tuple[int, int] = WATCH_TIMEOUT_RANGE,
        watch_read_timeout: float | None = None,
    ) -> None:
        self.client = client
        self.namespaces = list(namespaces or [])
        self._resync_period = resync_period
        self._watch_timeout_range = watch_timeout_range
        self._watch_read_timeout = watch_read_timeout
        self._informers: dict[tuple[Resource, str | None], Informer] = {}
        self._lock = threading.Lock()
        self._started = False

    def informer(
        self,
        resource: Resource,
        *,
        label_selector: str | None = None,
        indexers: dict[str, IndexFunc] | None = None,
        transform: Callable[[JSON], JSON] | None = None,
        list_decoder: Callable[[bytes], JSON] | None = None,
        event_decoder: Callable[[bytes], JSON] | None = None,
    ) -> Informer:
        with self._lock:
            key = (resource, label_selector)
            informer = self._informers.get(key)
            if informer is None:
                informer = Informer(
                    self.client,
                    resource,
                    namespaces=self.namespaces or None,
                    label_selector=label_selector,
                    resync_period=self._resync_period,
                    watch_timeout_range=self._watch_timeout_range,
                    watch_read_timeout=self._watch_read_timeout,
                    transform=transform,
                    list_decoder=list_decoder,
                    event_decoder=event_decoder,
                )
                self._informers[key] = informer
                if self._started:
                    informer.start()
            if indexers:
                informer.add_indexers(indexers)
            return informer

    def informers(self) -> list[Informer]:
        with self._lock:
            return list(self._informers.values())

    def start(self) -> None:
        with self._lock:
            self._started = True
            informers = list(self._informers.values())
        for informer in informers:
            informer.start()

    def stop(self, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        for informer in self.informers():
            informer.stop(max(0.0, deadline - time.monotonic()))

    def wait_for_cache_sync(self, timeout: float) -> bool:
        return wait_for_cache_sync(self.informers(), timeout)

"""The simulated kubelet's requests and watches, served in-process by the local cluster.

Why: under `hack/bench_peers.py` the kubelet made about half of the bed's requests, and its
HTTP round trips (the client's encode and header parsing, the server's request parsing,
the response decode, its watch's JSON lines) were about a third of the bed's CPU: the bed,
not the contenders, set the pace. Issue 12 asks for a bed that is never the bottleneck.

Fidelity is kept by running the same code a request over the socket runs:
- `DirectClient.request` hands the request to the server's own handler (`ApiHandler`) with
  no socket under it, so routing, request counting, fault injection (delays and injected
  errors), admission, managedFields, validation and the error Status are exactly those of
  an HTTP request, and watchers see the same events;
- `StoreWatcher` follows the store's event history the way the server's watch handler
  does (a snapshot, then events from its position, 410 Expired -> relist), minus the JSON
  encoding and decoding of each event line.

The objects a `StoreWatcher` hands out are the store's own: read them, never change them.
A real kube-apiserver (the real-cluster lane) gets the kubelet over HTTP, as before.
"""

from __future__ import annotations

import http.client
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ascendjob_controller.localcluster import fastjson
from ascendjob_controller.localcluster.errors import ApiError
from ascendjob_controller.localcluster.server import (
    ApiHandler,
    ServerState,
    _storage_type,
    parse_route,
)
from ascendjob_controller.localcluster.store import dumps

log = logging.getLogger(__name__)

#: How long a StoreWatcher waits for events before it checks whether it should stop.
POLL_SECONDS = 0.25


class _NoSocket:
    """The `server` a handler without a connection sees: only the shared state."""

    def __init__(self, state: ServerState) -> None:
        self.state = state


class _DirectHandler(ApiHandler):
    """ApiHandler answering one request given as values, capturing the answer.

    BaseRequestHandler.__init__ would read the request from a socket; this sets what
    `_handle` reads (command, path, headers, body) and keeps what it would have sent.
    """

    def __init__(
        self,
        state: ServerState,
        method: str,
        path: str,
        body: bytes,
        content_type: str,
        user_agent: str = "",
    ) -> None:
        self.server = _NoSocket(state)  # type: ignore[assignment]
        self.command = method
        self.path = path
        self.request_version = "HTTP/1.1"
        self.close_connection = False
        headers = http.client.HTTPMessage()
        headers["Accept"] = "application/json"
        if user_agent:
            headers["User-Agent"] = user_agent
        if body:
            headers["Content-Type"] = content_type
            headers["Content-Length"] = str(len(body))
        self.headers = headers
        self._body = body
        self.answer: tuple[int, bytes] = (500, b"")

    def _read_body(self) -> bytes:
        return self._body

    def _send_json(
        self,
        code: int,
        payload: bytes,
        content_type: str = "application/json",
        headers: dict[str, str] | None = None,
    ) -> None:
        self.answer = (code, payload)


class DirectClient:
    """The kubelet's client for the local cluster: `request` as `kubelet._Http` has it,
    with the User-Agent it would send (the field manager of writes that name none)."""

    def __init__(self, state: ServerState, user_agent: str = "") -> None:
        self.state = state
        self.user_agent = user_agent

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        decode: bool = True,
    ) -> tuple[int, Any]:
        payload = b"" if body is None else dumps(body)
        handler = _DirectHandler(self.state, method, path, payload, content_type, self.user_agent)
        handler._handle(method)
        code, raw = handler.answer
        try:
            data = fastjson.loads(raw) if raw and decode else None
        except ValueError:
            data = None
        return code, data

    def close(self) -> None:
        """Nothing to close: there is no connection."""

    def watcher(
        self,
        path: str,
        on_event: Callable[[str, dict[str, Any]], None],
        on_relist: Callable[[list[dict[str, Any]]], None],
        stopping: threading.Event,
        name: str,
    ) -> StoreWatcher:
        return StoreWatcher(self.state, path, on_event, on_relist, stopping, name)


@dataclass
class StoreWatcher:
    """LIST+WATCH of one collection straight from the store into the kubelet's callbacks."""

    state: ServerState
    path: str
    on_event: Callable[[str, dict[str, Any]], None]
    on_relist: Callable[[list[dict[str, Any]]], None]
    stopping: threading.Event
    name: str
    _resource: str = field(default="", init=False)

    def interrupt(self) -> None:
        """Nothing to cut: the loop sees `stopping` within POLL_SECONDS."""

    def run(self) -> None:
        position = -1  # relist first
        while not self.stopping.is_set():
            try:
                if position < 0:
                    position = self._list()
                    if position < 0:
                        self.stopping.wait(1.0)  # e.g. the PodGroup CRD is not installed
                        continue
                position = self._follow(position)
            except Exception as err:  # the loop must survive anything
                if not self.stopping.is_set():
                    log.warning("kubelet %s watcher error, retrying: %s", self.name, err)
                    self.stopping.wait(0.5)
                position = -1

    def _list(self) -> int:
        """Hand over every object of the collection; the history position they match."""
        route = parse_route(self.state.registry, urlsplit(self.path).path)
        if route is None:
            return -1
        self._resource = _storage_type(route.rt).group_resource
        entries, position, _ = self.state.api.store.snapshot(self._resource, None)
        self.on_relist([e.obj for e in entries])
        return position

    def _follow(self, position: int) -> int:
        """Deliver the collection's events from `position` until told to stop; -1: relist."""
        store = self.state.api.store
        while not self.stopping.is_set():
            try:
                events, position, _ = store.wait_events(position, POLL_SECONDS, self._resource)
            except ApiError:
                return -1  # fell behind the window: 410 Expired, as a watch would be told
            for event in events:
                if event.resource == self._resource:
                    self.on_event(event.type, event.entry.obj)
        return position

"""An HTTP fault proxy in front of a real kube-apiserver, driven by the local cluster's `Faults`.

A real kube-apiserver has no fault hooks, so on `--backend real` the replicas reach it through
this proxy instead. It speaks plain HTTP towards the replicas (their kubeconfigs carry no
credentials, as on the local cluster) and HTTPS with the cluster's admin client certificate
upstream, and it consults a `localcluster.faults.Faults` exactly where the embedded server
does, so the fault schedule (faults.py) drives both backends through the same object:

- `failure_for(verb, resource)` on every resource request: the request is answered with the
  same Status (and `Retry-After: 1` on 429) as the local cluster's `injected()`, and never
  reaches the server;
- `take_expire(plural)` on every watch: the watch is answered as kube-apiserver answers a
  watch from a compacted resourceVersion, a 200 stream holding one ERROR event whose object is
  a Status with code 410 (reason Expired), then the end of the stream;
- `drop_watches()` (through `on_drop`) ends every watch being streamed: the upstream socket is
  shut down, the replica gets the end of the chunked stream after its last complete event,
  and the connection is closed, as the local cluster does.

Only whole events are forwarded (the proxy cuts a stream between lines, never inside one), so
a cut watch looks like the server ending it, not like a corrupt stream. Discovery and other
non-resource paths are forwarded untouched, as the local hooks leave them alone. Resets and
silent partitions are TCP-level faults: the replicas' `ChaosProxy`s (proxy.py) sit in front of
this proxy and supply them, as they do on the local backend.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ascendjob_controller.localcluster.errors import ApiError, injected
from ascendjob_controller.localcluster.faults import Faults

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "transfer-encoding", "content-length", "host", "te", "trailer"}
)
DROPPED_UPSTREAM = HOP_BY_HOP | {"authorization", "accept-encoding", "upgrade"}
UPSTREAM_TIMEOUT = 60.0  # a non-watch request (the replicas' own deadline is about 30 s)
WATCH_TIMEOUT = 400.0  # a watch's upstream read: longer than any timeoutSeconds asked for


@dataclass(frozen=True)
class Route:
    """What the local server's router would call a request: its verb, resource and plural."""

    verb: str
    resource: str  # plural, plus "/subresource" if any
    plural: str


def classify(method: str, target: str) -> Route | None:
    """The route of a resource request, None for discovery and other non-resource paths."""
    url = urlsplit(target)
    segs = [s for s in url.path.split("/") if s]
    if segs[:2] == ["api", "v1"]:
        rest = segs[2:]
    elif len(segs) >= 3 and segs[0] == "apis":
        rest = segs[3:]
    else:
        return None
    if not rest:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    plural = rest[0]
    name = rest[1] if len(rest) > 1 else ""
    sub = rest[2] if len(rest) > 2 else ""
    watch = parse_qs(url.query).get("watch", [""])[-1] in ("true", "1", "True")
    verbs = {"POST": "create", "PUT": "update", "PATCH": "patch"}
    if method == "GET":
        verb = "get" if name else ("watch" if watch else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    else:
        verb = verbs.get(method, method.lower())
    return Route(verb, plural + (f"/{sub}" if sub else ""), plural)


class _Watch:
    """A watch being streamed, so that `drop_watches()` can end it from another thread."""

    def __init__(self, conn: http.client.HTTPConnection) -> None:
        self.conn = conn
        self.dropped = False

    def drop(self) -> None:
        self.dropped = True
        sock = self.conn.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes the streaming thread's read


class FaultProxy:
    """The proxy: a threaded HTTP/1.1 server on 127.0.0.1, one upstream connection per client
    connection (a new one per watch); see the module docstring."""

    def __init__(self, upstream_url: str, context: ssl.SSLContext | None) -> None:
        """`context` (the cluster's CA and admin certificate) for an https upstream; an http
        one (the local cluster, for trying the proxy out) takes None."""
        parts = urlsplit(upstream_url)
        self.https = parts.scheme == "https"
        self.upstream = (parts.hostname or "127.0.0.1", int(parts.port or 443))
        self.context = context
        self.faults = Faults()
        self.faults.on_drop = self.drop_watches
        self.requests = 0  # answers relayed from upstream (not watches)
        self.watches = 0  # watches streamed from upstream
        self.upstream_errors = 0  # requests answered 503 because the server could not be reached
        # seconds from a request's arrival to its answer, relayed requests only: all of them,
        # and the Lease ones (is a lost lease the server's and proxy's latency, or the replica's?)
        self.latency: dict[str, list[float]] = {"all": [], "leases": []}
        self._watches: set[_Watch] = set()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.proxy = self
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="chaos-fault-proxy", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def connect(self, timeout: float) -> http.client.HTTPConnection:
        host, port = self.upstream
        if self.https:
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=self.context)
        return http.client.HTTPConnection(host, port, timeout=timeout)

    def count(self, what: str, seconds: float = 0.0, resource: str = "") -> None:
        """One more of `what`: "request" (relayed, in `seconds`), "watch" (streamed) or
        "upstream_error"."""
        with self._lock:
            if what == "request":
                self.latency["all"].append(seconds)
                if resource.startswith("leases"):
                    self.latency["leases"].append(seconds)
            if what == "watch":
                self.watches += 1
            elif what == "upstream_error":
                self.upstream_errors += 1
            else:
                self.requests += 1

    def track(self, watch: _Watch, add: bool) -> None:
        with self._lock:
            if add:
                self._watches.add(watch)
            else:
                self._watches.discard(watch)

    def drop_watches(self) -> None:
        """End every watch being streamed now (Faults.on_drop)."""
        with self._lock:
            watches = list(self._watches)
        for watch in watches:
            watch.drop()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self.drop_watches()
        self._thread.join(timeout=10)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128  # bursts of reconnects after a reset must not wait for a SYN retry
    proxy: FaultProxy

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A replica's connection reset by its ChaosProxy while idle is a planned fault, not
        an error worth a traceback; anything else is still printed."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """One client connection: answers faults itself, forwards everything else."""

    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self._upstream: http.client.HTTPConnection | None = None

    def finish(self) -> None:
        self._close_upstream()
        with contextlib.suppress(OSError):
            super().finish()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: hundreds of requests a second under churn."""

    def do_GET(self) -> None:
        self._handle()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _handle(self) -> None:
        proxy = self.server.proxy
        self._began = time.monotonic()
        self._resource = ""
        try:
            body = self._read_body()
            route = classify(self.command, self.path)
            if route is None:
                self._forward(body)
                return
            self._resource = route.resource
            code = proxy.faults.failure_for(route.verb, route.resource)
            if code is not None:
                err = injected(code)
                self._send(code, json.dumps(err.status()).encode(), err.headers)
            elif route.verb != "watch":
                self._forward(body)
            elif proxy.faults.take_expire(route.plural):
                self._send_expired()
            else:
                self._stream_watch()
        except OSError:  # the client went away (a reset): nothing to answer
            self.close_connection = True
            self._close_upstream()

    def _read_body(self) -> bytes | None:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else None

    def _upstream_headers(self) -> dict[str, str]:
        out = {k: v for k, v in self.headers.items() if k.lower() not in DROPPED_UPSTREAM}
        out["Accept-Encoding"] = "identity"
        return out

    def _close_upstream(self) -> None:
        if self._upstream is not None:
            self._upstream.close()
            self._upstream = None

    def _forward(self, body: bytes | None) -> None:
        """Send the request upstream on this connection's keep-alive connection (a fresh one
        if that was closed by the server while idle) and relay the whole answer."""
        proxy = self.server.proxy
        for attempt in (1, 2):
            reused = self._upstream is not None
            conn = self._upstream or proxy.connect(UPSTREAM_TIMEOUT)
            self._upstream = conn
            try:
                conn.request(self.command, self.path, body=body, headers=self._upstream_headers())
                resp = conn.getresponse()
                data = resp.read()
            except (OSError, http.client.HTTPException):
                self._close_upstream()
                if reused and attempt == 1:
                    continue  # an idle keep-alive connection the server had closed
                proxy.count("upstream_error")
                status = ApiError(503, "ServiceUnavailable", "chaos fault proxy: upstream failed")
                self._send(503, json.dumps(status.status()).encode(), {"Retry-After": "1"})
                return
            proxy.count("request", time.monotonic() - self._began, self._resource)
            self._send(resp.status, data, _relayed(resp))
            return

    def _send(self, code: int, data: bytes, headers: dict[str, str] | None) -> None:
        self.send_response(code)
        sent = {k.lower() for k in (headers or {})}
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if "content-type" not in sent:
            self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _start_stream(self, headers: dict[str, str]) -> None:
        self.send_response(200)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_expired(self) -> None:
        """What kube-apiserver sends for a watch from a compacted resourceVersion."""
        err = ApiError(410, "Expired", "too old resource version (forced by the chaos proxy)")
        event = {"type": "ERROR", "object": err.status()}
        self._start_stream({"Content-Type": "application/json", "Cache-Control": "no-cache"})
        self._chunk(json.dumps(event).encode() + b"\n")
        self._chunk(b"")

    def _stream_watch(self) -> None:
        """Relay a watch from its own upstream connection, whole events only, until the
        server ends it or `drop_watches()` does (then the client connection closes too)."""
        proxy = self.server.proxy
        conn = proxy.connect(WATCH_TIMEOUT)
        watch = _Watch(conn)
        try:
            conn.connect()
            proxy.track(watch, True)
            conn.request("GET", self.path, headers=self._upstream_headers())
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException):
            proxy.track(watch, False)
            conn.close()
            if watch.dropped:  # cut while opening: the client sees an empty, ended watch
                self._start_stream({"Content-Type": "application/json"})
                self._chunk(b"")
                self.close_connection = True
                return
            proxy.count("upstream_error")
            status = ApiError(503, "ServiceUnavailable", "chaos fault proxy: upstream failed")
            self._send(503, json.dumps(status.status()).encode(), {"Retry-After": "1"})
            return
        try:
            self._relay_events(resp, watch)
        finally:
            proxy.track(watch, False)
            conn.close()

    def _relay_events(self, resp: http.client.HTTPResponse, watch: _Watch) -> None:
        if resp.status != 200:
            self._send(resp.status, resp.read(), _relayed(resp))
            return
        self.server.proxy.count("watch")
        self._start_stream(_relayed(resp))
        pending = b""
        while not watch.dropped:
            try:
                piece = resp.read1(65536)
            except (OSError, http.client.HTTPException):
                piece = b""
            if not piece:
                break
            pending += piece
            whole, newline, pending = pending.rpartition(b"\n")
            if newline:
                self._chunk(whole + newline)
        self._chunk(b"")
        if watch.dropped:
            self.close_connection = True


def _relayed(resp: http.client.HTTPResponse) -> dict[str, str]:
    """The server's headers a client may care about (Content-Type, Retry-After, Warning...)."""
    return {k: v for k, v in resp.getheaders() if k.lower() not in HOP_BY_HOP}

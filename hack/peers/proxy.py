"""A counting HTTP proxy in front of one benchmark contender (issue 12's three-way table).

Every contender (our controller, the kopf operator, the perfect client) talks to the local
cluster through its own instance of this proxy, so requests are counted the same way for all
three, by what reached the wire rather than by each contender's own metrics. It runs in its own
process (`python -m hack.peers.proxy --upstream URL`), so its CPU is charged neither to the
contender nor to the driver; it prints `ready <url>` once it listens.

Counts are kept per `<verb> <resource> <status code>`, with Kubernetes' verbs (get/list/watch
told apart by the path and `watch=true`) and the resource with its subresource
(`ascendjobs/status`). `GET /__proxy/counts` answers them as JSON and is not itself counted.

Each client connection gets one handler thread and one upstream keep-alive connection, so the
contender's connection reuse is preserved. Chunked responses (watches) are relayed chunk by
chunk as they arrive; anything else is read whole and sent with its Content-Length. Both
sockets have TCP_NODELAY: without it a reply written in two parts waits for the client's
delayed ACK, and every request cost ~40 ms more through the proxy than direct (sequential
senders, such as our Event recorder, ran at ~20 requests/s); now it adds about 0.3-0.5 ms.
"""

from __future__ import annotations

import argparse
import http.client
import json
import socket
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

COUNTS_PATH = "/__proxy/counts"
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "content-length",
    }
)
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


def classify(method: str, target: str) -> tuple[str, str]:
    """(verb, resource) of one request, as the API server's audit log would name them.

    `/api/v1/namespaces/ns/pods/p/status` -> resource `pods/status`; a GET without a name is a
    list, or a watch with `watch=true`; paths outside the resource tree are `discovery`.
    """
    parts = urlsplit(target)
    segments = [s for s in parts.path.split("/") if s]
    if segments[:1] == ["api"] and len(segments) >= 2:
        rest = segments[2:]
    elif segments[:1] == ["apis"] and len(segments) >= 3:
        rest = segments[3:]
    else:
        return method.lower(), "discovery"
    if not rest:
        return method.lower(), "discovery"
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]  # namespaced: drop "namespaces/<ns>"
    resource, named = rest[0], len(rest) >= 2
    if len(rest) >= 3:
        resource = f"{resource}/{rest[2]}"
    if method == "GET":
        watch = parse_qs(parts.query).get("watch", [""])[0] in ("true", "1")
        return ("watch" if watch else "get" if named else "list"), resource
    if method == "DELETE":
        return ("delete" if named else "deletecollection"), resource
    return _VERBS.get(method, method.lower()), resource


class Counts:
    """Thread-safe request counter shared by every handler thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, key: str) -> None:
        with self._lock:
            self._counts[key] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


class ProxyServer(ThreadingHTTPServer):
    """Knows the upstream and owns the counts; handler threads are daemons."""

    daemon_threads = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], upstream: str) -> None:
        super().__init__(address, Handler)
        parts = urlsplit(upstream)
        self.upstream_host = parts.hostname or "127.0.0.1"
        self.upstream_port = int(parts.port or 80)
        self.counts = Counts()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up (a contender being stopped) is no error; anything else is."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    """One client connection: forwards each request on its own upstream connection."""

    protocol_version = "HTTP/1.1"
    server: ProxyServer
    _upstream: http.client.HTTPConnection | None = None

    def log_message(self, format: str, *args: object) -> None:
        """Silent: a benchmark proxy prints nothing per request."""

    def do_GET(self) -> None:
        if self.path == COUNTS_PATH:
            self._answer_counts()
            return
        self._forward()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _answer_counts(self) -> None:
        body = json.dumps(self.server.counts.snapshot()).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def setup(self) -> None:
        """No Nagle: a reply written as headers then body would otherwise wait for the
        client's delayed ACK, adding ~40 ms to every request (measured before this)."""
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _connection(self) -> http.client.HTTPConnection:
        if self._upstream is None:
            conn = http.client.HTTPConnection(
                self.server.upstream_host, self.server.upstream_port, timeout=900
            )
            conn.connect()
            assert conn.sock is not None
            conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._upstream = conn
        return self._upstream

    def _request_body(self) -> bytes | None:
        length = self.headers.get("Content-Length")
        if length is not None:
            return self.rfile.read(int(length))
        if "chunked" in (self.headers.get("Transfer-Encoding") or ""):
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
                if size == 0:
                    return b"".join(chunks)
        return None

    def _forward(self) -> None:
        """Send the request upstream, count it by its answer, relay the answer."""
        verb, resource = classify(self.command, self.path)
        body = self._request_body()
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        try:
            conn = self._connection()
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException):
            self._drop_upstream()
            self.server.counts.add(f"{verb} {resource} 502")
            self.send_error(502, "upstream unreachable")
            return
        self.server.counts.add(f"{verb} {resource} {resp.status}")
        try:
            self._relay(resp)
        except (OSError, http.client.HTTPException):
            # The client went away mid-stream (a watch it closed): drop both sides.
            self._drop_upstream()
            self.close_connection = True

    def _relay(self, resp: http.client.HTTPResponse) -> None:
        self.send_response_only(resp.status, resp.reason)
        for name, value in resp.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        if resp.chunked:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            while True:
                data = resp.read1(65536)
                if not data:
                    break
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
        else:
            data = resp.read()
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        self.wfile.flush()
        if resp.will_close:
            self._drop_upstream()

    def _drop_upstream(self) -> None:
        if self._upstream is not None:
            self._upstream.close()
            self._upstream = None

    def finish(self) -> None:
        super().finish()
        self._drop_upstream()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the API server's URL")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    server = ProxyServer(("127.0.0.1", args.port), args.upstream)
    print(f"ready http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever(poll_interval=0.5)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

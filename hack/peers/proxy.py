"""A counting HTTP proxy in front of one benchmark contender (issue 12's three-way table).

Every contender (our controller, the kopf operator, the perfect client) talks to the local
cluster through its own instance of this proxy, so requests are counted the same way for all
three, by what reached the wire rather than by each contender's own metrics. It runs in its own
process (`python -m hack.peers.proxy --upstream URL`), so its CPU is charged neither to the
contender nor to the driver (bench_peers reports it apart); it prints `ready <url>` once it
listens.

Counts are kept per `<verb> <resource> <status code>`, with Kubernetes' verbs (get/list/watch
told apart by the path and `watch=true`) and the resource with its subresource
(`ascendjobs/status`). `GET /__proxy/counts`, as the first request of a connection, is answered
by the proxy itself with them as JSON (then the connection closes) and is not counted.

It relays bytes, not messages. Each client connection gets one upstream connection and two
threads, one per direction, that pass every byte on as soon as it arrives, unchanged (a watch's
chunks included), and only *frame* what passes: `Framer` finds where each request and each
response begins, from the start line, Content-Length and chunked encoding, without building
header objects. Requests are matched to their answers in order (HTTP/1.1 answers a
connection's requests in the order they were sent). The first version parsed and rebuilt every
message with http.server and http.client: 2.7 ms of proxy CPU per job of the perfect client
and 4.3 of ours, on two cores it shares with the contender and the bed. Both sockets have
TCP_NODELAY: a reply written in two parts would otherwise wait for the client's delayed ACK
(~40 ms a request, measured with the first version).

Not handled, as no contender sends them: HEAD requests (an answer without the body its
headers announce) and protocol upgrades after the first request of a connection.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import sys
import threading
from collections import Counter, deque
from urllib.parse import parse_qs, urlsplit

COUNTS_PATH = "/__proxy/counts"
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}
_RECV = 65536


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


class Framer:
    """Where each HTTP/1.1 message starts, in one direction of one connection's byte stream.

    `feed` takes the bytes as they arrive, in pieces of any size, and returns the start line
    of every message whose head it completed; it keeps only what it has not yet framed (at
    most one unfinished head or chunk-size line), never a body. Bodies are passed over by
    their Content-Length or their chunked encoding, or run to the connection's end (a response
    with neither, or a 101 Switching Protocols). A response with a 1xx status, 204 or 304 has
    no body; so has a request without Content-Length or chunked encoding.
    """

    def __init__(self, responses: bool) -> None:
        self._responses = responses
        self._buf = bytearray()
        self._skip = 0  # body (or chunk plus its CRLF) bytes still to pass over
        self._chunked = False  # between chunks: a chunk-size line comes next
        self._trailer = False  # after the last chunk: trailer lines until an empty one
        self._to_close = False  # the body runs to the connection's end

    def feed(self, data: bytes) -> list[bytes]:
        if self._to_close:
            return []
        if self._skip >= len(data) and not self._buf:
            self._skip -= len(data)  # the common case inside a body: nothing to look at
            return []
        buf = self._buf
        buf += data
        pos, starts = 0, []
        while pos < len(buf) and not self._to_close:
            if self._skip:
                step = min(self._skip, len(buf) - pos)
                pos, self._skip = pos + step, self._skip - step
                continue
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                break
            if self._chunked:
                size = int(bytes(buf[pos:eol]).split(b";", 1)[0], 16)
                self._chunked, self._trailer = size > 0, size == 0
                self._skip = size + 2 if size else 0
                pos = eol + 2
            elif self._trailer or eol == pos:
                self._trailer = self._trailer and eol != pos
                pos = eol + 2  # a trailer line, or an empty line between messages
            else:
                end = buf.find(b"\r\n\r\n", pos)
                if end < 0:
                    break
                lines = bytes(buf[pos:end]).split(b"\r\n")
                pos = end + 4
                self._frame_body(lines)
                starts.append(lines[0])
        del buf[:pos]
        return starts

    def _frame_body(self, lines: list[bytes]) -> None:
        """Set the state for the body that follows this head (its start line and fields)."""
        if self._responses:
            status = status_of(lines[0])
            if status == 101:
                self._to_close = True
                return
            if 100 <= status < 200 or status in (204, 304):
                return
        length: int | None = None
        for line in lines[1:]:
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"transfer-encoding" and b"chunked" in value.lower():
                self._chunked = True
                return
            if name == b"content-length":
                length = int(value.strip())
        if length is not None:
            self._skip = length
        elif self._responses:
            self._to_close = True


def status_of(start: bytes) -> int:
    """The status code of a response's start line (`HTTP/1.1 201 Created` -> 201)."""
    return int(start.split(b" ", 2)[1])


def is_final(status: int) -> bool:
    """A 1xx answer (100 Continue) precedes the real one; 101 ends HTTP on the connection."""
    return status >= 200 or status == 101


class Connection:
    """One client connection and its upstream one: two pumps, one per direction."""

    def __init__(self, client: socket.socket, upstream: tuple[str, int], counts: Counts) -> None:
        self.client = client
        self.address = upstream
        self.counts = counts
        self.pending: deque[str] = deque()  # "<verb> <resource>" of requests not yet answered
        self.lock = threading.Lock()

    def serve(self) -> None:
        """The client -> upstream pump (the accepting thread), after the first bytes."""
        client = self.client
        try:
            first = client.recv(_RECV)
            if not first:
                return
            if first.startswith(f"GET {COUNTS_PATH} ".encode()):
                self._answer_counts()
                return
            try:
                upstream = socket.create_connection(self.address)
            except OSError:
                self._unreachable(first)
                return
            upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            back = threading.Thread(target=self._pump_back, args=(upstream,), daemon=True)
            back.start()
            self._pump_forth(first, upstream)
        except OSError:
            pass
        finally:
            _close(client)

    def _pump_forth(self, data: bytes, upstream: socket.socket) -> None:
        framer = Framer(responses=False)
        try:
            while data:
                for start in framer.feed(data):
                    with self.lock:
                        self.pending.append(request_key(start))
                upstream.sendall(data)
                data = self.client.recv(_RECV)
        finally:
            _close(upstream)  # wakes the other pump (a watch the client hung up)

    def _pump_back(self, upstream: socket.socket) -> None:
        framer = Framer(responses=True)
        try:
            while data := upstream.recv(_RECV):
                for start in framer.feed(data):
                    status = status_of(start)
                    if is_final(status):
                        with self.lock:
                            key = self.pending.popleft() if self.pending else "unknown unknown"
                        self.counts.add(f"{key} {status}")
                self.client.sendall(data)
        except OSError:
            pass
        finally:
            _close(self.client)  # wakes the first pump

    def _answer_counts(self) -> None:
        body = json.dumps(self.counts.snapshot()).encode()
        head = (
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        self.client.sendall(head.encode() + body)

    def _unreachable(self, first: bytes) -> None:
        starts = Framer(responses=False).feed(first)
        if starts:
            self.counts.add(f"{request_key(starts[0])} 502")
        body = b"upstream unreachable"
        head = (
            "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
        )
        self.client.sendall(head.encode() + body)


def request_key(start: bytes) -> str:
    """`POST /api/v1/namespaces/ns/pods HTTP/1.1` -> `create pods`."""
    method, target, _ = start.decode("latin-1").split(" ", 2)
    return " ".join(classify(method, target))


def _close(sock: socket.socket) -> None:
    """Shut down both ways (which wakes a thread blocked in recv on it), then close."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


class ProxyServer:
    """Accepts clients; each gets a Connection served on its own daemon thread."""

    def __init__(self, address: tuple[str, int], upstream: str) -> None:
        parts = urlsplit(upstream)
        self.upstream = (parts.hostname or "127.0.0.1", int(parts.port or 80))
        self.counts = Counts()
        self.socket = socket.create_server(address, backlog=512)
        self.server_address = self.socket.getsockname()

    def serve_forever(self) -> None:
        """Until server_close (whose shutdown wakes the blocked accept)."""
        while True:
            try:
                client, _ = self.socket.accept()
            except OSError:
                return
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = Connection(client, self.upstream, self.counts)
            threading.Thread(target=conn.serve, daemon=True).start()

    def server_close(self) -> None:
        _close(self.socket)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the API server's URL")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    args = parser.parse_args(argv)
    server = ProxyServer(("127.0.0.1", args.port), args.upstream)
    print(f"ready http://127.0.0.1:{server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The benchmark's counting proxy (hack/peers/proxy.py): framing, relaying and counting.

The proxy passes bytes on unchanged and only frames them to count requests by their answers,
so what matters is that it finds every message boundary whatever the pieces the bytes arrive
in, and that a client through it sees exactly what the server sent. The end-to-end tests run
it against a small standard-library server with the answers the bench meets: JSON bodies,
201 and 409, a chunked watch stream, 100 Continue, 204 and a keep-alive connection.
"""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

from hack.peers.proxy import COUNTS_PATH, Framer, ProxyServer, request_key
from tests.httpstub import serving

POD = b'{"kind":"Pod","metadata":{"name":"p"}}'
CHUNKED = (
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"5;ext=1\r\nhello\r\n"
    b"6\r\n world\r\n"
    b"0\r\nX-Trailer: t\r\n\r\n"
)
STREAM = [
    (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 99\r\n\r\n", [b"HTTP/1.1 304 Not Modified"]),
    (b"HTTP/1.1 201 Created\r\nContent-Length: 38\r\n\r\n" + POD, [b"HTTP/1.1 201 Created"]),
    (
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 409 Conflict\r\ncontent-length: 2\r\n\r\n{}",
        [b"HTTP/1.1 100 Continue", b"HTTP/1.1 409 Conflict"],
    ),
    (CHUNKED, [b"HTTP/1.1 200 OK"]),
    (b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", [b"HTTP/1.1 204 No Content"]),
]


def _feed(framer: Framer, data: bytes, piece: int) -> list[bytes]:
    starts: list[bytes] = []
    for i in range(0, len(data), piece):
        starts += framer.feed(data[i : i + piece])
    return starts


@pytest.mark.parametrize("piece", [1, 2, 3, 7, 16, 4096])
def test_responses_are_framed_whatever_the_pieces(piece: int) -> None:
    """One connection's answers back to back, fed in pieces of every size: every start line
    is found once, none is taken from a body (the 304's Content-Length announces no body)."""
    stream = b"".join(data for data, _ in STREAM)
    expected = [start for _, starts in STREAM for start in starts]
    assert _feed(Framer(responses=True), stream, piece) == expected


@pytest.mark.parametrize("piece", [1, 5, 4096])
def test_requests_are_framed_by_length_and_chunks(piece: int) -> None:
    body = json.dumps({"metadata": {"name": "GET /api/v1/pods HTTP/1.1\r\n\r\n"}}).encode()
    stream = (
        b"POST /api/v1/namespaces/ns/pods HTTP/1.1\r\nContent-Length: "
        + str(len(body)).encode()
        + b"\r\n\r\n"
        + body
        + b"GET /api/v1/pods?watch=true HTTP/1.1\r\nHost: x\r\n\r\n"
        + b"PATCH /api/v1/namespaces/ns/pods/p/status HTTP/1.1\r\n"
        + b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"
        + b"DELETE /api/v1/namespaces/ns/services/s HTTP/1.1\r\n\r\n"
    )
    starts = _feed(Framer(responses=False), stream, piece)
    assert [request_key(s) for s in starts] == [
        "create pods",
        "watch pods",
        "patch pods/status",
        "delete services",
    ]


def test_a_response_without_length_runs_to_the_close() -> None:
    framer = Framer(responses=True)
    assert framer.feed(b"HTTP/1.1 200 OK\r\n\r\nbody HTTP/1.1 200 OK\r\n\r\n") == [
        b"HTTP/1.1 200 OK"
    ]
    assert framer.feed(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n") == []


class Upstream(BaseHTTPRequestHandler):
    """Answers as the API server would for the few requests the tests send."""

    protocol_version = "HTTP/1.1"
    created: set[str] = set()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet."""

    def _send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        name = json.loads(body)["metadata"]["name"]
        if name in self.created:
            self._send(409, b'{"kind":"Status","reason":"AlreadyExists"}')
        else:
            self.created.add(name)
            self._send(201, body)

    def do_DELETE(self) -> None:
        self.send_response(204)
        self.end_headers()

    def do_GET(self) -> None:
        """A watch: three events as chunks, then the end of the stream."""
        self.send_response(200)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for i in range(3):
            line = json.dumps({"type": "ADDED", "object": {"n": i}}).encode() + b"\n"
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")


@pytest.fixture
def proxied() -> Iterator[tuple[ProxyServer, int]]:
    Upstream.created = set()
    with serving(Upstream) as upstream:
        proxy = ProxyServer(("127.0.0.1", 0), upstream)
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        try:
            yield proxy, int(proxy.server_address[1])
        finally:
            proxy.server_close()


def _counts(port: int) -> dict[str, int]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", COUNTS_PATH)
        resp = conn.getresponse()
        assert resp.status == 200
        counts: dict[str, int] = json.loads(resp.read())
        return counts
    finally:
        conn.close()


def test_one_keep_alive_connection_is_relayed_and_counted(
    proxied: tuple[ProxyServer, int],
) -> None:
    _, port = proxied
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    pod = json.dumps({"metadata": {"name": "p"}}).encode()
    path = "/api/v1/namespaces/ns/pods"
    answers = []
    for method, target, body in [
        ("POST", path, pod),
        ("POST", path, pod),
        ("GET", path + "?watch=true", None),
        ("DELETE", path + "/p", None),
    ]:
        conn.request(method, target, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        answers.append((resp.status, resp.read()))
    conn.close()
    assert answers[0] == (201, pod)
    assert answers[1][0] == 409
    events = [json.loads(line) for line in answers[2][1].splitlines()]
    assert [e["object"]["n"] for e in events] == [0, 1, 2]
    assert answers[3] == (204, b"")
    counts = _counts(port)
    assert counts == {
        "create pods 201": 1,
        "create pods 409": 1,
        "watch pods 200": 1,
        "delete pods 204": 1,
    }
    assert _counts(port) == counts  # asking for the counts is not itself counted


def test_an_unreachable_upstream_is_a_counted_502() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = probe.getsockname()[1]  # bound, never listening: connections are refused
        proxy = ProxyServer(("127.0.0.1", 0), f"http://127.0.0.1:{dead}")
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        port = int(proxy.server_address[1])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("DELETE", "/api/v1/namespaces/ns/services/s")
        assert conn.getresponse().status == 502
        conn.close()
        assert _counts(port) == {"delete services 502": 1}
        proxy.server_close()

"""The bed's own request parsing (ApiHandler.parse_request) keeps http.server's behaviour.

Requests are written byte by byte on a raw socket, so keep-alive, HTTP/1.0, Expect and odd
header blocks reach the server exactly as written; what the standard library answers for
each is what the bed must answer.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from ascendjob_controller.localcluster.cluster import LocalCluster


@pytest.fixture
def conn(cluster: LocalCluster) -> Iterator[socket.socket]:
    parts = urlsplit(cluster.url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=10)
    yield sock
    sock.close()


class Reader:
    """Reads whole responses (status, headers, Content-Length body) off one socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = b""

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.buffer += chunk
        return bool(chunk)

    def response(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buffer:
            if not self._fill():
                raise AssertionError(f"connection closed mid-response: {self.buffer!r}")
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        status_line, *lines = head.decode("iso-8859-1").split("\r\n")
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        while len(self.buffer) < length:
            if not self._fill():
                raise AssertionError("connection closed mid-body")
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(status_line.split()[1]), headers, body

    def closed(self) -> bool:
        """True when the server has closed the connection (nothing more arrives)."""
        return not self._fill()


def get(path: str, version: str = "HTTP/1.1", *extra: str) -> bytes:
    lines = [f"GET {path} {version}", "Host: x", "Accept: application/json", *extra]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_keep_alive_answers_request_after_request(conn: socket.socket) -> None:
    reader = Reader(conn)
    for _ in range(3):
        conn.sendall(get("/version"))
        code, _, body = reader.response()
        assert code == 200
        assert json.loads(body)["major"] == "1"


def test_http_1_0_closes_after_the_answer(conn: socket.socket) -> None:
    reader = Reader(conn)
    conn.sendall(get("/version", "HTTP/1.0"))
    assert reader.response()[0] == 200
    assert reader.closed()


def test_http_1_0_keep_alive_stays_open(conn: socket.socket) -> None:
    reader = Reader(conn)
    for _ in range(2):
        conn.sendall(get("/version", "HTTP/1.0", "Connection: keep-alive"))
        assert reader.response()[0] == 200


def test_connection_close_closes(conn: socket.socket) -> None:
    reader = Reader(conn)
    conn.sendall(get("/version", "HTTP/1.1", "Connection: Close"))
    assert reader.response()[0] == 200
    assert reader.closed()


def test_expect_100_continue_is_answered_before_the_body(conn: socket.socket) -> None:
    body = json.dumps({"metadata": {"name": "expect-100"}}).encode()
    head = (
        "POST /api/v1/namespaces HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n"
    )
    conn.sendall(head.encode())
    reader = Reader(conn)
    code, _, _ = reader.response()  # sent before the body exists
    assert code == 100
    conn.sendall(body)
    code, _, answer = reader.response()
    assert code == 201
    assert json.loads(answer)["metadata"]["name"] == "expect-100"


def test_double_slash_path_is_reduced_to_one(conn: socket.socket) -> None:
    conn.sendall(get("//version"))
    assert Reader(conn).response()[0] == 200


def test_folded_header_still_parses(conn: socket.socket) -> None:
    """An obsolete line fold goes to the email parser, as the standard library would."""
    request = (
        b"GET /api/v1/namespaces/default HTTP/1.1\r\nHost: x\r\n"
        b"Accept: application/json\r\nX-Folded: one\r\n two\r\n\r\n"
    )
    conn.sendall(request)
    code, _, body = Reader(conn).response()
    assert code == 200
    assert json.loads(body)["metadata"]["name"] == "default"


def test_header_names_are_case_insensitive(conn: socket.socket) -> None:
    body = json.dumps({"metadata": {"name": "lower-case-headers"}}).encode()
    head = (
        "POST /api/v1/namespaces HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    )
    conn.sendall(head.encode() + body)
    code, _, answer = Reader(conn).response()
    assert code == 201, answer


def test_too_many_headers_is_431(conn: socket.socket) -> None:
    extra = [f"X-H{i}: v" for i in range(120)]
    conn.sendall(get("/version", "HTTP/1.1", *extra))
    assert Reader(conn).response()[0] == 431


def test_header_line_too_long_is_431(conn: socket.socket) -> None:
    conn.sendall(get("/version", "HTTP/1.1", "X-Long: " + "a" * 70000))
    assert Reader(conn).response()[0] == 431


@pytest.mark.parametrize(
    ("request_line", "code"),
    [
        ("GET /version HTTP/2.0", 505),  # the standard library's answers, kept
        ("GET /version FOO/1.1", 400),
        ("GET /version HTTP/1.1 extra", 400),
    ],
)
def test_unusual_request_lines_keep_the_standard_answers(
    conn: socket.socket, request_line: str, code: int
) -> None:
    """Refused before the version is known, so answered as HTTP/0.9 would be: no status
    line, the error page alone, then the connection closes."""
    conn.sendall(f"{request_line}\r\nHost: x\r\n\r\n".encode())
    reader = Reader(conn)
    while not reader.closed():
        pass
    assert f"Error code: {code}" in reader.buffer.decode()

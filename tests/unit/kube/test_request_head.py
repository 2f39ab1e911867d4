"""request_bytes writes exactly what http.client sends on urllib3's connection, or declines.

Compared with the standard library on the same request: `http.client.HTTPConnection.request`
on a urllib3 connection whose socket records what is sent. Where `request_bytes` declines
(None), the transport sends through that same path, so either way the bytes on the wire, and
the errors for bad input, are the standard library's.
"""

from __future__ import annotations

import http.client
from typing import Any

import pytest
import urllib3
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendjob_controller.kube.request_head import host_header, request_bytes


class Recorder:
    """A socket that keeps what is sent."""

    def __init__(self) -> None:
        self.sent = b""

    def sendall(self, data: bytes) -> None:
        self.sent += bytes(data)


def standard(
    method: str, target: str, headers: dict[str, Any], body: bytes | None, **conn: Any
) -> bytes:
    """What http.client sends on a urllib3 connection (the transport's fallback)."""
    connection = urllib3.connection.HTTPConnection(conn.get("host", "127.0.0.1"), conn.get("port"))
    recorder = Recorder()
    connection.sock = recorder  # type: ignore[assignment]
    http.client.HTTPConnection.request(connection, method, target, body, headers)
    return recorder.sent


def ours(
    method: str, target: str, headers: dict[str, Any], body: bytes | None, **conn: Any
) -> bytes | None:
    connection = urllib3.connection.HTTPConnection(conn.get("host", "127.0.0.1"), conn.get("port"))
    host = host_header(connection.host, connection.port, connection.default_port)
    return request_bytes(method, target, host, headers, body)


TOKEN = {"Authorization": "Bearer abc.def", "User-Agent": "ascendjob-controller/1.0"}
JSON = {**TOKEN, "Accept": "application/json", "Content-Type": "application/json"}


@pytest.mark.parametrize(
    ("method", "target", "headers", "body", "conn"),
    [
        ("GET", "/api/v1/namespaces/ns/pods?limit=500", TOKEN, None, {"port": 6443}),
        ("POST", "/api/v1/namespaces/ns/events", JSON, b'{"a":1}', {"port": 6443}),
        ("PATCH", "/apis/g/v1/namespaces/ns/x/y/status", JSON, b"{}", {"port": 80}),
        ("PATCH", "/x", TOKEN, None, {}),  # no body: Content-Length 0, as http.client says
        ("PUT", "/x", {}, b"", {}),  # an empty body still has its length
        ("DELETE", "/api/v1/namespaces/ns/pods/p", JSON, None, {"port": 8080}),
        ("DELETE", "/x", JSON, b'{"propagationPolicy":"Background"}', {}),
        ("GET", "/x", {}, None, {"host": "::1", "port": 443}),  # IPv6 literal
        ("GET", "/x", {}, None, {"host": "kubernetes.default.svc.", "port": 443}),  # FQDN dot
        ("GET", "/x", {}, None, {"host": "bücher.example", "port": 6443}),  # IDNA
        ("GET", "/x", {"X-Latin": "caf\xe9"}, None, {}),  # latin-1 value
        ("GET", "/x", {"Odd Name": "v"}, None, {}),  # http.client lets blanks into a name
    ],
)
def test_the_same_bytes_as_http_client(
    method: str, target: str, headers: dict[str, Any], body: bytes | None, conn: dict[str, Any]
) -> None:
    assert ours(method, target, headers, body, **conn) == standard(
        method, target, headers, body, **conn
    )


@pytest.mark.parametrize(
    ("method", "target", "headers"),
    [
        ("GET", "/x", {"Host": "other"}),  # the caller's own derived headers
        ("GET", "/x", {"accept-encoding": "gzip"}),
        ("POST", "/x", {"Content-Length": "3"}),
        ("POST", "/x", {"Transfer-Encoding": "chunked"}),
        ("GET", "/x", {"X-Number": 7}),  # not a string: http.client converts it
        ("GET", "/x", {"X-Bad": "a\r\nInjected: yes"}),  # a line break in a value
        ("GET", "/x", {"X-Bad\r\nInjected": "yes"}),  # ... in a name
        ("GET", "/x", {":colon": "v"}),  # not a header name
        ("GET", "/x", {"Näme": "v"}),  # a name must be ASCII
        ("GET", "/x", {"X-Wide": "\u20ac"}),  # a value must be latin-1
        ("GET", "/x y", {}),  # a blank in the target
        ("GET", "/x\r\nInjected: yes", {}),
        ("GET", "/caf\xe9", {}),  # a non-ASCII target
        ("GE T", "/x", {}),  # a method that is not a token
    ],
)
def test_declines_what_only_http_client_should_send(
    method: str, target: str, headers: dict[str, Any]
) -> None:
    assert ours(method, target, headers, None) is None


def test_a_declined_line_break_is_refused_by_the_fallback_as_well() -> None:
    """Declining is safe: the fallback raises for a header that would split the request."""
    headers = {"X-Bad": "a\r\nInjected: yes"}
    assert ours("GET", "/x", headers, None) is None
    with pytest.raises(ValueError):
        standard("GET", "/x", headers, None)


_TEXT = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x17F), max_size=12)


@settings(max_examples=300, deadline=None)
@given(
    method=st.sampled_from(["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"]),
    target=_TEXT.map(lambda text: "/" + text),
    headers=st.dictionaries(_TEXT, _TEXT, max_size=4),
    body=st.none() | st.binary(max_size=16),
)
def test_any_request_is_sent_as_http_client_sends_it_or_declined(
    method: str, target: str, headers: dict[str, str], body: bytes | None
) -> None:
    """What we build is byte for byte http.client's; what we decline, it sends or refuses."""
    built = ours(method, target, headers, body)
    try:
        expected: bytes | Exception = standard(method, target, headers, body)
    except (ValueError, UnicodeError, http.client.InvalidURL) as error:
        expected = error
    if built is not None:
        assert built == expected

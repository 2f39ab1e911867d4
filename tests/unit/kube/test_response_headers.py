"""The fast header reader gives what http.client's email-based one gives, for any input.

Compared with the standard library on the same bytes: the header items and defects of the
message, and the response's status, version, length, chunking, keep-alive and body.
"""

from __future__ import annotations

import http.client
import io

import pytest
import urllib3
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendjob_controller.kube.response_headers import (
    HeadersResponse,
    HTTPConnection,
    HTTPSConnection,
    parse_header_lines,
    use_fast_headers,
)


def both(block: bytes) -> tuple[http.client.HTTPMessage, http.client.HTTPMessage]:
    lines = http.client._read_headers(io.BytesIO(block))  # type: ignore[attr-defined]
    return parse_header_lines(lines), http.client.parse_headers(io.BytesIO(block))


def assert_same(block: bytes) -> None:
    fast, standard = both(block)
    assert fast.items() == standard.items()
    assert [type(d) for d in fast.defects] == [type(d) for d in standard.defects]
    assert bool(fast.get_payload()) == bool(standard.get_payload())  # urllib3 checks this


API_SERVER_BLOCK = (
    b"Audit-Id: 3f0c2a9e-1111-2222-3333-444455556666\r\n"
    b"Cache-Control: no-cache, private\r\n"
    b"Content-Type: application/json\r\n"
    b"X-Kubernetes-Pf-Flowschema-Uid: 1b2c\r\n"
    b"Date: Fri, 04 Dec 2026 02:00:00 GMT\r\n"
    b"Content-Length: 1234\r\n\r\n"
)


@pytest.mark.parametrize(
    "block",
    [
        API_SERVER_BLOCK,
        b"\r\n",  # no headers
        b"",  # the connection closed
        b"A: 1\r\nA: 2\r\nb:3\r\n\r\n",  # repeated names, no blank after the colon
        b"Empty:\r\nBlank: \t \r\n\r\n",  # empty values
        b"Trailing: x  \r\n\r\n",  # trailing blanks are kept
        b"Latin: caf\xe9\r\n\r\n",  # iso-8859-1 bytes
        b"Lf: only\nNext: one\n\n",  # bare LF line endings
        b"Colons: a:b:c\r\n\r\n",
        b"Folded: one\r\n two\r\n\r\n",  # obs-fold: the email parser's business
        b"No colon here\r\nA: 1\r\n\r\n",
        b"Space : before colon\r\n\r\n",
        b": no name\r\n\r\n",
        b"Cr: a\rb\r\n\r\n",  # a bare CR the email parser splits on
        b"Cr2: a\r\r\nAfter: x\r\n\r\n",
        b"Vt: a\x0bb\r\n\r\n",
        b"Nel: a\x85b\r\n\r\n",
        b"From someone\r\nA: 1\r\n\r\n",
        b"Last: no newline",
    ],
)
def test_same_as_the_email_parser(block: bytes) -> None:
    assert_same(block)


def test_plain_api_server_headers_take_the_fast_path(mocker) -> None:  # type: ignore[no-untyped-def]
    slow = mocker.patch("ascendjob_controller.kube.response_headers._email_parse")
    fast, _ = both(API_SERVER_BLOCK)
    slow.assert_not_called()
    assert fast["content-length"] == "1234"
    assert fast.get_all("Audit-Id") == ["3f0c2a9e-1111-2222-3333-444455556666"]


_line_bytes = st.binary(max_size=30).filter(lambda b: b"\n" not in b)
_names = st.one_of(
    st.sampled_from([b"Content-Type", b"Content-Length", b"Audit-Id", b"Warning", b"X"]),
    _line_bytes,
)
_values = st.one_of(st.text(max_size=20).map(lambda t: t.encode("utf-8")), _line_bytes)
_lines = st.tuples(
    _names, st.sampled_from([b":", b": ", b":\t", b""]), _values, st.sampled_from([b"\r\n", b"\n"])
)


@settings(max_examples=400, deadline=None)
@given(st.lists(_lines, max_size=8), st.sampled_from([b"\r\n", b"\n", b""]))
def test_any_block_reads_as_the_standard_library_reads_it(
    lines: list[tuple[bytes, bytes, bytes, bytes]], end: bytes
) -> None:
    assert_same(b"".join(b"".join(parts) for parts in lines) + end)


class FakeSocket:
    def __init__(self, data: bytes) -> None:
        self._data = data

    def makefile(self, mode: str) -> io.BufferedReader:
        return io.BufferedReader(io.BytesIO(self._data))  # type: ignore[arg-type]


def read(cls: type[http.client.HTTPResponse], raw: bytes, method: str) -> dict[str, object]:
    response = cls(FakeSocket(raw), method=method)  # type: ignore[arg-type]
    response.begin()
    seen = {
        "status": response.status,
        "reason": response.reason,
        "version": response.version,
        "chunked": response.chunked,
        "length": response.length,
        "will_close": response.will_close,
        "headers": response.msg.items(),
    }
    seen["body"] = response.read()
    return seen


@pytest.mark.parametrize(
    ("raw", "method"),
    [
        (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", "GET"),
        (
            b"HTTP/1.1 201 Created\r\nContent-Type: text/json\r\nContent-Length: 2\r\n\r\n{}",
            "POST",
        ),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", "GET"),
        (
            b"HTTP/1.1 100 Continue\r\nX: 1\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx",
            "PUT",
        ),
        (b"HTTP/1.1 204 No Content\r\n\r\n", "DELETE"),
        (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", "GET"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", "HEAD"),
        (b"HTTP/1.0 200 OK\r\n\r\nuntil close", "GET"),
        (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", "GET"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\nrest", "GET"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\nrest", "GET"),
        (b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n", "GET"),
        (b"HTTP/1.1 200 OK\r\nFolded: a\r\n b\r\nContent-Length: 1\r\n\r\nx", "GET"),
    ],
)
def test_response_reads_as_http_client_reads_it(raw: bytes, method: str) -> None:
    assert read(HeadersResponse, raw, method) == read(http.client.HTTPResponse, raw, method)


def test_an_unknown_protocol_is_refused_alike() -> None:
    raw = b"HTTP/2.0 200 OK\r\n\r\n"
    with pytest.raises(http.client.UnknownProtocol):
        read(http.client.HTTPResponse, raw, "GET")
    with pytest.raises(http.client.UnknownProtocol):
        read(HeadersResponse, raw, "GET")


def test_pools_of_urllib3s_own_classes_are_switched_and_others_kept() -> None:
    plain = urllib3.HTTPConnectionPool("127.0.0.1", 1)
    tls = urllib3.HTTPSConnectionPool("127.0.0.1", 1)
    use_fast_headers(plain)
    use_fast_headers(tls)
    assert plain.ConnectionCls is HTTPConnection
    assert tls.ConnectionCls is HTTPSConnection
    assert HTTPSConnection.response_class is HeadersResponse

    class Custom(urllib3.connection.HTTPConnection):
        pass

    other = urllib3.HTTPConnectionPool("127.0.0.1", 1)
    other.ConnectionCls = Custom
    use_fast_headers(other)
    assert other.ConnectionCls is Custom

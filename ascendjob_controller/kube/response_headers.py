"""Response headers read without the `email` package, on the official client's urllib3 pool.

`http.client` hands every response's header block to `email.parser.Parser`, a general MIME
parser. Profiled under the peers benchmark, that parse was a tenth of the controller's CPU:
each of a job's ten requests answers with eight or so plain `Name: value` lines, and the
feed parser's line-by-line state machine costs more than the request's own JSON.

`HeadersResponse` is `http.client.HTTPResponse` with its header step replaced: well-formed
lines become an `HTTPMessage` directly, holding exactly what the email parser would store
(the compat32 policy: the name as sent, the value after the first colon with leading
blanks removed and the line ending cut). A block with anything unusual (a folded line, a
line without a colon, a name outside RFC 9110's visible characters) goes to the email parser
as before, so odd input keeps the standard library's behaviour, defects included.

The connection classes carry the response class into a urllib3 pool: `use_fast_headers`
sets them on a pool the transport owns. Status line, `100 Continue`, length, chunking and
keep-alive are decided as `http.client` decides them, reusing its own helpers.
"""

from __future__ import annotations

import email.parser
import http.client
import re
from typing import Any

import urllib3

#: The header block's lines as `http.client` reads them, with its limits (65,536 bytes a
#: line, 100 lines: LineTooLong and HTTPException beyond). Also the local cluster's request
#: reader.
read_header_lines = http.client._read_headers  # type: ignore[attr-defined]

_END_LINES = (b"\r\n", b"\n", b"")
#: One plain header line: a name of visible characters but ':' (what the email parser takes
#: as a name; RFC 9110 field names are a subset), a colon, blanks, and a value with none of
#: the characters the email parser takes as line breaks (it splits with `str.splitlines`).
_FIELD = re.compile(rb"([!-9;-~]+):[ \t]*([^\r\n\x0b\x0c\x1c-\x1e\x85]*)")


def parse_header_lines(lines: list[bytes]) -> http.client.HTTPMessage:
    """The header block (as `http.client` reads it, blank line included) as an HTTPMessage."""
    message = http.client.HTTPMessage()
    for raw in lines:
        if raw in _END_LINES:
            break
        field = _FIELD.fullmatch(raw, 0, len(raw) - _line_ending_length(raw))
        if field is None:
            return _email_parse(lines)
        name, value = field.groups()
        message.set_raw(name.decode("iso-8859-1"), value.decode("iso-8859-1"))
    return message


def _line_ending_length(raw: bytes) -> int:
    if raw.endswith(b"\r\n"):
        return 2
    return 1 if raw.endswith(b"\n") else 0  # the last line before the connection closed


def _email_parse(lines: list[bytes]) -> http.client.HTTPMessage:
    """What `http.client.parse_headers` makes of these lines (the rare, unusual block)."""
    text = b"".join(lines).decode("iso-8859-1")
    parsed: http.client.HTTPMessage = email.parser.Parser(_class=http.client.HTTPMessage).parsestr(
        text
    )
    return parsed


class HeadersResponse(http.client.HTTPResponse):
    """An HTTPResponse whose headers come from `parse_header_lines`."""

    def begin(self) -> None:
        if self.headers is not None:  # already begun
            return
        version, status, reason = self._skip_informational()
        self.code = self.status = status
        self.reason = reason.strip()
        self.version = _version_number(version)
        self.headers = self.msg = parse_header_lines(read_header_lines(self.fp))
        transfer = self.headers.get("transfer-encoding")
        self.chunked = bool(transfer) and transfer.lower() == "chunked"
        if self.chunked:
            self.chunk_left = None
        self.will_close = self._check_close()
        self.length = None if self.chunked else _content_length(self.headers)
        if status in (204, 304) or 100 <= status < 200 or self._method == "HEAD":
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True  # the body ends when the server closes

    def _skip_informational(self) -> tuple[str, int, str]:
        """The first status line after any `100 Continue` (whose headers are dropped)."""
        while True:
            version, status, reason = self._read_status()  # type: ignore[attr-defined]
            if status != 100:
                return version, status, reason
            read_header_lines(self.fp)


def _version_number(version: str) -> int:
    if version in ("HTTP/1.0", "HTTP/0.9"):
        return 10
    if version.startswith("HTTP/1."):
        return 11
    raise http.client.UnknownProtocol(version)


def _content_length(headers: http.client.HTTPMessage) -> int | None:
    value = headers.get("content-length")
    if not value:
        return None
    try:
        length = int(value)
    except ValueError:
        return None
    return length if length >= 0 else None


class HTTPConnection(urllib3.connection.HTTPConnection):
    """urllib3's plain connection, answering with `HeadersResponse`."""

    response_class = HeadersResponse


class HTTPSConnection(urllib3.connection.HTTPSConnection):
    """urllib3's TLS connection, answering with `HeadersResponse`."""

    response_class = HeadersResponse


def use_fast_headers(pool: Any) -> None:
    """Make the pool's new connections read headers with `HeadersResponse`.

    Only a pool of urllib3's own connection classes is changed: a pool that already uses a
    subclass (a proxy's, a test's) keeps it.
    """
    current = getattr(pool, "ConnectionCls", None)
    if current is urllib3.connection.HTTPSConnection:
        pool.ConnectionCls = HTTPSConnection
    elif current is urllib3.connection.HTTPConnection:
        pool.ConnectionCls = HTTPConnection


__all__ = [
    "HTTPConnection",
    "HTTPSConnection",
    "HeadersResponse",
    "parse_header_lines",
    "read_header_lines",
    "use_fast_headers",
]

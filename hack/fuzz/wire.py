"""Plain HTTP(S) to the API server: raw bodies out, JSON (or a status code) back.

The fuzzer must not go through the project's client or the official one: both would encode,
type or validate the body first. This is `http.client` over one keep-alive connection, with
the admin client certificate when the backend is the real control plane.
"""

from __future__ import annotations

import http.client
import json
import re
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

#: How deep a watched object may nest before `loads` clips it (Python's json module gives up
#: near the interpreter's recursion limit; the fuzz cases go to 5,000 levels).
SAFE_DEPTH = 400


@dataclass(frozen=True)
class Endpoint:
    """Where the API server is and how to reach it (None: plain HTTP, no authentication)."""

    url: str
    ssl_context: ssl.SSLContext | None = None

    @classmethod
    def for_cluster(cls, cluster: Any) -> Endpoint:
        creds = cluster.credentials()
        if creds is None:
            return cls(cluster.url)
        ctx = ssl.create_default_context(cafile=creds.ca_file)
        ctx.load_cert_chain(creds.cert_file, creds.key_file)
        return cls(cluster.url, ctx)

    def connect(self, timeout: float) -> http.client.HTTPConnection:
        parts = urlsplit(self.url)
        host, port = parts.hostname or "127.0.0.1", parts.port
        if parts.scheme == "https":
            return http.client.HTTPSConnection(
                host, port, timeout=timeout, context=self.ssl_context
            )
        return http.client.HTTPConnection(host, port, timeout=timeout)


class Wire:
    """One keep-alive connection; reconnects after any error so one bad case costs one case."""

    def __init__(self, endpoint: Endpoint, timeout: float = 30.0) -> None:
        self.endpoint = endpoint
        self.timeout = timeout
        self._conn: http.client.HTTPConnection | None = None

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """(status, raw reply); status 0 when the connection failed."""
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = "application/json"
        for attempt in (1, 2):
            if self._conn is None:
                self._conn = self.endpoint.connect(self.timeout)
            try:
                self._conn.request(method, path, body=body, headers=headers)
                resp = self._conn.getresponse()
                return resp.status, resp.read()
            except (OSError, http.client.HTTPException):
                self.close()
                if attempt == 2 or body is not None:
                    # A body may have been taken: never send a create twice.
                    return 0, b""
        return 0, b""

    def json(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        data = json.dumps(body).encode() if body is not None else None
        code, raw = self.request(method, path, data)
        return code, loads(raw) if raw else None

    def must(self, method: str, path: str, body: Any = None) -> Any:
        code, out = self.json(method, path, body)
        if not 200 <= code < 300:
            raise RuntimeError(f"{method} {path} -> {code}: {str(out)[:300]}")
        return out

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def loads(raw: bytes | str) -> Any:
    """json.loads, clipping anything nested deeper than SAFE_DEPTH to null.

    A watch of the fuzz namespace sees the deep cases as the controller does; the observer
    needs their names and status, not their depth, and must not die on them.
    """
    try:
        return json.loads(raw)
    except RecursionError:
        text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
        return json.loads(clip_depth(text, SAFE_DEPTH))


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]]|[^"{}\[\]]+', re.S)


def clip_depth(text: str, limit: int) -> str:
    """The JSON text with every value that opens deeper than `limit` replaced by null."""
    out: list[str] = []
    depth = 0
    skipping_from = 0  # the depth at which the clipped value opened (0: not clipping)
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token in "{[":
            depth += 1
            if depth > limit and not skipping_from:
                skipping_from = depth
                out.append("null")
            if not skipping_from:
                out.append(token)
        elif token in "}]":
            if not skipping_from:
                out.append(token)
            if skipping_from == depth:
                skipping_from = 0
            depth -= 1
        elif not skipping_from:
            out.append(token)
    return "".join(out)


def watch_lines(
    endpoint: Endpoint, path: str, timeout: float
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(type, object) for each event of one watch request, until the server ends it."""
    conn = endpoint.connect(timeout)
    try:
        conn.request("GET", path, headers={"Accept": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            body = resp.read()[:300]
            yield "HTTP_ERROR", {"code": resp.status, "body": body.decode(errors="replace")}
            return
        while True:
            line = resp.readline()
            if not line:
                return
            if line.strip():
                event = loads(line)
                yield str(event.get("type")), event.get("object") or {}
    finally:
        conn.close()

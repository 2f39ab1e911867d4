"""The driver's own HTTP client of the API server, straight to it (no proxy).

On the local backend the fault hooks fail the driver's requests too (they cannot tell clients
apart), so every call retries 429, 5xx and connection errors until its deadline, as a careful
user's script would. A create that gets 409 after a retry is taken as done: an earlier attempt
landed. On the real backend the driver goes to kube-apiserver over HTTPS with the admin
certificate (`context`), past the fault proxy, and the retries are rarely needed.
"""

from __future__ import annotations

import http.client
import json
import ssl
import time
from typing import Any
from urllib.parse import urlsplit

RETRYABLE = frozenset({429, 500, 502, 503, 504})


class ApiError(RuntimeError):
    pass


class Api:
    """One keep-alive connection, reopened after any error; not shared between threads."""

    def __init__(
        self, url: str, timeout: float = 30.0, context: ssl.SSLContext | None = None
    ) -> None:
        parts = urlsplit(url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = int(parts.port or (443 if parts.scheme == "https" else 80))
        self.timeout = timeout
        https = parts.scheme == "https"
        self.context = (context or ssl.create_default_context()) if https else None
        self._conn: http.client.HTTPConnection | None = None
        self.retries = 0

    def _once(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        if self._conn is None:
            if self.context is not None:
                self._conn = http.client.HTTPSConnection(
                    self.host, self.port, timeout=self.timeout, context=self.context
                )
            else:
                self._conn = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
        data = None if body is None else json.dumps(body).encode()
        headers = {"Accept": "application/json", "Content-Type": "application/json"}
        try:
            self._conn.request(method, path, body=data, headers=headers)
            resp = self._conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        return resp.status, json.loads(raw) if raw else None

    def call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        """The first answer that is neither retryable nor a connection error."""
        deadline = time.monotonic() + self.timeout
        attempt = 0
        while True:
            attempt += 1
            try:
                code, out = self._once(method, path, body)
                if code not in RETRYABLE:
                    if code == 409 and method == "POST" and attempt > 1:
                        return 201, out
                    return code, out
                error = f"{code}"
            except (OSError, http.client.HTTPException) as err:
                error = repr(err)
            if time.monotonic() > deadline:
                raise ApiError(f"{method} {path}: still failing after {attempt} tries: {error}")
            self.retries += 1
            time.sleep(min(0.05 * attempt, 0.5))

    def must(self, method: str, path: str, body: Any = None) -> Any:
        code, out = self.call(method, path, body)
        if code >= 300:
            raise ApiError(f"{method} {path} -> {code}: {str(out)[:300]}")
        return out

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

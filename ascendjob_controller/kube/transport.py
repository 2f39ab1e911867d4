"""HTTP to the API server on the official client's connection pool and credentials, directly.

The kubernetes package's `param_serialize` and `call_api` walk every request body through
`sanitize_for_serialization`, re-encode it with `json`, parse the URL again and wrap each
response twice; profiled under the peers benchmark, that layer and urllib3's PoolManager in
front of it were a quarter of the controller's CPU. This module keeps what matters from the
official client: its Configuration (TLS, client certificates, proxy) and its urllib3 pool,
and its auth settings, read per request so a rotating service-account token or an exec
plugin's refresh hook still applies. It sends on the host's connection pool itself, whose
connections read response headers without the email parser (`response_headers`).

A request whose answer is read whole (everything but watches) goes one level lower still:
it takes a connection from that pool and talks `http.client` on it (`_exchange`). urllib3's
`urlopen` wraps each exchange in retry, timeout and header-dict objects and a second
response object, which we never use (we retry ourselves, with `retries=False`): on the
local cluster a GET cost the controller 190 us of CPU through it against 108 us with
`http.client` alone. The connection is still urllib3's, so connecting (TLS, client
certificates, keep-alive socket options, its connect errors) is unchanged, and it goes back
to the pool for watches and the next request. The request itself is written in one buffer
(`request_head`), the bytes `http.client` would send, without its per-header calls.
"""

from __future__ import annotations

import http.client
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlencode, urlparse

import kubernetes
import urllib3

from ascendjob_controller.kube import jsoncodec
from ascendjob_controller.kube.request_head import host_header, request_bytes
from ascendjob_controller.kube.response_headers import use_fast_headers

Timeout = float | tuple[float, float]
_T = TypeVar("_T")


@dataclass(frozen=True)
class Answer:
    """A response read whole: what `KubeClient` reads of one (status, body, headers)."""

    status: int
    data: bytes
    headers: http.client.HTTPMessage

    def read(self) -> bytes:
        return self.data


class Transport:
    """One per ApiClient; thread-safe, shared by every KubeClient made from that client."""

    def __init__(self, api: kubernetes.client.ApiClient) -> None:
        self._api = api
        cfg = api.configuration
        self._base = str(cfg.host).rstrip("/")
        self._prefix = urlparse(self._base).path.rstrip("/")
        self._manager = api.rest_client.pool_manager
        # A proxy rewrites requests per URL: let its manager do it. Else use the host's pool.
        self._direct = not getattr(cfg, "proxy", None)
        self._lock = threading.Lock()
        self._pool: Any = None

    def send(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]] | None,
        body: Any,
        headers: dict[str, str],
        timeout: Timeout,
        stream: bool,
    ) -> Any:
        """urllib3's response for a stream, else an `Answer` read whole. Raises urllib3's errors
        as they are (and, for a response read whole, the socket's and `http.client`'s)."""
        target = path + ("?" + urlencode(query) if query else "")
        all_headers = {**self._api.default_headers, **headers}
        self._api.update_params_for_auth(all_headers, None, ["BearerToken"], path, method, body)
        data = _encode(body)
        if self._direct and not stream:
            return self._exchange(method, self._prefix + target, data, all_headers, timeout)
        options: dict[str, Any] = {
            "body": data,
            "headers": all_headers,
            "timeout": _timeout(timeout),
            "retries": False,
            "redirect": False,
            "preload_content": not stream,
        }
        if not self._direct:
            return self._manager.urlopen(method, self._base + target, **options)
        return self._on_host_pool(
            lambda pool: pool.urlopen(
                method,
                self._prefix + target,
                assert_same_host=False,
                release_conn=not stream,
                **options,
            )
        )

    def _exchange(
        self, method: str, url: str, body: bytes | None, headers: dict[str, str], timeout: Timeout
    ) -> Answer:
        """One request and its whole answer with `http.client`, on a connection of the pool."""
        pool, conn = self._on_host_pool(lambda pool: (pool, pool._get_conn()))
        connect_timeout, read_timeout = timeout if isinstance(timeout, tuple) else (timeout,) * 2
        reusable = False
        try:
            if conn.sock is None:
                conn.timeout = connect_timeout
                conn.connect()  # urllib3's: TLS, socket options, NewConnectionError
            if conn.sock.gettimeout() != read_timeout:
                # settimeout is a syscall that lets go of the GIL: under load another thread
                # takes it, and this one waits to get it back. Most requests reuse a
                # connection whose timeout is already this one.
                conn.sock.settimeout(read_timeout)
            response = self._ask(conn, method, url, body, headers)
            answer = Answer(response.status, response.read(), response.headers)
            reusable = not response.will_close
            return answer
        finally:
            if not reusable:
                conn.close()  # a later request on it dials afresh
            pool._put_conn(conn)

    def _ask(
        self, conn: Any, method: str, url: str, body: bytes | None, headers: dict[str, str]
    ) -> http.client.HTTPResponse:
        """Send the request on `conn` and read its answer's head.

        The request goes out in one `sendall` when `request_bytes` can build it; else, and
        for what it declines, through `http.client` as before.
        """
        host = host_header(conn.host, conn.port, conn.default_port)
        data = request_bytes(method, url, host, headers, body)
        if data is None:
            http.client.HTTPConnection.request(conn, method, url, body, headers)
            return http.client.HTTPConnection.getresponse(conn)
        conn.sock.sendall(data)
        response: http.client.HTTPResponse = conn.response_class(conn.sock, method=method)
        response.begin()
        return response

    def _on_host_pool(self, use: Callable[[Any], _T]) -> _T:
        """`use(pool)` on the host's pool; once more on a new pool if that one was closed.

        `drop_idle_connections` clears the manager, which closes the pool we hold: a closed
        pool refuses before anything is sent, so taking the manager's new pool is safe.
        """
        for attempt in (1, 2):
            pool = self._host_pool()
            try:
                return use(pool)
            except urllib3.exceptions.ClosedPoolError:
                self._forget(pool)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def clear(self) -> None:
        """Close every idle pooled connection (the next requests dial afresh)."""
        self._manager.clear()
        with self._lock:
            self._pool = None

    def _host_pool(self) -> Any:
        with self._lock:
            if self._pool is None:
                self._pool = self._manager.connection_from_url(self._base)
                use_fast_headers(self._pool)
            return self._pool

    def _forget(self, pool: Any) -> None:
        with self._lock:
            if self._pool is pool:
                self._pool = None


def _encode(body: Any) -> bytes | None:
    if body is None:
        return None
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):  # already encoded by the caller (server-side apply)
        return body.encode()
    return jsoncodec.dumps(body)


def _timeout(value: Timeout) -> urllib3.Timeout:
    if isinstance(value, tuple):
        return urllib3.Timeout(connect=value[0], read=value[1])
    return urllib3.Timeout(total=value)


__all__ = ["Answer", "Timeout", "Transport"]

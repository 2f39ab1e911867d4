"""`/metrics`, `/healthz` and `/readyz`, served from small daemon threads (design section 5).

The probes answer the way controller-runtime (and kube-apiserver) do, so operators read them
the same way: `200 ok` when every named check passes; otherwise `500` and one line per check,
`[+]name ok` or `[-]name failed: reason withheld`, then `healthz check failed`. `?verbose`
lists the checks on success too, `?exclude=name` skips one, and `/readyz/<name>` runs one.

Each server runs in its own daemon thread and answers each request in a further daemon thread
(`ThreadingHTTPServer`), so a slow scrape or a stuck client never holds up a reconcile, and a
check is a plain callable that only reads state the controller keeps anyway.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.exposition import choose_encoder

from ascendjob_controller import metrics
from ascendjob_controller.config import split_bind_address
from ascendjob_controller.logging import get_logger

Check = Callable[[], bool]

log = get_logger(__name__)

PING = "ping"
SHUTDOWN = "shutdown"


class HealthChecks:
    """Named liveness and readiness checks, in the order they were added.

    Both lists start with `ping` (the process answers HTTP at all). Readiness also has
    `shutdown`, which `begin_shutdown()` turns false: on SIGTERM the pod leaves its Service
    before the workers stop, as controller-runtime does.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._health: dict[str, Check] = {PING: _ping}
        self._ready: dict[str, Check] = {PING: _ping, SHUTDOWN: self._not_stopping}

    def add_health(self, name: str, check: Check) -> None:
        with self._lock:
            self._health[name] = check

    def add_ready(self, name: str, check: Check) -> None:
        with self._lock:
            self._ready[name] = check

    def begin_shutdown(self) -> None:
        self._stopping.set()

    def health(self) -> list[tuple[str, Check]]:
        with self._lock:
            return list(self._health.items())

    def ready(self) -> list[tuple[str, Check]]:
        with self._lock:
            return list(self._ready.items())

    def _not_stopping(self) -> bool:
        return not self._stopping.is_set()


def _ping() -> bool:
    return True


def _passes(check: Check) -> bool:
    """A check that raises has failed: a probe must answer, not crash the handler."""
    try:
        return bool(check())
    except Exception:  # any error in a check means "not healthy"
        log.warning("health_check_raised", exc_info=True)
        return False


@dataclass(frozen=True)
class ProbeResult:
    status: int
    body: str


def evaluate(
    endpoint: str,
    checks: Iterable[tuple[str, Check]],
    *,
    verbose: bool = False,
    exclude: Iterable[str] = (),
) -> ProbeResult:
    """Run the checks and render the answer (`endpoint` is `healthz` or `readyz`)."""
    skipped = set(exclude)
    results = [(name, _passes(check)) for name, check in checks if name not in skipped]
    failed = any(not ok for _, ok in results)
    if not failed and not verbose:
        return ProbeResult(200, "ok")
    lines = [
        f"[+]{name} ok" if ok else f"[-]{name} failed: reason withheld" for name, ok in results
    ]
    lines.extend(f"[+]{name} excluded: ok" for name in sorted(skipped))
    lines.append(f"{endpoint} check {'failed' if failed else 'passed'}")
    return ProbeResult(500 if failed else 200, "\n".join(lines) + "\n")


def register_runtime_collectors(registry: CollectorRegistry = metrics.REGISTRY) -> None:
    """Add process_*, python_info and python_gc_* to our registry, once however often called.

    The collectors are registered on our registry, not prometheus_client's default one,
    so `/metrics` stays a single registry as the metrics module promises.
    """
    present = {family.name for family in registry.collect()}
    markers: tuple[tuple[str, Callable[..., object]], ...] = (
        ("process_cpu_seconds", ProcessCollector),
        ("python_info", PlatformCollector),
        ("python_gc_objects_collected", GCCollector),
    )
    for marker, make in markers:
        if marker in present:
            continue
        # A registry with auto_describe also refuses duplicates itself; either way, once.
        with contextlib.suppress(ValueError):
            make(registry=registry)


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)
        route = self.server.route
        try:
            status, content_type, body = self._authorized_route(route, url.path, query)
        except Exception:  # a broken route must answer 500, not drop the socket
            log.exception("http_handler_failed", path=url.path)
            status, content_type, body = 500, "text/plain; charset=utf-8", b"internal error\n"
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        self.wfile.write(body)

    def _authorized_route(
        self, route: Route, path: str, query: dict[str, list[str]]
    ) -> tuple[int, str, bytes]:
        authorize = self.server.authorize
        if authorize is not None:
            status, message = authorize(self.headers.get("Authorization"))
            if status != 200:
                return status, "text/plain; charset=utf-8", f"{message}\n".encode()
        return route(path, query, self.headers.get("Accept", ""))

    def log_message(self, format: str, *args: Any) -> None:
        pass  # probes every few seconds would drown the log; errors are logged above


Route = Callable[[str, dict[str, list[str]], str], tuple[int, str, bytes]]
#: Authorization header -> (status, message); 200 lets the request through.
Authorize = Callable[[str | None], tuple[int, str]]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        route: Route,
        tls: tuple[str, str] | None = None,
        authorize: Authorize | None = None,
    ) -> None:
        self.route = route
        self.authorize = authorize
        self._tls: ssl.SSLContext | None = None
        if tls is not None:
            self._tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            self._tls.minimum_version = ssl.TLSVersion.TLSv1_2
            self._tls.load_cert_chain(*tls)
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, addr = super().get_request()
        if self._tls is not None:
            # Handshake in the request's own thread (on first read), never in the accept loop:
            # a client that connects and says nothing must not block every other scrape.
            sock = self._tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, addr


class EndpointServer:
    """One HTTP server in a daemon thread; `stop()` closes it and waits for the thread."""

    def __init__(
        self,
        name: str,
        address: tuple[str, int],
        route: Route,
        tls: tuple[str, str] | None = None,
        authorize: Authorize | None = None,
    ) -> None:
        self.name = name
        self._scheme = "https" if tls else "http"
        self._server = _Server(address, route, tls, authorize)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.2},
            name=f"http-{name}",
            daemon=True,
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        host = str(self._server.server_address[0])
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1" if self._server.address_family == socket.AF_INET else "::1"
        if ":" in host:
            host = f"[{host}]"
        return f"{self._scheme}://{host}:{self.port}"

    def start(self) -> EndpointServer:
        self._thread.start()
        log.info("http_server_started", server=self.name, url=self.url)
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def metrics_route(registry: CollectorRegistry = metrics.REGISTRY) -> Route:
    def route(path: str, query: dict[str, list[str]], accept: str) -> tuple[int, str, bytes]:
        if path != "/metrics":
            return 404, "text/plain; charset=utf-8", b"404 page not found\n"
        encoder, content_type = choose_encoder(accept)
        return 200, content_type, encoder(registry)

    return route


def probes_route(checks: HealthChecks) -> Route:
    def route(path: str, query: dict[str, list[str]], accept: str) -> tuple[int, str, bytes]:
        endpoint, _, only = path.strip("/").partition("/")
        if endpoint not in ("healthz", "readyz"):
            return 404, "text/plain; charset=utf-8", b"404 page not found\n"
        named = checks.health() if endpoint == "healthz" else checks.ready()
        if only:
            named = [(name, check) for name, check in named if name == only]
            if not named:
                return 404, "text/plain; charset=utf-8", b"404 page not found\n"
        exclude = [name for value in query.get("exclude", []) for name in value.split(",")]
        result = evaluate(endpoint, named, verbose="verbose" in query, exclude=exclude)
        return result.status, "text/plain; charset=utf-8", result.body.encode()

    return route


def serve_metrics(
    address: str,
    registry: CollectorRegistry = metrics.REGISTRY,
    tls: tuple[str, str] | None = None,
    authorize: Authorize | None = None,
) -> EndpointServer | None:
    """Serve `/metrics` on `address` (`host:port`, `:port`; `0` disables and returns None).

    With `tls` (cert, key) it is HTTPS; with `authorize` every request must pass it first
    (see `secure_metrics`).
    """
    bind = split_bind_address(address)
    if bind is None:
        return None
    if registry is metrics.REGISTRY:
        register_runtime_collectors(registry)
    return EndpointServer("metrics", bind, metrics_route(registry), tls, authorize).start()


def serve_probes(address: str, checks: HealthChecks) -> EndpointServer | None:
    """Serve `/healthz` and `/readyz` on `address` (`0` disables and returns None)."""
    bind = split_bind_address(address)
    if bind is None:
        return None
    return EndpointServer("probes", bind, probes_route(checks)).start()


def start_servers(
    metrics_address: str,
    probe_address: str,
    checks: HealthChecks,
    metrics_tls: tuple[str, str] | None = None,
    metrics_authorize: Authorize | None = None,
) -> list[EndpointServer]:
    """Both servers of a controller process; the ones whose address is `0` are left out.

    If the second cannot bind, the first is stopped again before the error propagates.
    """
    servers: list[EndpointServer] = []
    try:
        for start in (
            lambda: serve_metrics(metrics_address, tls=metrics_tls, authorize=metrics_authorize),
            lambda: serve_probes(probe_address, checks),
        ):
            server = start()
            if server is not None:
                servers.append(server)
    except OSError:
        for server in servers:
            server.stop()
        raise
    return servers

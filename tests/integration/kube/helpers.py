"""Shared helpers for the kube/ integration tests (real HTTP against the local cluster)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from ascendjob_controller import metrics
from ascendjob_controller.kube.client import KubeClient
from tests.namespaces import create_namespace


def make_client(cluster: Any, **kw: Any) -> KubeClient:
    kw.setdefault("qps", 1000.0)
    kw.setdefault("burst", 1000)
    return KubeClient.from_kubeconfig(str(cluster.kubeconfig_path), **kw)


def fresh_namespace(client: KubeClient) -> str:
    name = f"t-{uuid.uuid4().hex[:8]}"
    return create_namespace(client, name)


def configmap(name: str, **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": dict(labels)}, "data": {"k": "v"}}


def wait_for(cond: Callable[[], bool], timeout: float = 60.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while time.monotonic() < deadline:
        if cond():
            return
        pause.wait(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def rest_count(code: str, method: str, host: str) -> float:
    value = metrics.REGISTRY.get_sample_value(
        "rest_client_requests_total", {"code": code, "method": method, "host": host}
    )
    return value or 0.0


def rest_total(method: str, host: str) -> float:
    """rest_client_requests_total for `method` and `host`, over every code (errors included)."""
    total = 0.0
    for family in metrics.REGISTRY.collect():
        for sample in family.samples:
            labels = sample.labels
            if (
                sample.name == "rest_client_requests_total"
                and labels.get("method") == method
                and labels.get("host") == host
            ):
                total += sample.value
    return total


class BlackholeProxy:
    """A TCP proxy to the API server that can turn its open connections into dead ones.

    `blackhole()` makes every connection open at that moment silently stop forwarding bytes in
    both directions, without closing: exactly a half-dead TCP stream (a NAT that forgot us, a
    node that vanished). Connections opened later work normally.
    """

    def __init__(self, upstream_port: int) -> None:
        import socket

        self._upstream = ("127.0.0.1", upstream_port)
        self._server = socket.socket()
        self._server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(64)
        self.port = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._conns: list[tuple[Any, Any, threading.Event]] = []
        self._pumps_ended: dict[threading.Event, int] = {}  # per connection: pumps done
        self._pumps_lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _accept(self) -> None:
        import socket

        while not self._stopping.is_set():
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            upstream = socket.create_connection(self._upstream)
            dead = threading.Event()
            with self._lock:
                self._conns.append((client, upstream, dead))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst, dead), daemon=True).start()

    def _pump(self, src: Any, dst: Any, dead: threading.Event) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if dead.is_set():
                    continue  # swallow: the peer never hears of it
                dst.sendall(data)
        except OSError:
            pass
        finally:
            if not dead.is_set():
                self._end_pump(src, dst, dead)

    def _end_pump(self, src: Any, dst: Any, dead: threading.Event) -> None:
        """One direction ended: shut both sockets down (waking the other pump and telling both
        peers), and let only the second pump close them. A close() by the first would free the
        descriptor for the next accepted connection while the other pump may still read it,
        and requests on the new connection would be lost (the chaos session measured 45 of
        355 hung under churn)."""
        how = self._shutdown_how(dead)
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(how)
        with self._pumps_lock:
            ended = self._pumps_ended.pop(dead, 0) + 1
            if ended < 2:
                self._pumps_ended[dead] = ended
                return
        self._connection_closed(dead)
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.close()

    def _shutdown_how(self, dead: threading.Event) -> int:
        """How an ending pump shuts its connection down (a subclass may send RST instead)."""
        import socket

        return socket.SHUT_RDWR

    def _connection_closed(self, dead: threading.Event) -> None:
        """Hook: both pumps of the connection ended and its sockets are about to close."""

    def blackhole(self) -> int:
        with self._lock:
            conns, self._conns = self._conns, []
        for _, _, dead in conns:
            dead.set()
        self._dead = getattr(self, "_dead", []) + conns
        return len(conns)

    def reset(self) -> int:
        """Cut every open connection abruptly, mid-stream (the client sees a broken stream)."""
        with self._lock:
            conns, self._conns = self._conns, []
        for client, upstream, _ in conns:
            for sock in (client, upstream):
                # shutdown() first: a bare close() would not wake the pump blocked in recv(),
                # and the peer would never see the connection end.
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()
        return len(conns)

    def close(self) -> None:
        self._stopping.set()
        self._server.close()
        with self._lock:
            conns = self._conns + getattr(self, "_dead", [])
        for client, upstream, _ in conns:
            for sock in (client, upstream):
                with contextlib.suppress(OSError):
                    sock.close()


def proxied_client(proxy: BlackholeProxy, cluster: Any, **kw: Any) -> KubeClient:
    """A client of `cluster` whose every connection goes through `proxy`.

    The proxy forwards bytes, so TLS (a real kube-apiserver) passes through it untouched: the
    client keeps the cluster's CA and credentials, and only the address changes (the serving
    certificate is for 127.0.0.1 either way).
    """
    from urllib.parse import urlsplit

    from kubernetes import client as k8s
    from kubernetes import config as k8s_config

    cfg = k8s.Configuration()
    k8s_config.load_kube_config(config_file=str(cluster.kubeconfig_path), client_configuration=cfg)
    cfg.host = f"{urlsplit(cfg.host).scheme}://127.0.0.1:{proxy.port}"
    cfg.retries = False
    options = {"qps": 1000, "burst": 1000, "backoff_base": 0.01, **kw}
    return KubeClient(k8s.ApiClient(cfg), **options)

"""hack/peers/tlsbridge.py: plain TCP in, TLS with a client certificate out, bytes unchanged.

A real TLS server (the PKI the real cluster uses, from openssl) that demands a client
certificate stands in for kube-apiserver; the bridge runs as `bench_peers --backend real`
runs it, in its own process.
"""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ascendjob_controller.localcluster.realcluster import make_pki
from hack.peers.tlsbridge import Bridge

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pki")
    make_pki(path)
    return path


class EchoServer:
    """Answers each connection with `<client CN>:` then echoes every byte back."""

    def __init__(self, pki: Path) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=pki / "ca.crt")
        self.context.load_cert_chain(pki / "apiserver.crt", pki / "apiserver.key")
        self.context.verify_mode = ssl.CERT_REQUIRED
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with self.context.wrap_socket(conn, server_side=True) as tls:
                subject = dict(pair[0] for pair in tls.getpeercert()["subject"])
                tls.sendall(f"{subject['commonName']}:".encode())
                while data := tls.recv(65536):
                    tls.sendall(data)
        except (OSError, ssl.SSLError):
            pass

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def echo(pki: Path) -> Iterator[EchoServer]:
    server = EchoServer(pki)
    yield server
    server.close()


def start_bridge(pki: Path, upstream: str) -> tuple[subprocess.Popen[str], int]:
    args = [sys.executable, "-m", "hack.peers.tlsbridge", "--upstream", upstream]
    args += ["--ca", str(pki / "ca.crt")]
    args += ["--cert", str(pki / "admin.crt"), "--key", str(pki / "admin.key")]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().strip()
    assert line.startswith("ready http://127.0.0.1:"), line
    return proc, int(line.rsplit(":", 1)[1])


def read_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            break
        data += chunk
    return data


def test_bytes_pass_both_ways_unchanged_with_our_client_certificate(
    pki: Path, echo: EchoServer
) -> None:
    proc, port = start_bridge(pki, f"https://127.0.0.1:{echo.port}")
    try:
        payload = bytes(range(256)) * 1024  # 256 KiB, more than one read's worth
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            assert read_exactly(sock, len(b"admin:")) == b"admin:"
            sock.sendall(payload)
            assert read_exactly(sock, len(payload)) == payload
    finally:
        proc.terminate()
        proc.wait(10)


def test_connections_are_independent(pki: Path, echo: EchoServer) -> None:
    proc, port = start_bridge(pki, f"https://127.0.0.1:{echo.port}")
    try:
        socks = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(3)]
        for i, sock in enumerate(socks):
            assert read_exactly(sock, 6) == b"admin:"
            sock.sendall(f"conn-{i}".encode())
        for i, sock in enumerate(socks):
            assert read_exactly(sock, 6) == f"conn-{i}".encode()
            sock.close()
    finally:
        proc.terminate()
        proc.wait(10)


def test_an_unreachable_upstream_closes_the_client_connection(pki: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as unused:
        port = unused.getsockname()[1]  # closed again below: nothing listens there
    proc, bridge_port = start_bridge(pki, f"https://127.0.0.1:{port}")
    try:
        with socket.create_connection(("127.0.0.1", bridge_port), timeout=10) as sock:
            assert sock.recv(1) == b""  # the end of the stream, not a hang
        assert proc.poll() is None  # and the bridge goes on serving
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.parametrize("upstream", ["http://127.0.0.1:6443", "https://"])
def test_only_an_https_upstream_is_taken(upstream: str) -> None:
    with pytest.raises(ValueError, match="https URL"):
        Bridge(upstream, ssl.create_default_context())

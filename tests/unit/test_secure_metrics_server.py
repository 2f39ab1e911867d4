"""`/metrics` over HTTPS with an authorizer in front (the plumbing of --metrics-secure).

The TokenReview/SubjectAccessReview decisions need a real authenticator and run on the real
lane (tests/integration/controller/test_secure_metrics.py); here the authorizer is a plain
function and the TLS is real.
"""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry, Counter

from ascendjob_controller import health
from ascendjob_controller.secure_metrics import self_signed
from tests import https


def allow_good(header: str | None) -> tuple[int, str]:
    if header is None:
        return 401, "Unauthorized"
    return (200, "OK") if header == "Bearer good" else (403, "Forbidden")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[health.EndpointServer, ssl.SSLContext]]:
    registry = CollectorRegistry()
    Counter("probe_total", "a sample", registry=registry).inc()
    cert, key = self_signed(tmp_path / "tls")
    srv = health.serve_metrics("127.0.0.1:0", registry, (str(cert), str(key)), allow_good)
    assert srv is not None
    context = ssl.create_default_context(cafile=str(cert))  # verifies the SAN 127.0.0.1
    yield srv, context
    srv.stop()


def test_https_with_the_authorizer_in_front(
    server: tuple[health.EndpointServer, ssl.SSLContext],
) -> None:
    srv, context = server
    assert srv.url.startswith("https://127.0.0.1:")
    assert https.get(srv.url + "/metrics", context) == (401, "Unauthorized\n")
    assert https.get(srv.url + "/metrics", context, "bad") == (403, "Forbidden\n")
    status, body = https.get(srv.url + "/metrics", context, "good")
    assert status == 200 and "probe_total 1.0" in body


def test_plain_http_gets_no_metrics(server: tuple[health.EndpointServer, ssl.SSLContext]) -> None:
    srv, _ = server
    with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
        urllib.request.urlopen(srv.url.replace("https", "http") + "/metrics", timeout=5).read()


def test_a_silent_client_does_not_block_other_scrapes(
    server: tuple[health.EndpointServer, ssl.SSLContext],
) -> None:
    import socket

    srv, context = server
    with socket.create_connection(("127.0.0.1", srv.port)):  # connects, never says hello
        assert https.get(srv.url + "/metrics", context, "good")[0] == 200


def test_the_self_signed_pair_lives_only_while_the_server_loads_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`run --metrics-secure` left a directory with a private key under /tmp at every start."""
    import tempfile
    from types import SimpleNamespace

    from ascendjob_controller import controller

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    config = SimpleNamespace(metrics_secure=True, metrics_cert_dir=None)
    with controller._metrics_security(config, client=None) as (tls, authorize):  # type: ignore[arg-type]
        assert tls is not None and authorize is not None
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(*tls)  # what the metrics server does when it starts
        assert [p.name[:18] for p in tmp_path.iterdir()] == ["ascendjob-metrics-"]
    assert not Path(tls[0]).exists() and not Path(tls[1]).exists()
    assert list(tmp_path.iterdir()) == []


def test_plain_metrics_need_no_certificate() -> None:
    from types import SimpleNamespace

    from ascendjob_controller import controller

    with controller._metrics_security(SimpleNamespace(metrics_secure=False), None) as pair:  # type: ignore[arg-type]
        assert pair == (None, None)

"""--metrics-secure against a real authenticator and authorizer: 401, 403, 200.

The controller's reviews run as its own ServiceAccount (the ClusterRole of manifests/ must
allow tokenreviews and subjectaccessreviews); the callers are ServiceAccounts with and without
the ascendjob-controller-metrics-reader ClusterRole.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter

from ascendjob_controller import health
from ascendjob_controller.kube.client import KubeClient
from ascendjob_controller.secure_metrics import Authorizer, self_signed
from tests import https, identity

pytestmark = [
    pytest.mark.integration,
    pytest.mark.real_only("the local cluster has no TokenReview or SubjectAccessReview"),
]
READER = Path(__file__).resolve().parents[3] / "manifests/rbac/metrics_reader_role.yaml"


@pytest.fixture(scope="module")
def metrics_url(
    bare_cluster: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, ssl.SSLContext]]:
    scratch = tmp_path_factory.mktemp("secure")
    client = KubeClient.from_kubeconfig(str(identity.controller_kubeconfig(bare_cluster, scratch)))
    registry = CollectorRegistry()
    Counter("scraped_total", "a sample", registry=registry).inc()
    cert, key = self_signed(scratch / "tls")
    server = health.serve_metrics(
        "127.0.0.1:0", registry, (str(cert), str(key)), Authorizer(client, ttl=0.0)
    )
    assert server is not None
    yield server.url + "/metrics", ssl.create_default_context(cafile=str(cert))
    server.stop()


def token_of(cluster: Any, name: str, *, reader: bool) -> str:
    cluster.kubectl("create", "serviceaccount", name, "-n", "default")
    if reader:
        cluster.kubectl("apply", "-f", str(READER))
        cluster.kubectl(
            "create", "clusterrolebinding", f"{name}-metrics",
            "--clusterrole=ascendjob-controller-metrics-reader",
            f"--serviceaccount=default:{name}",
        )  # fmt: skip
    return str(cluster.kubectl("create", "token", name, "-n", "default").stdout.strip())


def test_no_token_is_401(metrics_url: tuple[str, ssl.SSLContext]) -> None:
    assert https.get(*metrics_url, None)[0] == 401
    assert https.get(*metrics_url, "not-a-token")[0] == 401


def test_a_service_account_without_the_role_is_403(
    bare_cluster: Any, metrics_url: tuple[str, ssl.SSLContext]
) -> None:
    status, body = https.get(*metrics_url, token_of(bare_cluster, "nobody", reader=False))
    assert status == 403
    assert "system:serviceaccount:default:nobody" in body


def test_the_metrics_reader_gets_metrics(
    bare_cluster: Any, metrics_url: tuple[str, ssl.SSLContext]
) -> None:
    status, body = https.get(*metrics_url, token_of(bare_cluster, "scraper", reader=True))
    assert status == 200
    assert "scraped_total 1.0" in body

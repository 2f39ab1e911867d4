"""Client configuration: kubeconfig, in-cluster service account, and the `auto` choice."""

from __future__ import annotations

from pathlib import Path

import pytest

from ascendjob_controller.kube.client import ASCENDJOBS, NAMESPACES, PODS, KubeClient

KUBECONFIG = """
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:6553"}
users:
- name: u
  user: {token: kubeconfig-token}
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
"""


def test_resource_paths() -> None:
    assert PODS.api_path("ns") == "/api/v1/namespaces/ns/pods"
    assert PODS.api_path(None) == "/api/v1/pods"
    assert PODS.api_path("ns", "p", "status") == "/api/v1/namespaces/ns/pods/p/status"
    assert ASCENDJOBS.api_path("ns", "j") == "/apis/mindxdl.gitee.com/v1/namespaces/ns/ascendjobs/j"
    assert NAMESPACES.api_path("ignored", "default") == "/api/v1/namespaces/default"
    assert ASCENDJOBS.api_version == "mindxdl.gitee.com/v1" and PODS.api_version == "v1"


def test_from_kubeconfig(tmp_path: Path) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    client = KubeClient.from_kubeconfig(str(path))
    cfg = client._api.configuration
    assert client.host == "127.0.0.1:6553"
    assert cfg.auth_settings()["BearerToken"]["value"] == "Bearer kubeconfig-token"
    assert cfg.retries is False, "urllib3 must not retry behind our back"


def service_account(tmp_path: Path) -> tuple[str, str]:
    token = tmp_path / "token"
    token.write_text("sa-token")
    ca = tmp_path / "ca.crt"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    return str(token), str(ca)


def test_in_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    token, ca = service_account(tmp_path)
    client = KubeClient.in_cluster(token_file=token, ca_file=ca, qps=7.0)
    cfg = client._api.configuration
    assert cfg.host == "https://10.96.0.1:443"
    assert cfg.ssl_ca_cert == ca
    assert cfg.auth_settings()["BearerToken"]["value"].lower() == "bearer sa-token"


def test_auto_prefers_an_explicit_kubeconfig_then_the_service_account(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    assert KubeClient.auto(str(path)).host == "127.0.0.1:6553"
    monkeypatch.setenv("KUBECONFIG", str(path))
    with pytest.raises(Exception, match=r"(?i)token|service"):
        KubeClient.auto()  # in a "pod" without a mounted token: the in-cluster path is taken
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert KubeClient.auto().host == "127.0.0.1:6553", "KUBECONFIG outside a pod"


def test_every_connection_has_tcp_keepalive(tmp_path: Path) -> None:
    import socket

    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    client = KubeClient.from_kubeconfig(str(path))
    options = client._api.rest_client.pool_manager.connection_pool_kw["socket_options"]
    assert (socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1) in options
    idle = [o for o in options if o[:2] == (socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)]
    assert idle and 0 < idle[0][2] <= 60  # probes start within a minute of silence


def test_a_silent_watch_is_dead_within_a_minute() -> None:
    from ascendjob_controller.kube import informer

    # The longest a dead stream can hold an informer: its server timeout plus the margin.
    low, high = informer.WATCH_TIMEOUT_RANGE
    assert 0 < low < high and high + informer.WATCH_SILENCE_MARGIN <= 60

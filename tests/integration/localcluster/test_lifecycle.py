"""Starting and stopping: a stopped cluster serves nothing, not even kept-alive connections."""

from __future__ import annotations

import http.client
from pathlib import Path

import pytest

from ascendjob_controller.localcluster.cluster import LocalCluster

pytestmark = pytest.mark.integration


def test_stop_cuts_kept_alive_connections(tmp_path: Path) -> None:
    cluster = LocalCluster(kubeconfig_path=tmp_path / "kubeconfig", kubelet=False)
    cluster.start()
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=30)
    try:
        conn.request("GET", "/api/v1/namespaces/default")
        resp = conn.getresponse()
        assert resp.status == 200
        resp.read()
        assert "127.0.0.1" in cluster.kubeconfig_path.read_text()
        cluster.stop()
        with pytest.raises((ConnectionError, http.client.HTTPException, OSError)):
            conn.request("GET", "/api/v1/namespaces/default")
            conn.getresponse().read()
    finally:
        conn.close()
        cluster.stop()

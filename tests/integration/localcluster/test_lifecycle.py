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


def test_restart_serves_the_same_objects_on_the_same_port(tmp_path: Path) -> None:
    from kubernetes import client

    with LocalCluster(kubeconfig_path=tmp_path / "kubeconfig", kubelet=False) as cluster:
        core = client.CoreV1Api(cluster.api_client())
        core.create_namespaced_config_map("default", {"metadata": {"name": "kept"}})
        port = cluster.port
        cluster.stop()
        with pytest.raises(OSError):
            http.client.HTTPConnection("127.0.0.1", port, timeout=5).connect()
        cluster.start()
        assert cluster.port == port
        core = client.CoreV1Api(cluster.api_client())
        assert core.read_namespaced_config_map("kept", "default").metadata.name == "kept"
        core.create_namespaced_config_map("default", {"metadata": {"name": "after"}})
        # the garbage collector runs again too
        owner = core.read_namespaced_config_map("kept", "default")
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "kept", "uid": owner.metadata.uid}
        core.create_namespaced_config_map(
            "default", {"metadata": {"name": "owned", "ownerReferences": [ref]}}
        )
        core.delete_namespaced_config_map("kept", "default")
        assert cluster.wait_gc_idle(30)
        names = {c.metadata.name for c in core.list_namespaced_config_map("default").items}
        assert names == {"after"}

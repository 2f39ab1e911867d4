"""List options: resourceVersion semantics, Exact lists from history, 410 and 422s."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest

from ascendjob_controller.localcluster.cluster import LocalCluster

from .conftest import raw_call

pytestmark = pytest.mark.integration


def _names(body: dict[str, Any]) -> list[str]:
    return [i["metadata"]["name"] for i in body["items"]]


def test_exact_list_shows_a_past_revision(cluster: LocalCluster, core: Any, namespace: str) -> None:
    rv = core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "a"}}
    ).metadata.resource_version
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "b"}})
    core.patch_namespaced_config_map("a", namespace, {"data": {"k": "later"}})
    code, body = raw_call(
        cluster,
        "GET",
        f"/api/v1/namespaces/{namespace}/configmaps?resourceVersion={rv}&resourceVersionMatch=Exact",
    )
    assert code == 200 and _names(body) == ["a"]
    assert "data" not in body["items"][0] and body["metadata"]["resourceVersion"] == rv


def test_compacted_revisions_are_410_for_exact_lists_and_watches(tmp_path: Any) -> None:
    """History is compacted as kube-apiserver compacts etcd: every interval, up to the
    revision seen at the previous tick; before that, an old revision is still served."""
    import time

    lc = LocalCluster(tmp_path / "kubeconfig", kubelet=False, compaction_interval=0.3)
    lc.start()
    try:
        exact = "/api/v1/namespaces/default/configmaps?resourceVersion=1&resourceVersionMatch=Exact"
        code, body = raw_call(lc, "GET", exact)
        assert code == 200 and body["items"] == []  # revision 1: before the first ConfigMap
        time.sleep(0.7)  # two ticks: the first records a revision, the second compacts to it
        raw_call(lc, "POST", "/api/v1/namespaces/default/configmaps", b'{"metadata":{"name":"c"}}')
        code, body = raw_call(lc, "GET", exact)
        assert (code, body["reason"], body["message"]) == (
            410,
            "Expired",
            "The resourceVersion for the provided list is too old.",
        )
        url = f"{lc.url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=1"
        with urllib.request.urlopen(url, timeout=30) as resp:
            assert resp.status == 200
            events = [json.loads(line) for line in resp.read().splitlines() if line.strip()]
        assert [e["type"] for e in events] == ["ERROR"]
        assert events[0]["object"]["code"] == 410
        assert events[0]["object"]["message"].startswith("too old resource version: 1 (")
    finally:
        lc.stop()


def test_match_without_resource_version_is_422(cluster: LocalCluster, namespace: str) -> None:
    code, body = raw_call(
        cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps?resourceVersionMatch=Exact"
    )
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        'ListOptions.meta.k8s.io "" is invalid: resourceVersionMatch: Forbidden: '
        "resourceVersionMatch is forbidden unless resourceVersion is provided"
    )
    code, body = raw_call(
        cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps?watch=1&sendInitialEvents=true"
    )
    assert (
        code == 422 and "sendInitialEvents requires setting resourceVersionMatch" in body["message"]
    )


def test_resource_version_zero_ignores_limit(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:
    for name in ("a", "b", "c"):
        core.create_namespaced_config_map(namespace, {"metadata": {"name": name}})
    path = f"/api/v1/namespaces/{namespace}/configmaps?limit=1"
    assert len(raw_call(cluster, "GET", path)[1]["items"]) == 1
    code, body = raw_call(cluster, "GET", path + "&resourceVersion=0")
    assert code == 200 and _names(body) == ["a", "b", "c"] and "continue" not in body["metadata"]


def test_a_resource_version_not_reached_is_504(cluster: LocalCluster, namespace: str) -> None:
    code, body = raw_call(
        cluster, "GET", f"/api/v1/namespaces/{namespace}/configmaps?resourceVersion=99999999"
    )
    assert (code, body["reason"], body["details"]["retryAfterSeconds"]) == (504, "Timeout", 1)


def test_bad_limit_and_selector_messages(cluster: LocalCluster, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    assert raw_call(cluster, "GET", base + "?limit=abc")[1]["message"] == (
        'strconv.ParseInt: parsing "abc": invalid syntax'
    )
    assert raw_call(cluster, "GET", base + "?labelSelector=a%3D%3D%3Db")[1]["message"] == (
        "unable to parse requirement: found '=', expected: identifier"
    )

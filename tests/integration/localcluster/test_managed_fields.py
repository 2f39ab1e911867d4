"""managedFields and server-side apply as kube-apiserver v1.37 keeps them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ascendjob_controller.localcluster.cluster import LocalCluster

from .conftest import raw_call

pytestmark = pytest.mark.integration
APPLY = "application/apply-patch+yaml"


def _cm(data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data}


def _apply(
    cluster: LocalCluster, namespace: str, body: dict[str, Any], query: str
) -> tuple[int, dict[str, Any]]:
    path = f"/api/v1/namespaces/{namespace}/configmaps/c?{query}"
    return raw_call(cluster, "PATCH", path, json.dumps(body).encode(), APPLY)


def _fields(obj: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(e["manager"], e["operation"], e["fieldsV1"]) for e in obj["metadata"]["managedFields"]]


def test_create_and_updates_record_update_entries(cluster: LocalCluster, namespace: str) -> None:
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    body = {"metadata": {"name": "c", "labels": {"l": "1"}}, "data": {"a": "1"}}
    code, created = raw_call(
        cluster, "POST", path + "?fieldManager=maker", json.dumps(body).encode()
    )
    assert code == 201
    assert _fields(created) == [
        (
            "maker",
            "Update",
            {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:l": {}}}},
        )
    ]
    assert created["metadata"]["managedFields"][0]["time"]
    code, patched = raw_call(
        cluster,
        "PATCH",
        path + "/c?fieldManager=patcher",
        json.dumps({"data": {"a": "2", "b": "2"}}).encode(),
        "application/merge-patch+json",
    )
    # the changed field moves to the patcher; the maker keeps what it still owns
    assert _fields(patched) == [
        (
            "maker",
            "Update",
            {"f:data": {}, "f:metadata": {"f:labels": {".": {}, "f:l": {}}}},
        ),
        ("patcher", "Update", {"f:data": {"f:a": {}, "f:b": {}}}),
    ]


def test_the_user_agent_names_the_manager(core: Any, namespace: str) -> None:
    cm = core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "c"}, "data": {"a": "b"}}
    )
    (entry,) = cm.metadata.managed_fields
    assert entry.manager == "OpenAPI-Generator" and entry.operation == "Update"


def test_apply_needs_a_field_manager(cluster: LocalCluster, namespace: str) -> None:
    code, status = _apply(cluster, namespace, _cm({"a": "1"}), "")
    assert (code, status["reason"]) == (422, "Invalid")
    assert status["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for '
        "apply patch"
    )


def test_apply_conflicts_unless_forced(cluster: LocalCluster, namespace: str) -> None:
    assert _apply(cluster, namespace, _cm({"a": "1"}), "fieldManager=alice")[0] == 201
    code, status = _apply(cluster, namespace, _cm({"a": "2"}), "fieldManager=bob")
    assert (code, status["reason"]) == (409, "Conflict")
    assert status["message"] == 'Apply failed with 1 conflict: conflict with "alice": .data.a'
    assert status["details"]["causes"] == [
        {"reason": "FieldManagerConflict", "message": 'conflict with "alice"', "field": ".data.a"}
    ]
    code, forced = _apply(cluster, namespace, _cm({"a": "2"}), "fieldManager=bob&force=true")
    assert code == 200 and forced["data"] == {"a": "2"}
    assert _fields(forced) == [("bob", "Apply", {"f:data": {"f:a": {}}})]


def test_apply_shares_equal_values_and_update_managers_conflict_too(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:
    _apply(cluster, namespace, _cm({"a": "1"}), "fieldManager=alice")
    code, shared = _apply(cluster, namespace, _cm({"a": "1"}), "fieldManager=bob")
    assert code == 200
    assert [e["manager"] for e in shared["metadata"]["managedFields"]] == ["bob", "alice"]
    assert "time" not in shared["metadata"]["managedFields"][0]  # a no-op apply
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "d"}, "data": {"x": "0"}})
    path = f"/api/v1/namespaces/{namespace}/configmaps/d?fieldManager=alice"
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}, "data": {"x": "1"}}
    code, status = raw_call(cluster, "PATCH", path, json.dumps(body).encode(), APPLY)
    assert code == 409
    assert status["message"].endswith('conflict with "OpenAPI-Generator" using v1: .data.x')


def test_pod_create_owns_decoded_defaults_not_admission_ones(core: Any, namespace: str) -> None:
    pod = core.create_namespaced_pod(
        namespace,
        {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "i:1"}]}},
    )
    (entry,) = pod.metadata.managed_fields
    spec = entry.fields_v1["f:spec"]
    assert "." not in spec["f:containers"]  # the list exists in an empty PodSpec already
    assert spec["f:containers"]['k:{"name":"c"}']["f:imagePullPolicy"] == {}
    assert "f:serviceAccountName" not in spec and "f:tolerations" not in spec

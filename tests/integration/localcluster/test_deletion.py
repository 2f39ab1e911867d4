"""What DELETE answers: a Status or the object per kind, propagation finalizers, 422s."""

from __future__ import annotations

import json
from typing import Any

import pytest
from kubernetes.client.rest import ApiException

from ascendjob_controller.localcluster.cluster import LocalCluster

from .conftest import acjob_body, eventually, raw_call

pytestmark = pytest.mark.integration
GROUP, VERSION, PLURAL = "mindxdl.gitee.com", "v1", "ascendjobs"


def _delete(cluster: LocalCluster, path: str, options: dict[str, Any] | None = None) -> Any:
    data = json.dumps(options).encode() if options is not None else None
    return raw_call(cluster, "DELETE", path, data)


def test_most_kinds_answer_a_delete_with_a_status(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:
    cm = core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}})
    code, body = _delete(cluster, f"/api/v1/namespaces/{namespace}/configmaps/c")
    assert code == 200
    assert body == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {"name": "c", "kind": "configmaps", "uid": cm.metadata.uid},
    }


def test_services_answer_with_the_object(cluster: LocalCluster, core: Any, namespace: str) -> None:
    core.create_namespaced_service(
        namespace, {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}]}}
    )
    code, body = _delete(cluster, f"/api/v1/namespaces/{namespace}/services/s")
    assert (code, body["kind"], body["metadata"]["name"]) == (200, "Service", "s")


def test_foreground_delete_is_200_with_its_finalizer(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "alone"}})
    path = f"/api/v1/namespaces/{namespace}/configmaps/alone"
    code, body = _delete(cluster, path, {"propagationPolicy": "Foreground"})
    assert code == 200
    assert body["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert body["metadata"]["deletionTimestamp"]
    eventually(lambda: raw_call(cluster, "GET", path)[0] == 404, message="never collected")


def test_orphan_delete_holds_the_owner_behind_its_finalizer(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:
    owner = core.create_namespaced_config_map(namespace, {"metadata": {"name": "owner"}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.metadata.uid}
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "dep", "ownerReferences": [ref]}}
    )
    path = f"/api/v1/namespaces/{namespace}/configmaps/owner"
    code, body = _delete(cluster, path, {"propagationPolicy": "Orphan"})
    assert (code, body["metadata"]["finalizers"]) == (200, ["orphan"])
    eventually(lambda: raw_call(cluster, "GET", path)[0] == 404, message="owner never released")
    assert not core.read_namespaced_config_map("dep", namespace).metadata.owner_references


def test_custom_resource_finalizer_delete_bumps_generation(custom: Any, namespace: str) -> None:
    body = acjob_body("j")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    deleted = custom.delete_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "j")
    assert deleted["metadata"]["generation"] == 2 and deleted["metadata"]["deletionTimestamp"]
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "j", {"metadata": {"finalizers": None}}
    )
    with pytest.raises(ApiException) as err:
        custom.get_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, "j")
    assert err.value.status == 404


def test_unknown_propagation_policy_is_422(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:
    core.create_namespaced_config_map(namespace, {"metadata": {"name": "c"}})
    code, body = _delete(
        cluster, f"/api/v1/namespaces/{namespace}/configmaps/c", {"propagationPolicy": "Sideways"}
    )
    assert (code, body["reason"]) == (422, "Invalid")
    assert body["message"] == (
        'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
        '"Sideways": supported values: "Foreground", "Background", "Orphan", "nil"'
    )


def test_orphan_dependents_false_is_still_202(
    cluster: LocalCluster, custom: Any, namespace: str
) -> None:
    body = acjob_body("j")
    body["metadata"]["finalizers"] = ["example.com/hold"]
    custom.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)
    code, _ = _delete(
        cluster,
        f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{PLURAL}/j",
        {"orphanDependents": False},
    )
    assert code == 202
    custom.patch_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, "j", {"metadata": {"finalizers": None}}
    )

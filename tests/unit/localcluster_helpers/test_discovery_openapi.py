"""Discovery and OpenAPI documents: the shapes kubectl 1.32 and client-go parse."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from ascendjob_controller.localcluster.discovery import (
    aggregated_discovery,
    api_group_list,
    api_resource_list,
    api_versions,
    version_priority,
)
from ascendjob_controller.localcluster.openapi import (
    openapi_v2,
    openapi_v3_document,
    openapi_v3_index,
    schema_name,
)
from ascendjob_controller.localcluster.registry import types_from_crd
from ascendjob_controller.localcluster.resources import ResourceType

ROOT = Path(__file__).resolve().parents[3]

PODS = ResourceType(
    "",
    "v1",
    "Pod",
    "pods",
    "pod",
    True,
    ("po",),
    subresources=frozenset({"status"}),
    categories=("all",),
)
NAMESPACES = ResourceType(
    "",
    "v1",
    "Namespace",
    "namespaces",
    "namespace",
    False,
    ("ns",),
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    subresources=frozenset({"status", "finalize"}),
)
DEPLOYMENTS = ResourceType(
    "apps",
    "v1",
    "Deployment",
    "deployments",
    "deployment",
    True,
    ("deploy",),
    subresources=frozenset({"status", "scale"}),
)
LEASES = ResourceType("coordination.k8s.io", "v1", "Lease", "leases", "lease", True)
CRDS = ResourceType(
    "apiextensions.k8s.io",
    "v1",
    "CustomResourceDefinition",
    "customresourcedefinitions",
    "customresourcedefinition",
    False,
    ("crd", "crds"),
    subresources=frozenset({"status"}),
)


def _crd_type(path: str) -> ResourceType:
    """The resource type the server derives from one of our CRD manifests."""
    return types_from_crd(yaml.safe_load((ROOT / path).read_text()))[0]


ACJOB = _crd_type("manifests/crd/mindxdl.gitee.com_ascendjobs.yaml")
PODGROUP = _crd_type("manifests/crd/scheduling.volcano.sh_podgroups.yaml")
ACJOB_V1ALPHA1 = ResourceType(
    "mindxdl.gitee.com", "v1alpha1", "AscendJob", "ascendjobs", "ascendjob", True, builtin=False
)
ALL = [PODS, NAMESPACES, DEPLOYMENTS, LEASES, CRDS, ACJOB, PODGROUP]


def test_api_versions() -> None:
    doc = api_versions()
    assert doc["kind"] == "APIVersions"
    assert doc["versions"] == ["v1"]
    assert doc["serverAddressByClientCIDRs"][0]["clientCIDR"] == "0.0.0.0/0"


def test_version_priority_orders_like_kubernetes() -> None:
    versions = ["v1alpha1", "v1", "foo", "v2beta1", "v1beta2", "v2", "v1beta1", "v10"]
    assert sorted(versions, key=version_priority, reverse=True) == [
        "v10",
        "v2",
        "v1",
        "v2beta1",
        "v1beta2",
        "v1beta1",
        "v1alpha1",
        "foo",
    ]


def test_api_group_list_has_named_groups_with_preferred_versions() -> None:
    doc = api_group_list([*ALL, ACJOB_V1ALPHA1])
    assert doc["kind"] == "APIGroupList"
    groups = {g["name"]: g for g in doc["groups"]}
    assert "" not in groups
    assert set(groups) == {
        "apps",
        "coordination.k8s.io",
        "apiextensions.k8s.io",
        "mindxdl.gitee.com",
        "scheduling.volcano.sh",
    }
    mindx = groups["mindxdl.gitee.com"]
    assert mindx["versions"] == [
        {"groupVersion": "mindxdl.gitee.com/v1", "version": "v1"},
        {"groupVersion": "mindxdl.gitee.com/v1alpha1", "version": "v1alpha1"},
    ]
    assert mindx["preferredVersion"] == {"groupVersion": "mindxdl.gitee.com/v1", "version": "v1"}


def test_api_resource_list_core_and_custom() -> None:
    core = api_resource_list("v1", ALL)
    assert core is not None
    assert core["kind"] == "APIResourceList" and core["groupVersion"] == "v1"
    by_name = {r["name"]: r for r in core["resources"]}
    assert by_name["pods"] == {
        "name": "pods",
        "singularName": "pod",
        "namespaced": True,
        "kind": "Pod",
        "verbs": [
            "create",
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "update",
            "watch",
        ],
        "shortNames": ["po"],
        "categories": ["all"],
    }
    assert by_name["pods/status"]["verbs"] == ["get", "patch", "update"]
    assert by_name["pods/status"]["kind"] == "Pod"
    assert by_name["namespaces"]["namespaced"] is False
    assert by_name["namespaces/finalize"]["verbs"] == ["update"]
    job = api_resource_list("mindxdl.gitee.com/v1", ALL)
    assert job is not None
    entry = job["resources"][0]
    assert entry["name"] == "ascendjobs" and entry["shortNames"] == ["acjob"]
    assert job["resources"][1]["name"] == "ascendjobs/status"
    apps = api_resource_list("apps/v1", ALL)
    assert apps is not None
    scale = next(r for r in apps["resources"] if r["name"] == "deployments/scale")
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    assert api_resource_list("nope/v1", ALL) is None


def test_aggregated_discovery_legacy_and_groups() -> None:
    legacy = aggregated_discovery(ALL, legacy=True)
    assert legacy["kind"] == "APIGroupDiscoveryList"
    assert legacy["apiVersion"] == "apidiscovery.k8s.io/v2"
    [core] = legacy["items"]
    [v1] = core["versions"]
    assert v1["version"] == "v1" and v1["freshness"] == "Current"
    pods = next(r for r in v1["resources"] if r["resource"] == "pods")
    assert pods["responseKind"] == {"group": "", "version": "", "kind": "Pod"}
    assert pods["scope"] == "Namespaced" and pods["singularResource"] == "pod"
    assert pods["shortNames"] == ["po"]
    assert pods["subresources"] == [
        {
            "subresource": "status",
            "responseKind": {"group": "", "version": "", "kind": "Pod"},
            "verbs": ["get", "patch", "update"],
        }
    ]
    ns = next(r for r in v1["resources"] if r["resource"] == "namespaces")
    assert ns["scope"] == "Cluster"

    groups = aggregated_discovery([*ALL, ACJOB_V1ALPHA1], legacy=False)
    names = [g["metadata"]["name"] for g in groups["items"]]
    assert "mindxdl.gitee.com" in names and "" not in names
    mindx = groups["items"][names.index("mindxdl.gitee.com")]
    assert [v["version"] for v in mindx["versions"]] == ["v1", "v1alpha1"]
    job = mindx["versions"][0]["resources"][0]
    assert job["resource"] == "ascendjobs" and job["shortNames"] == ["acjob"]
    json.dumps(groups)  # serialisable


# --- OpenAPI ------------------------------------------------------------------------------


def test_schema_names_match_kube_apiserver() -> None:
    assert schema_name(PODS) == "io.k8s.api.core.v1.Pod"
    assert schema_name(DEPLOYMENTS) == "io.k8s.api.apps.v1.Deployment"
    assert schema_name(LEASES) == "io.k8s.api.coordination.v1.Lease"
    assert (
        schema_name(CRDS)
        == "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
    )
    assert schema_name(ACJOB) == "com.gitee.mindxdl.v1.AscendJob"
    assert schema_name(ACJOB, "AscendJobList") == "com.gitee.mindxdl.v1.AscendJobList"


def test_v3_index_points_at_each_group_version_with_a_content_hash() -> None:
    index = openapi_v3_index(ALL)
    assert set(index["paths"]) == {
        "api/v1",
        "apis/apps/v1",
        "apis/coordination.k8s.io/v1",
        "apis/apiextensions.k8s.io/v1",
        "apis/mindxdl.gitee.com/v1",
        "apis/scheduling.volcano.sh/v1beta1",
    }
    url = index["paths"]["apis/mindxdl.gitee.com/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/apis/mindxdl.gitee.com/v1?hash=")
    assert openapi_v3_index(ALL) == index  # stable
    changed = ResourceType(**{**ACJOB.__dict__, "short_names": ("aj",)})
    other = openapi_v3_index([PODS, changed])["paths"]["apis/mindxdl.gitee.com/v1"][
        "serverRelativeURL"
    ]
    assert other == url  # short names are not part of the document...
    schema = json.loads(json.dumps(ACJOB.schema))
    schema["properties"]["spec"]["properties"]["x"] = {"type": "string"}
    changed = ResourceType(**{**ACJOB.__dict__, "schema": schema})
    other = openapi_v3_index([changed])["paths"]["apis/mindxdl.gitee.com/v1"]["serverRelativeURL"]
    assert other != url  # ...but the schema is


def _patch_ops(doc: dict[str, Any], gvk: dict[str, str]) -> list[dict[str, Any]]:
    return [
        item["patch"]
        for item in doc["paths"].values()
        if "patch" in item and item["patch"]["x-kubernetes-group-version-kind"] == gvk
    ]


def _supports_field_validation(doc: dict[str, Any], gvk: dict[str, str]) -> bool:
    """What kubectl's QueryParamVerifierV3 does: every PATCH op of the GVK has the param."""
    ops = _patch_ops(doc, gvk)
    return bool(ops) and all(
        any(p["name"] == "fieldValidation" and p["in"] == "query" for p in op["parameters"])
        for op in ops
    )


@pytest.mark.parametrize("rt", ALL, ids=lambda r: r.kind)
def test_every_kind_supports_field_validation(rt: ResourceType) -> None:
    doc = openapi_v3_document(rt.group_version, ALL)
    assert doc is not None
    assert _supports_field_validation(
        doc, {"group": rt.group, "version": rt.version, "kind": rt.kind}
    )


def test_acjob_document_paths_and_schema() -> None:
    doc = openapi_v3_document("mindxdl.gitee.com/v1", ALL)
    assert doc is not None
    assert doc["openapi"].startswith("3.")
    base = "/apis/mindxdl.gitee.com/v1"
    assert set(doc["paths"]) == {
        f"{base}/namespaces/{{namespace}}/ascendjobs",
        f"{base}/ascendjobs",
        f"{base}/namespaces/{{namespace}}/ascendjobs/{{name}}",
        f"{base}/namespaces/{{namespace}}/ascendjobs/{{name}}/status",
    }
    item = doc["paths"][f"{base}/namespaces/{{namespace}}/ascendjobs/{{name}}"]
    assert set(item) == {"parameters", "get", "put", "patch", "delete"}
    patch_types = set(item["patch"]["requestBody"]["content"])
    assert "application/strategic-merge-patch+json" not in patch_types
    assert {"application/merge-patch+json", "application/apply-patch+yaml"} <= patch_types
    schemas = doc["components"]["schemas"]
    job = schemas["com.gitee.mindxdl.v1.AscendJob"]
    assert job["x-kubernetes-group-version-kind"] == [
        {"group": "mindxdl.gitee.com", "version": "v1", "kind": "AscendJob"}
    ]
    assert job["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    replicas = job["properties"]["spec"]["properties"]["replicaSpecs"]["additionalProperties"][
        "properties"
    ]["replicas"]
    assert replicas["type"] == "integer"
    assert (
        ACJOB.schema is not None and "allOf" not in ACJOB.schema["properties"]["metadata"]
    )  # not mutated
    assert "com.gitee.mindxdl.v1.AscendJobList" in schemas
    _assert_refs_resolve(doc, "#/components/schemas/", schemas)
    assert openapi_v3_document("mindxdl.gitee.com/v2", ALL) is None


def test_builtin_patch_ops_leave_strategic_patch_to_kubectl() -> None:
    doc = openapi_v3_document("v1", ALL)
    assert doc is not None
    [pod_patch, *_] = _patch_ops(doc, {"group": "", "version": "v1", "kind": "Pod"})
    assert "application/strategic-merge-patch+json" not in pod_patch["requestBody"]["content"]
    pod = doc["components"]["schemas"]["io.k8s.api.core.v1.Pod"]
    containers = pod["properties"]["spec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["items"]["properties"]["env"]["x-kubernetes-patch-merge-key"] == "name"
    ns_item = doc["paths"]["/api/v1/namespaces/{name}"]
    assert "delete" in ns_item
    assert "/api/v1/namespaces/{name}/status" in doc["paths"]
    _assert_refs_resolve(doc, "#/components/schemas/", doc["components"]["schemas"])


def _assert_refs_resolve(node: Any, prefix: str, schemas: dict[str, Any]) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            assert ref.startswith(prefix), ref
            assert ref[len(prefix) :] in schemas, ref
        for v in node.values():
            _assert_refs_resolve(v, prefix, schemas)
    elif isinstance(node, list):
        for v in node:
            _assert_refs_resolve(v, prefix, schemas)


def test_openapi_v2_is_swagger_with_definitions() -> None:
    doc = openapi_v2(ALL)
    assert doc["swagger"] == "2.0"
    assert "com.gitee.mindxdl.v1.AscendJob" in doc["definitions"]
    _assert_refs_resolve(doc, "#/definitions/", doc["definitions"])
    op = doc["paths"]["/apis/mindxdl.gitee.com/v1/namespaces/{namespace}/ascendjobs/{name}"][
        "patch"
    ]
    names = [p["name"] for p in op["parameters"]]
    assert names[0] == "body" and "fieldValidation" in names
    assert op["x-kubernetes-group-version-kind"]["kind"] == "AscendJob"
    assert "requestBody" not in op and "application/merge-patch+json" in op["consumes"]
    json.dumps(doc)


def _read_fields(data: bytes) -> dict[int, bytes]:
    """Decode one level of a protobuf message made of length-delimited fields."""
    fields: dict[int, bytes] = {}
    i = 0
    while i < len(data):
        key = data[i]
        i += 1
        assert key & 7 == 2, "only length-delimited fields expected"
        length = data[i]
        i += 1
        fields[key >> 3] = data[i : i + length]
        i += length
    return fields


def test_openapi_v2_protobuf_is_a_minimal_gnostic_document() -> None:
    from ascendjob_controller.localcluster.openapi import (
        OPENAPI_V2_PROTOBUF_CONTENT_TYPE,
        openapi_v2_protobuf,
    )

    doc = _read_fields(openapi_v2_protobuf())
    assert doc[1] == b"2.0"  # Document.swagger
    info = _read_fields(doc[2])  # Document.info
    assert info[1] == b"Kubernetes" and info[2].startswith(b"v1.")
    assert "@" not in OPENAPI_V2_PROTOBUF_CONTENT_TYPE

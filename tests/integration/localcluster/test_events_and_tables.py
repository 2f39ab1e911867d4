"""One Event storage behind two APIs; the Tables kubectl prints; CRD defaults on read."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ascendjob_controller.localcluster.cluster import LocalCluster

from .conftest import eventually, example_crd, raw_call

pytestmark = pytest.mark.integration
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"


def _new_event(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "example.com/ctl",
        "reportingInstance": "ctl-1",
        "action": "Sync",
        "reason": "Synced",
        "note": "synced",
        "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": namespace},
    }


def test_an_event_written_through_events_k8s_io_is_read_through_core(
    cluster: LocalCluster, core: Any, namespace: str
) -> None:
    path = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    code, created = raw_call(cluster, "POST", path, json.dumps(_new_event(namespace)).encode())
    assert code == 201 and created["apiVersion"] == "events.k8s.io/v1"
    assert created["deprecatedSource"] == {} and created["deprecatedFirstTimestamp"] is None
    code, seen = raw_call(cluster, "GET", f"/api/v1/namespaces/{namespace}/events/e")
    assert code == 200
    assert (seen["message"], seen["reportingComponent"], seen["involvedObject"]["name"]) == (
        "synced",
        "example.com/ctl",
        "p",
    )
    assert seen["source"] == {} and seen["firstTimestamp"] is None
    assert [e.metadata.name for e in core.list_namespaced_event(namespace).items] == ["e"]
    entry = seen["metadata"]["managedFields"][0]
    assert entry["apiVersion"] == "events.k8s.io/v1" and "f:regarding" in entry["fieldsV1"]
    code, status = raw_call(cluster, "DELETE", f"{path}/e")
    assert status["details"]["group"] == "events.k8s.io"
    assert raw_call(cluster, "GET", f"/api/v1/namespaces/{namespace}/events/e")[0] == 404


def test_kubectl_get_events_columns(cluster: LocalCluster, core: Any, namespace: str) -> None:
    core.create_namespaced_event(
        namespace,
        {
            "metadata": {"name": "ev"},
            "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace},
            "reason": "BackOff",
            "message": "back-off",
            "type": "Warning",
            "source": {"component": "kubelet"},
        },
    )
    code, table = raw_call(cluster, "GET", f"/api/v1/namespaces/{namespace}/events", accept=TABLE)
    assert code == 200
    assert [(c["name"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Last Seen", 0),
        ("Type", 0),
        ("Reason", 0),
        ("Object", 0),
        ("Subobject", 1),
        ("Source", 1),
        ("Message", 0),
        ("First Seen", 1),
        ("Count", 1),
        ("Name", 1),
    ]
    (row,) = table["rows"]
    assert row["cells"][1:7] == ["Warning", "BackOff", "pod/p", "", "kubelet", "back-off"]
    assert row["cells"][8:] == [1, "ev"]


def test_crd_defaults_apply_to_stored_objects_on_read(
    cluster: LocalCluster, namespace: str
) -> None:
    def crd(color: dict[str, Any]) -> dict[str, Any]:
        schema = {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {"size": {"type": "integer"}, "color": color},
                }
            },
        }
        return example_crd("Paint", schema)

    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    assert raw_call(cluster, "POST", crds, json.dumps(crd({"type": "string"})).encode())[0] == 201
    path = f"/apis/example.com/v1/namespaces/{namespace}/paints"
    body = {
        "apiVersion": "example.com/v1",
        "kind": "Paint",
        "metadata": {"name": "p"},
        "spec": {"size": 1},
    }
    code, created = raw_call(cluster, "POST", path, json.dumps(body).encode())
    assert code == 201 and created["spec"] == {"size": 1}
    patch = {
        "spec": {"versions": [crd({"type": "string", "default": "blue"})["spec"]["versions"][0]]}
    }
    code, _ = raw_call(
        cluster,
        "PATCH",
        f"{crds}/paints.example.com",
        json.dumps(patch).encode(),
        "application/merge-patch+json",
    )
    assert code == 200
    code, read = raw_call(cluster, "GET", f"{path}/p")
    assert read["spec"] == {"size": 1, "color": "blue"}
    assert read["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    raw_call(cluster, "DELETE", f"{crds}/paints.example.com")


def test_a_terminating_namespace_reports_what_is_left(core: Any, namespace: str) -> None:
    core.create_namespaced_config_map(
        namespace, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}
    )
    core.delete_namespace(namespace)

    def conditions() -> dict[str, str]:
        return {c.type: c.message for c in core.read_namespace(namespace).status.conditions or []}

    eventually(lambda: "NamespaceFinalizersRemaining" in conditions(), message="no conditions")
    assert conditions()["NamespaceContentRemaining"] == (
        "Some resources are remaining: configmaps. has 1 resource instances"
    )
    core.patch_namespaced_config_map("held", namespace, {"metadata": {"finalizers": None}})

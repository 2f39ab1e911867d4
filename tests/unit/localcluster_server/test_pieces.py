"""Small pure pieces of the server: routing, faults, protobuf bodies, GC task selection."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.localcluster import builtin, protobuf
from ascendjob_controller.localcluster.faults import Faults
from ascendjob_controller.localcluster.gc import tasks_for
from ascendjob_controller.localcluster.registry import Registry, types_from_crd
from ascendjob_controller.localcluster.server import parse_route
from ascendjob_controller.localcluster.store import Entry, Event, dumps


def test_routes_for_core_group_and_namespaces() -> None:
    reg = Registry()
    r = parse_route(reg, "/api/v1/namespaces/ns1/pods/p/status")
    assert r is not None and (r.rt, r.namespace, r.name, r.subresource) == (
        builtin.PODS,
        "ns1",
        "p",
        "status",
    )
    r = parse_route(reg, "/api/v1/namespaces/ns1")
    assert r is not None and (r.rt, r.name) == (builtin.NAMESPACES, "ns1")
    r = parse_route(reg, "/api/v1/namespaces/ns1/status")
    assert r is not None and (r.rt, r.name, r.subresource) == (builtin.NAMESPACES, "ns1", "status")
    r = parse_route(reg, "/apis/coordination.k8s.io/v1/namespaces/x/leases")
    assert r is not None and (r.rt, r.namespace, r.name) == (builtin.LEASES, "x", "")
    assert parse_route(reg, "/api/v1/pods") is not None
    assert parse_route(reg, "/api/v1/namespaces/x/widgets") is None
    assert parse_route(reg, "/api/v1/namespaces/x/pods/p/exec") is None
    assert (
        parse_route(reg, "/apis/apiextensions.k8s.io/v1/namespaces/x/customresourcedefinitions")
        is None
    )


def test_crd_types_follow_served_versions() -> None:
    crd: dict[str, Any] = {
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Cluster",
            "names": {"kind": "Widget", "plural": "widgets", "shortNames": ["wd"]},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "subresources": {"status": {}}},
                {"name": "v0", "served": False, "storage": False},
            ],
        },
    }
    (rt,) = types_from_crd(crd)
    assert (rt.group_version, rt.kind, rt.singular, rt.namespaced) == (
        "example.com/v1",
        "Widget",
        "widget",
        False,
    )
    assert rt.short_names == ("wd",) and rt.subresources == {"status"} and not rt.builtin
    reg = Registry()
    reg.set_crd(crd)
    assert reg.lookup("example.com", "v1", "widgets") == rt
    assert reg.by_group_resource("widgets.example.com") == rt
    reg.remove_crd("widgets.example.com")
    assert reg.lookup("example.com", "v1", "widgets") is None


def test_fault_rules_count_percent_and_resource_matching() -> None:
    faults = Faults(seed=1)
    faults.fail("create", "pods", code=500, count=2)
    assert faults.failure_for("create", "configmaps") is None
    assert faults.failure_for("create", "pods") == 500
    assert faults.failure_for("create", "pods/status") == 500  # plural covers subresources
    assert faults.failure_for("create", "pods") is None  # count exhausted
    faults.fail("update", "pods/status", code=409, percent=0.0)
    assert faults.failure_for("update", "pods/status") is None
    faults.latency(0.25, verb="list")
    assert faults.delay_for("list") == 0.25 and faults.delay_for("get") == 0.0
    faults.expire_next_watch()
    assert faults.take_expire() and not faults.take_expire()
    epoch = faults.watch_epoch
    faults.drop_watches()
    assert faults.watch_epoch == epoch + 1
    faults.clear()
    assert faults.delay_for("list") == 0.0


def _pb_field(number: int, payload: bytes) -> bytes:
    assert len(payload) < 128
    return bytes([number << 3 | 2, len(payload)]) + payload


def test_protobuf_configmap_body_decodes() -> None:
    meta = _pb_field(1, b"cfg") + _pb_field(11, _pb_field(1, b"app") + _pb_field(2, b"x"))
    obj = _pb_field(1, meta) + _pb_field(2, _pb_field(1, b"k") + _pb_field(2, b"v"))
    type_meta = _pb_field(1, b"v1") + _pb_field(2, b"ConfigMap")
    body = protobuf.MAGIC + _pb_field(1, type_meta) + _pb_field(2, obj)
    assert protobuf.decode(body) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cfg", "labels": {"app": "x"}},
        "data": {"k": "v"},
    }


def test_protobuf_refuses_unknown_kinds_and_garbage() -> None:
    type_meta = _pb_field(1, b"v1") + _pb_field(2, b"Pod")
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(protobuf.MAGIC + _pb_field(1, type_meta))
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(b"{}")
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(protobuf.MAGIC + b"\x0a\x7f")


def _event(kind: str, obj: dict[str, Any], resource: str = "pods") -> Event:
    ns = obj["metadata"].get("namespace", "")
    return Event(1, kind, resource, ns, Entry(obj, dumps(obj)), None)


def test_gc_tasks_for_events() -> None:
    owned = {
        "metadata": {"name": "p", "namespace": "d", "uid": "u1", "ownerReferences": [{"uid": "o1"}]}
    }
    assert tasks_for(_event("ADDED", owned), False) == [("dependent", "u1")]
    assert tasks_for(_event("DELETED", owned), True) == [
        ("owner-gone", "u1"),
        ("foreground", "o1"),
        ("namespace", "d"),
    ]
    fg = {
        "metadata": {
            "name": "j",
            "namespace": "d",
            "uid": "j1",
            "deletionTimestamp": "t",
            "finalizers": ["foregroundDeletion"],
        }
    }
    assert tasks_for(_event("MODIFIED", fg), False) == [("foreground", "j1")]
    ns = {"metadata": {"name": "d", "uid": "n1", "deletionTimestamp": "t"}}
    assert tasks_for(_event("MODIFIED", ns, "namespaces"), False) == [("namespace", "d")]


@pytest.mark.parametrize(
    ("rt", "name", "ok"),
    [
        (builtin.PODS, "worker-0.a", True),
        (builtin.PODS, "Worker", False),
        (builtin.PODS, "a..b", False),
        (builtin.NAMESPACES, "team-a", True),
        (builtin.NAMESPACES, "team.a", False),
        (builtin.SERVICES, "svc-1", True),
        (builtin.SERVICES, "1svc", True),  # v1.37: an RFC 1123 label, digits first allowed
        (builtin.SERVICES, "svc.a", False),
        (builtin.CLUSTERROLES, "system:aggregate-to-admin", True),
        (builtin.ROLEBINDINGS, "a/b", False),
    ],
)
def test_name_rules_per_kind(rt: Any, name: str, ok: bool) -> None:
    from ascendjob_controller.localcluster.verbs import name_problem

    assert (name_problem(rt, name) == "") is ok

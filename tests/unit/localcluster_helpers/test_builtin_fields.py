"""builtin_fields: a built-in kind's unknown fields go, its own stay (the table is the real
server's; hack/gen_builtin_fields.py --check keeps it so in the real lane)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from ascendjob_controller.localcluster import builtin, builtin_fields
from ascendjob_controller.localcluster.goquote import go_json, go_print
from ascendjob_controller.localcluster.resources import ResourceType
from hack.fidelity.corpus import objects as fidelity_objects


def _pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "labels": {"any-key": "v"},
            "annotations": {"x.y/z": "v"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "o", "uid": "u"}],
        },
        "spec": {
            "nodeSelector": {"anything": "goes"},
            "containers": [
                {
                    "name": "c",
                    "image": "busybox",
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "resources": {"limits": {"huawei.com/Ascend910": "1"}},
                    "env": [{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}],
                }
            ],
            "volumes": [{"name": "v", "hostPath": {"path": "/data"}}],
        },
        "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]},
    }


def _served() -> list[ResourceType]:
    kinds = {v for v in vars(builtin).values() if isinstance(v, ResourceType) and v.builtin}
    return sorted(kinds, key=lambda rt: (rt.group, rt.kind))


@pytest.mark.parametrize("rt", _served(), ids=lambda rt: f"{rt.group_version}/{rt.kind}")
def test_every_served_kind_has_its_fields(rt: ResourceType) -> None:
    assert builtin_fields.has_table(rt.group_version, rt.kind)


def test_a_pod_with_only_known_fields_is_untouched() -> None:
    pod = _pod()
    assert builtin_fields.prune_unknown("v1", "Pod", pod) == []
    assert pod == _pod()


def test_unknown_fields_go_with_their_paths_in_document_order() -> None:
    pod = _pod()
    pod["bogus"] = 1
    pod["metadata"]["nope"] = {"deep": True}
    pod["spec"]["字段"] = 1
    pod["spec"]["containers"][0]["imagePullPolicyy"] = "Always"
    pod["spec"]["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["extra"] = "x"
    pod["spec"]["volumes"][0]["hostPath"]["kind"] = "dir"
    pod["status"]["conditions"][0]["why"] = "?"
    unknown = builtin_fields.prune_unknown("v1", "Pod", pod)
    assert unknown == [
        "metadata.nope",
        "spec.containers[0].env[0].valueFrom.fieldRef.extra",
        "spec.containers[0].imagePullPolicyy",
        "spec.volumes[0].hostPath.kind",
        "spec.字段",
        "status.conditions[0].why",
        "bogus",
    ]
    assert pod == _pod()


def test_names_are_case_sensitive() -> None:
    pod = _pod()
    pod["Spec"] = {}
    assert builtin_fields.prune_unknown("v1", "Pod", pod) == ["Spec"]


def test_maps_and_opaque_values_keep_every_key() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    cm["data"] = {"any": "thing", "other.key": "v"}
    cm["binaryData"] = {"b": "AAAA"}
    kept = copy.deepcopy(cm)
    assert builtin_fields.prune_unknown("v1", "ConfigMap", cm) == []
    assert cm == kept


def test_a_crds_schema_keeps_its_own_keywords_and_any_default() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "default": {"whatever": [1, {"a": 2}]},
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"n": {"type": "integer", "minimum": 0}},
            }
        },
    }
    crd = fidelity_objects.crd("xs", "X", schema, group="example.com")
    kept = copy.deepcopy(crd)
    assert (
        builtin_fields.prune_unknown("apiextensions.k8s.io/v1", "CustomResourceDefinition", crd)
        == []
    )
    assert crd == kept
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["bogus"] = 1
    unknown = builtin_fields.prune_unknown(
        "apiextensions.k8s.io/v1", "CustomResourceDefinition", crd
    )
    assert unknown == ["spec.versions[0].schema.openAPIV3Schema.properties.spec.bogus"]
    assert crd == kept


def test_values_of_the_wrong_type_are_left_to_the_decoder() -> None:
    pod = _pod()
    pod["spec"]["containers"] = "not a list"
    pod["metadata"] = None
    assert builtin_fields.prune_unknown("v1", "Pod", pod) == []


def test_a_kind_without_a_table_is_left_alone() -> None:
    body = {"apiVersion": "example.com/v1", "kind": "X", "anything": 1}
    assert builtin_fields.prune_unknown("example.com/v1", "X", body) == []
    assert body["anything"] == 1


@pytest.mark.parametrize(
    ("value", "printed"),
    [
        ({"metadata": {"bogus": 1}}, "map[metadata:map[bogus:1]]"),
        ({"b": [1.5, "x", None, True], "a": {}}, "map[a:map[] b:[1.5 x <nil> true]]"),
        (2.0, "2"),
        (1e-05, "1e-05"),
        (0.0001, "0.0001"),
        (1e21, "1e+21"),
        (2.5e-07, "2.5e-07"),
        (-3, "-3"),
        ("with space", "with space"),
    ],
)
def test_go_print_is_gos_plus_v(value: Any, printed: str) -> None:
    assert go_print(value) == printed


def test_go_json_sorts_keys_and_escapes_as_go() -> None:
    assert go_json({"b": "<&>", "a": ["\u2028", "é"]}) == (
        '{"a":["\\u2028","é"],"b":"\\u003c\\u0026\\u003e"}'
    )


def test_finding_without_dropping_leaves_the_object_as_it_was() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["imagee"] = "x"
    kept = copy.deepcopy(pod)
    found = builtin_fields.prune_unknown("v1", "Pod", pod, drop=False)
    assert found == ["spec.containers[0].imagee"]
    assert pod == kept


def test_a_null_struct_field_is_dropped_as_gos_omitted_zero_value() -> None:
    """kube-apiserver v1.37.2 stores a Service posted with `type: null, selector: null` with
    neither (its type then defaulted) and a ConfigMap's `labels: null` with no label field at
    all; a null map value stays (its type is not in the table)."""
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "labels": None}}
    svc["spec"] = {"ports": [{"port": 80, "name": None}], "type": None, "selector": None}
    svc["data"] = None
    assert builtin_fields.prune_unknown("v1", "Service", svc) == ["data"]
    assert svc == {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "s"},
        "spec": {"ports": [{"port": 80}]},
    }
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": None}}
    builtin_fields.prune_unknown("v1", "ConfigMap", cm)
    assert cm["data"] == {"a": None}
    kept = copy.deepcopy(svc | {"spec": {"type": None}})
    builtin_fields.prune_unknown("v1", "Service", kept, drop=False)
    assert kept["spec"] == {"type": None}

"""Merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch and server-side apply."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import pytest

from ascendjob_controller.localcluster.patch import (
    PatchError,
    apply_patch,
    json_merge_patch,
    json_patch,
    strategic_merge_patch,
)

# --- RFC 7386 appendix A ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ],
)
def test_json_merge_patch_rfc7386_examples(target: Any, patch: Any, expected: Any) -> None:
    before = copy.deepcopy(target)
    assert json_merge_patch(target, patch) == expected
    assert target == before


# --- RFC 6902 appendix A ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("doc", "ops", "expected"),
    [
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/baz", "value": "qux"}],
            {"foo": "bar", "baz": "qux"},
        ),
        (
            {"foo": ["bar", "baz"]},
            [{"op": "add", "path": "/foo/1", "value": "qux"}],
            {"foo": ["bar", "qux", "baz"]},
        ),
        ({"baz": "qux", "foo": "bar"}, [{"op": "remove", "path": "/baz"}], {"foo": "bar"}),
        (
            {"foo": ["bar", "qux", "baz"]},
            [{"op": "remove", "path": "/foo/1"}],
            {"foo": ["bar", "baz"]},
        ),
        (
            {"baz": "qux", "foo": "bar"},
            [{"op": "replace", "path": "/baz", "value": "boo"}],
            {"baz": "boo", "foo": "bar"},
        ),
        (
            {"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
            [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}],
            {"foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}},
        ),
        (
            {"foo": ["all", "grass", "cows", "eat"]},
            [{"op": "move", "from": "/foo/1", "path": "/foo/3"}],
            {"foo": ["all", "cows", "eat", "grass"]},
        ),
        (
            {"baz": "qux", "foo": ["a", 2, "c"]},
            [
                {"op": "test", "path": "/baz", "value": "qux"},
                {"op": "test", "path": "/foo/1", "value": 2},
            ],
            {"baz": "qux", "foo": ["a", 2, "c"]},
        ),
        (
            {"foo": "bar"},
            [{"op": "add", "path": "/child", "value": {"grandchild": {}}}],
            {"foo": "bar", "child": {"grandchild": {}}},
        ),
        (
            {"foo": ["bar"]},
            [{"op": "add", "path": "/foo/-", "value": ["abc", "def"]}],
            {"foo": ["bar", ["abc", "def"]]},
        ),
        ({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}], {"/": 9, "~1": 10}),
        (
            {"a/b": 1, "m~n": 2},
            [{"op": "remove", "path": "/a~1b"}, {"op": "replace", "path": "/m~0n", "value": 3}],
            {"m~n": 3},
        ),
        (
            {"a": {"b": 1}},
            [{"op": "copy", "from": "/a", "path": "/c"}],
            {"a": {"b": 1}, "c": {"b": 1}},
        ),
        ({"a": 1}, [{"op": "replace", "path": "", "value": [1]}], [1]),
        ({"foo": 1}, [{"op": "test", "path": "/foo", "value": 1.0}], {"foo": 1}),
    ],
)
@pytest.mark.parametrize("fresh_values", [False, True])
def test_json_patch_rfc6902_examples(
    doc: Any, ops: list[Any], expected: Any, fresh_values: bool
) -> None:
    before = copy.deepcopy(doc)
    assert json_patch(doc, copy.deepcopy(ops), fresh_values=fresh_values) == expected
    assert doc == before


def test_json_patch_copies_op_values_unless_they_are_fresh() -> None:
    """The default leaves the caller's ops alone; `fresh_values` (a body decoded for this
    call) places the op's own object, which is what saves the deep copy."""
    value = {"phase": "Running", "conditions": [{"type": "Ready"}]}
    ops = [{"op": "add", "path": "/status", "value": value}]
    copied = json_patch({}, ops)
    assert copied == {"status": value} and copied["status"] is not value
    copied["status"]["conditions"].append({"type": "Later"})
    assert value == {"phase": "Running", "conditions": [{"type": "Ready"}]}
    placed = json_patch({}, ops, fresh_values=True)
    assert placed["status"] is value


def test_json_patch_fresh_values_then_copy_do_not_alias() -> None:
    """A value placed uncopied and then copied elsewhere in the same patch is still two
    independent objects: `copy` deep-copies from the document."""
    ops = [
        {"op": "add", "path": "/a", "value": {"b": 1}},
        {"op": "copy", "from": "/a", "path": "/c"},
        {"op": "replace", "path": "/c/b", "value": 2},
    ]
    assert json_patch({}, ops, fresh_values=True) == {"a": {"b": 1}, "c": {"b": 2}}


def test_json_patch_copy_is_independent() -> None:
    out = json_patch(
        {"a": {"b": 1}},
        [
            {"op": "copy", "from": "/a", "path": "/c"},
            {"op": "replace", "path": "/c/b", "value": 2},
        ],
    )
    assert out == {"a": {"b": 1}, "c": {"b": 2}}


@pytest.mark.parametrize(
    ("doc", "ops"),
    [
        ({"foo": "bar"}, [{"op": "test", "path": "/baz", "value": "qux"}]),  # A.9-ish: missing
        ({"baz": "qux"}, [{"op": "test", "path": "/baz", "value": "bar"}]),  # A.9
        ({"foo": "bar"}, [{"op": "add", "path": "/baz/bat", "value": "qux"}]),  # A.12
        ({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/3", "value": 1}]),
        ({"foo": ["bar"]}, [{"op": "remove", "path": "/foo/01"}]),
        ({"foo": 1}, [{"op": "remove", "path": "/bar"}]),
        ({"foo": 1}, [{"op": "replace", "path": "/bar", "value": 2}]),
        ({"foo": 1}, [{"op": "frobnicate", "path": "/foo"}]),
        ({"foo": 1}, [{"op": "add", "path": "/x"}]),
        ({"foo": 1}, [{"op": "move", "path": "/x"}]),
        ({"foo": {"a": 1}}, [{"op": "move", "from": "/foo", "path": "/foo/a/b"}]),
        ({"foo": 1}, [{"op": "add", "path": "foo", "value": 1}]),
        ({"foo": 1}, {"op": "add"}),
        ({"foo": True}, [{"op": "test", "path": "/foo", "value": 1}]),
        ({"foo": 1}, [{"op": "add", "path": "/foo/x", "value": 1}]),
    ],
)
def test_json_patch_errors(doc: Any, ops: Any) -> None:
    with pytest.raises(PatchError):
        json_patch(doc, ops)


def test_json_patch_is_atomic() -> None:
    doc = {"a": 1}
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "add", "path": "/b", "value": 2}, {"op": "remove", "path": "/zz"}])
    assert doc == {"a": 1}


# --- strategic merge patch ----------------------------------------------------------------


def pod() -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "p",
            "labels": {"app": "a", "tier": "t"},
            "finalizers": ["x/one"],
            "ownerReferences": [{"uid": "u1", "kind": "AscendJob", "name": "j"}],
        },
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "img:1",
                    "command": ["a", "b"],
                    "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                    "ports": [{"containerPort": 2222, "name": "p"}],
                    "volumeMounts": [{"name": "v", "mountPath": "/data"}],
                },
                {"name": "side", "image": "side:1"},
            ],
            "volumes": [{"name": "v", "emptyDir": {}}],
            "tolerations": [{"key": "k1", "operator": "Exists"}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "False"}]},
    }


def test_smp_merges_containers_by_name_and_env_by_name() -> None:
    original = pod()
    patch = {
        "spec": {
            "containers": [
                {
                    "name": "main",
                    "image": "img:2",
                    "env": [{"name": "B", "value": "20"}, {"name": "C", "value": "3"}],
                },
                {"name": "new", "image": "new:1"},
            ]
        }
    }
    out = strategic_merge_patch(original, patch, "Pod")
    assert original == pod()  # not mutated
    main, side, new = out["spec"]["containers"]
    assert main["image"] == "img:2"
    assert main["command"] == ["a", "b"]
    assert main["env"] == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "20"},
        {"name": "C", "value": "3"},
    ]
    assert side == {"name": "side", "image": "side:1"}
    assert new == {"name": "new", "image": "new:1"}


def test_smp_non_keyed_lists_and_atomic_lists_replace() -> None:
    out = strategic_merge_patch(
        pod(),
        {
            "spec": {
                "tolerations": [{"key": "k2"}],
                "containers": [{"name": "main", "command": ["z"]}],
            }
        },
        "Pod",
    )
    assert out["spec"]["tolerations"] == [{"key": "k2"}]
    assert out["spec"]["containers"][0]["command"] == ["z"]


def test_smp_ports_volume_mounts_volumes_owner_refs_conditions() -> None:
    out = strategic_merge_patch(
        pod(),
        {
            "metadata": {"ownerReferences": [{"uid": "u2", "kind": "X", "name": "y"}]},
            "spec": {
                "containers": [
                    {
                        "name": "main",
                        "ports": [
                            {"containerPort": 2222, "protocol": "TCP"},
                            {"containerPort": 80},
                        ],
                        "volumeMounts": [{"mountPath": "/data", "readOnly": True}],
                    }
                ],
                "volumes": [{"name": "w", "emptyDir": {}}],
            },
            "status": {
                "conditions": [
                    {"type": "Ready", "status": "True"},
                    {"type": "Initialized", "status": "True"},
                ]
            },
        },
        "Pod",
    )
    main = out["spec"]["containers"][0]
    assert main["ports"] == [
        {"containerPort": 2222, "name": "p", "protocol": "TCP"},
        {"containerPort": 80},
    ]
    assert main["volumeMounts"] == [{"name": "v", "mountPath": "/data", "readOnly": True}]
    assert [v["name"] for v in out["spec"]["volumes"]] == ["v", "w"]
    assert [r["uid"] for r in out["metadata"]["ownerReferences"]] == ["u1", "u2"]
    assert out["status"]["conditions"] == [
        {"type": "Ready", "status": "True"},
        {"type": "Initialized", "status": "True"},
    ]


def test_smp_service_ports_merge_by_port() -> None:
    svc = {"kind": "Service", "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443}]}}
    out = strategic_merge_patch(svc, {"spec": {"ports": [{"port": 80, "name": "http"}]}}, "Service")
    assert out["spec"]["ports"] == [{"port": 80, "targetPort": 8080, "name": "http"}, {"port": 443}]


def test_smp_deployment_template_containers_merge() -> None:
    dep = {
        "kind": "Deployment",
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "a"}},
            "template": {
                "spec": {
                    "containers": [
                        {"name": "c", "image": "i:1", "env": [{"name": "X", "value": "1"}]}
                    ]
                }
            },
        },
    }
    out = strategic_merge_patch(
        dep,
        {
            "spec": {
                "replicas": 3,
                "template": {
                    "spec": {"containers": [{"name": "c", "env": [{"name": "Y", "value": "2"}]}]}
                },
            }
        },
        "Deployment",
    )
    c = out["spec"]["template"]["spec"]["containers"][0]
    assert c["image"] == "i:1"
    assert [e["name"] for e in c["env"]] == ["X", "Y"]
    assert out["spec"]["replicas"] == 3
    assert out["spec"]["selector"] == {"matchLabels": {"app": "a"}}


def test_smp_null_deletes_and_maps_merge() -> None:
    out = strategic_merge_patch(pod(), {"metadata": {"labels": {"tier": None, "new": "n"}}}, "Pod")
    assert out["metadata"]["labels"] == {"app": "a", "new": "n"}
    cm = {"kind": "ConfigMap", "data": {"a": "1", "b": "2"}}
    assert strategic_merge_patch(cm, {"data": {"a": None, "c": "3"}}, "ConfigMap") == {
        "kind": "ConfigMap",
        "data": {"b": "2", "c": "3"},
    }


def test_smp_finalizers_merge_as_set_and_delete_from_primitive_list() -> None:
    out = strategic_merge_patch(pod(), {"metadata": {"finalizers": ["x/two", "x/one"]}}, "Pod")
    assert out["metadata"]["finalizers"] == ["x/one", "x/two"]
    out2 = strategic_merge_patch(
        out, {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x/one"]}}, "Pod"
    )
    assert out2["metadata"]["finalizers"] == ["x/two"]


def test_smp_patch_delete_directive_in_list_and_map() -> None:
    out = strategic_merge_patch(
        pod(),
        {
            "spec": {
                "containers": [
                    {"name": "side", "$patch": "delete"},
                    {"name": "main", "env": [{"name": "A", "$patch": "delete"}]},
                ]
            }
        },
        "Pod",
    )
    assert [c["name"] for c in out["spec"]["containers"]] == ["main"]
    assert out["spec"]["containers"][0]["env"] == [{"name": "B", "value": "2"}]
    out2 = strategic_merge_patch(pod(), {"status": {"$patch": "delete"}}, "Pod")
    assert "status" not in out2


def test_smp_patch_replace_directive() -> None:
    out = strategic_merge_patch(
        pod(),
        {"spec": {"containers": [{"name": "only", "image": "o"}, {"$patch": "replace"}]}},
        "Pod",
    )
    assert out["spec"]["containers"] == [{"name": "only", "image": "o"}]
    out2 = strategic_merge_patch(
        pod(), {"metadata": {"labels": {"z": "1", "$patch": "replace"}}}, "Pod"
    )
    assert out2["metadata"]["labels"] == {"z": "1"}


def test_smp_retain_keys() -> None:
    dep = {
        "kind": "Deployment",
        "spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}},
    }
    out = strategic_merge_patch(
        dep, {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}, "Deployment"
    )
    assert out["spec"]["strategy"] == {"type": "Recreate"}


def test_smp_kubectl_apply_style_patch_with_set_element_order() -> None:
    # What kubectl apply sends when the user reorders env, changes one entry and drops another.
    patch = {
        "metadata": {"annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
        "spec": {
            "$setElementOrder/containers": [{"name": "main"}, {"name": "side"}],
            "containers": [
                {
                    "$setElementOrder/env": [{"name": "B"}, {"name": "A"}],
                    "name": "main",
                    "env": [{"name": "B", "value": "22"}],
                }
            ],
        },
    }
    out = strategic_merge_patch(pod(), patch, "Pod")
    main = out["spec"]["containers"][0]
    assert main["env"] == [{"name": "B", "value": "22"}, {"name": "A", "value": "1"}]
    assert "$setElementOrder/env" not in main
    assert (
        out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] == "{}"
    )


def test_smp_set_element_order_keeps_unmentioned_items_in_place() -> None:
    original = {"spec": {"volumes": [{"name": "a"}, {"name": "server"}, {"name": "b"}]}}
    out = strategic_merge_patch(
        original, {"spec": {"$setElementOrder/volumes": [{"name": "b"}, {"name": "a"}]}}, "Pod"
    )
    assert [v["name"] for v in out["spec"]["volumes"]] == ["b", "server", "a"]


def test_smp_new_subtree_directives_are_processed() -> None:
    out = strategic_merge_patch(
        {},
        {"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}], "x": None}]}},
        "Pod",
    )
    assert out == {"spec": {"containers": [{"name": "a", "env": [{"name": "X", "value": "1"}]}]}}


@pytest.mark.parametrize(
    "patch",
    [
        {"spec": {"containers": [{"image": "no-name"}]}},
        {"spec": {"containers": ["scalar"]}},
        {"spec": {"$patch": "bogus"}},
        {"metadata": {"$retainKeys": "x"}},
        {"metadata": {"$setElementOrder/finalizers": "x"}},
    ],
)
def test_smp_errors(patch: dict[str, Any]) -> None:
    with pytest.raises(PatchError):
        strategic_merge_patch(pod(), patch, "Pod")


# --- server-side apply --------------------------------------------------------------------

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def cm(data: dict[str, str], labels: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "c", "namespace": "default"}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


def test_apply_creates_with_managed_fields() -> None:
    out = apply_patch(None, cm({"a": "1"}, {"app": "x"}), "kubectl", True, "ConfigMap", now=NOW)
    assert out["data"] == {"a": "1"}
    [entry] = out["metadata"]["managedFields"]
    assert entry == {
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "v1",
        "time": "2026-01-02T03:04:05Z",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}},
    }


def test_apply_updates_and_prunes_fields_the_manager_dropped() -> None:
    first = apply_patch(None, cm({"a": "1", "b": "2"}), "kubectl", True, "ConfigMap", now=NOW)
    first["data"]["other"] = "kept"  # set by some other writer, not tracked by kubectl's entry
    second = apply_patch(first, cm({"a": "10"}), "kubectl", True, "ConfigMap", now=NOW)
    assert second["data"] == {"a": "10", "other": "kept"}
    assert len(second["metadata"]["managedFields"]) == 1
    assert second["metadata"]["managedFields"][0]["fieldsV1"] == {"f:data": {"f:a": {}}}


def test_apply_two_managers_share_fields_without_pruning_each_other() -> None:
    one = apply_patch(None, cm({"a": "1", "b": "2"}), "m1", True, "ConfigMap", now=NOW)
    two = apply_patch(one, cm({"b": "2", "c": "3"}), "m2", True, "ConfigMap", now=NOW)
    assert [e["manager"] for e in two["metadata"]["managedFields"]] == ["m1", "m2"]
    three = apply_patch(two, cm({"a": "1"}), "m1", True, "ConfigMap", now=NOW)
    assert three["data"] == {"a": "1", "b": "2", "c": "3"}  # b still owned by m2
    four = apply_patch(three, cm({"c": "3"}), "m2", True, "ConfigMap", now=NOW)
    assert four["data"] == {"a": "1", "c": "3"}


def test_apply_builtin_merges_lists_by_key_and_prunes_list_items() -> None:
    base = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]},
    }
    first = apply_patch(None, base, "mgr", True, "Pod", now=NOW)
    fields = first["metadata"]["managedFields"][0]["fieldsV1"]
    assert fields["f:spec"]["f:containers"]['k:{"name":"a"}'] == {
        ".": {},
        "f:image": {},
        "f:name": {},
    }
    applied = copy.deepcopy(base)
    applied["spec"]["containers"] = [{"name": "a", "image": "a:2"}]
    second = apply_patch(first, applied, "mgr", True, "Pod", now=NOW)
    assert second["spec"]["containers"] == [{"name": "a", "image": "a:2"}]


def test_apply_custom_resource_replaces_lists_and_merges_maps() -> None:
    job = {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": "j", "namespace": "default", "uid": "u", "resourceVersion": "5"},
        "spec": {"replicaSpecs": {"Worker": {"replicas": 1}}, "list": [1, 2]},
        "status": {"x": 1},
    }
    applied = {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": "j"},
        "spec": {"replicaSpecs": {"Worker": {"replicas": 2}}, "list": [3]},
    }
    out = apply_patch(job, applied, "kubectl", False, "AscendJob", now=NOW)
    assert out["spec"] == {"replicaSpecs": {"Worker": {"replicas": 2}}, "list": [3]}
    assert out["status"] == {"x": 1}
    assert out["metadata"]["uid"] == "u"
    assert job["spec"]["list"] == [1, 2]
    fields = out["metadata"]["managedFields"][0]["fieldsV1"]
    assert fields == {"f:spec": {"f:list": {}, "f:replicaSpecs": {"f:Worker": {"f:replicas": {}}}}}


def test_apply_keeps_other_operation_entries() -> None:
    existing = cm({"a": "1"})
    existing["metadata"]["managedFields"] = [
        {
            "manager": "ctrl",
            "operation": "Update",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}},
        }
    ]
    out = apply_patch(existing, cm({"b": "2"}), "kubectl", True, "ConfigMap", now=NOW)
    assert [e["manager"] for e in out["metadata"]["managedFields"]] == ["ctrl", "kubectl"]
    assert out["data"] == {"a": "1", "b": "2"}


@pytest.mark.parametrize(
    ("applied", "manager"),
    [
        ({"kind": "ConfigMap", "metadata": {"name": "c"}}, "m"),
        ({"apiVersion": "v1", "metadata": {"name": "c"}}, "m"),
        (cm({}), ""),
    ],
)
def test_apply_errors(applied: dict[str, Any], manager: str) -> None:
    with pytest.raises(PatchError):
        apply_patch(None, applied, manager, True, "ConfigMap")


def test_apply_prune_keeps_untracked_siblings_and_metadata() -> None:
    first = apply_patch(None, cm({"a": "1"}, {"app": "x"}), "kubectl", True, "ConfigMap", now=NOW)
    first["metadata"]["uid"] = "u1"
    first["metadata"]["labels"]["added-by-put"] = "y"
    second = apply_patch(first, cm({"a": "1"}), "kubectl", True, "ConfigMap", now=NOW)
    assert second["metadata"]["name"] == "c"
    assert second["metadata"]["uid"] == "u1"
    assert second["metadata"]["labels"] == {"added-by-put": "y"}
    third = apply_patch(
        apply_patch(None, cm({"a": "1"}, {"app": "x"}), "k", True, "ConfigMap", now=NOW),
        cm({"a": "1"}),
        "k",
        True,
        "ConfigMap",
        now=NOW,
    )
    assert "labels" not in third["metadata"]


# --- owned targets: the server patches its own fresh copy in place --------------------------

_POD = {
    "metadata": {"name": "p", "labels": {"a": "1"}},
    "spec": {"containers": [{"name": "c", "image": "x"}]},
    "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False"}]},
}


@pytest.mark.parametrize(
    ("apply", "patch"),
    [
        (json_merge_patch, {"status": {"phase": "Running", "podIP": "10.0.0.1"}}),
        (json_merge_patch, {"metadata": {"labels": {"a": None, "b": "2"}}}),
        (json_patch, [{"op": "replace", "path": "/status/phase", "value": "Running"}]),
        (
            lambda target, patch, **kw: strategic_merge_patch(target, patch, "Pod", **kw),
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        ),
    ],
)
def test_an_owned_target_gives_the_same_result_and_only_then_is_changed(
    apply: Any, patch: Any
) -> None:
    pristine = copy.deepcopy(_POD)
    kept = copy.deepcopy(_POD)
    expected = apply(kept, patch)
    assert kept == pristine, "not owned: the target is left as it was"
    owned = copy.deepcopy(_POD)
    assert apply(owned, patch, owned=True) == expected

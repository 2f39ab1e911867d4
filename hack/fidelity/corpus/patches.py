"""Every patch type: JSON merge, strategic merge, JSON patch, and server-side apply."""

from __future__ import annotations

from hack.fidelity.corpus.objects import configmap, pod
from hack.fidelity.steps import Step, case, get, ns_path, patch, post, prep, put

APPLY_CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
APPLY_CM_B = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": "c"},
    "data": {"a": "2"},
}

CASES = [
    case(
        "patch-merge-null-deletes",
        prep(post("configmaps", configmap("c", {"a": "1", "b": "2"}))),
        patch("configmaps/c", {"data": {"a": None, "c": "3"}}),
    ),
    case(
        "patch-merge-replaces-lists",
        prep(post("pods", pod("p", tolerations=[{"key": "a", "operator": "Exists"}]))),
        patch(
            "pods/p",
            {"spec": {"tolerations": [{"key": "b", "operator": "Exists"}]}},
            pick=("code", "message", "spec.tolerations"),
        ),
    ),
    case(
        "patch-strategic-merges-containers-by-name",
        prep(post("pods", pod("p", labels={"keep": "me"}))),
        patch(
            "pods/p",
            {
                "metadata": {"labels": {"new": "one"}},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.37"}]},
            },
            "strategic",
            pick=("metadata.labels", "spec.containers"),
        ),
    ),
    case(
        "patch-strategic-delete-directive",
        prep(post("configmaps", configmap("c", {"a": "1"}, labels={"x": "1", "y": "2"}))),
        patch(
            "configmaps/c",
            {"metadata": {"labels": {"x": None}}},
            "strategic",
            pick=("metadata.labels",),
        ),
        patch(
            "configmaps/c",
            {"metadata": {"finalizers": ["a.example.com/f"]}},
            "strategic",
            pick=("metadata.finalizers",),
        ),
        patch(
            "configmaps/c",
            {"metadata": {"$deleteFromPrimitiveList/finalizers": ["a.example.com/f"]}},
            "strategic",
            pick=("metadata.finalizers",),
        ),
    ),
    case(
        "patch-json-ops",
        prep(post("configmaps", configmap("c", {"a": "1"}))),
        patch(
            "configmaps/c",
            [
                {"op": "add", "path": "/data/b", "value": "2"},
                {"op": "replace", "path": "/data/a", "value": "one"},
                {"op": "remove", "path": "/data/b"},
                {"op": "copy", "from": "/data/a", "path": "/data/c"},
            ],
            "json",
            pick=("data",),
        ),
    ),
    case(
        "patch-json-test-fails-422",
        prep(post("configmaps", configmap("c", {"a": "1"}))),
        patch("configmaps/c", [{"op": "test", "path": "/data/a", "value": "2"}], "json"),
    ),
    case(
        "patch-json-missing-path-422",
        prep(post("configmaps", configmap("c", {"a": "1"}))),
        patch("configmaps/c", [{"op": "remove", "path": "/data/zzz"}], "json"),
    ),
    case(
        "patch-missing-object-404",
        patch("configmaps/nope", {"data": {"a": "1"}}),
    ),
    case(
        "patch-unsupported-content-type-415",
        prep(post("configmaps", configmap("c"))),
        Step("PATCH", ns_path("configmaps/c"), {"data": {}}, content_type="application/xml"),
    ),
    case(
        "apply-requires-field-manager-422",
        patch("configmaps/c", APPLY_CM, "apply"),
    ),
    case(
        "apply-creates-with-managed-fields",
        patch("configmaps/c?fieldManager=alice", APPLY_CM, "apply"),
        get("configmaps/c", pick=("metadata.managedFields", "data")),
    ),
    case(
        "apply-conflict-409-then-force",
        prep(patch("configmaps/c?fieldManager=alice", APPLY_CM, "apply")),
        patch("configmaps/c?fieldManager=bob", APPLY_CM_B, "apply"),
        patch(
            "configmaps/c?fieldManager=bob&force=true",
            APPLY_CM_B,
            "apply",
            pick=("data", "metadata.managedFields"),
        ),
    ),
    case(
        "apply-same-value-shared-ownership",
        prep(patch("configmaps/c?fieldManager=alice", APPLY_CM, "apply")),
        patch("configmaps/c?fieldManager=bob", APPLY_CM, "apply", pick=("metadata.managedFields",)),
    ),
    case(
        "apply-drops-fields-no-longer-applied",
        prep(
            patch(
                "configmaps/c?fieldManager=alice",
                {**APPLY_CM, "data": {"a": "1", "b": "2"}},
                "apply",
            )
        ),
        patch("configmaps/c?fieldManager=alice", APPLY_CM, "apply", pick=("data",)),
    ),
    case(
        "apply-conflict-with-update-manager",
        prep(post("configmaps", configmap("c", {"a": "0"}))),
        patch("configmaps/c?fieldManager=alice", APPLY_CM, "apply"),
    ),
    case(
        "managed-fields-on-create-and-update",
        post(
            "configmaps?fieldManager=maker",
            configmap("c", {"a": "1"}, labels={"l": "1"}),
            pick=("metadata.managedFields",),
        ),
        patch(
            "configmaps/c?fieldManager=patcher",
            {"data": {"b": "2"}},
            pick=("metadata.managedFields",),
        ),
        put(
            "configmaps/c",
            configmap("c", {"b": "2"}, labels={"l": "1"}),
            pick=("metadata.managedFields",),
        ),
    ),
    case(
        "apply-pod-then-update-container",
        patch(
            "pods/p?fieldManager=alice",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "main", "image": "busybox:1.36"}]},
            },
            "apply",
            pick=("metadata.managedFields", "spec.containers"),
        ),
    ),
    case(
        "apply-invalid-body-400",
        patch(
            "configmaps/c?fieldManager=alice",
            {"kind": "ConfigMap", "metadata": {"name": "c"}},
            "apply",
        ),
    ),
]

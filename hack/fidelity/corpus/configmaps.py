"""ConfigMaps: CRUD, optimistic concurrency, immutability, unconditional updates."""

from __future__ import annotations

from hack.fidelity.corpus.objects import configmap
from hack.fidelity.steps import case, delete, get, patch, post, prep, put

CASES = [
    case(
        "configmap-crud",
        post("configmaps", configmap("c", {"a": "1"}), save={"rv": "metadata.resourceVersion"}),
        get("configmaps/c"),
        put(
            "configmaps/c",
            {**configmap("c", {"a": "2"}), "metadata": {"name": "c", "resourceVersion": "{rv}"}},
        ),
        get("configmaps/c"),
        delete("configmaps/c"),
        get("configmaps/c"),
    ),
    case(
        "configmap-stale-update-409",
        prep(post("configmaps", configmap("c"), save={"rv": "metadata.resourceVersion"})),
        prep(patch("configmaps/c", {"data": {"k": "changed"}})),
        put(
            "configmaps/c",
            {**configmap("c", {"k": "x"}), "metadata": {"name": "c", "resourceVersion": "{rv}"}},
        ),
    ),
    case(
        "configmap-unconditional-put",
        prep(post("configmaps", configmap("c"))),
        put("configmaps/c", configmap("c", {"k": "unconditional"})),
    ),
    case(
        "configmap-noop-update-keeps-rv",
        prep(post("configmaps", configmap("c"), save={"rv": "metadata.resourceVersion"})),
        patch("configmaps/c", {"data": {"k": "v"}}, pick=("metadata.resourceVersion",)),
        get("configmaps/c", pick=("metadata.resourceVersion",)),
    ),
    case(
        "configmap-immutable",
        post("configmaps", {**configmap("c"), "immutable": True}),
        patch("configmaps/c", {"data": {"k": "other"}}),
        patch("configmaps/c", {"metadata": {"labels": {"ok": "yes"}}}, pick=("metadata.labels",)),
    ),
    case(
        "configmap-put-missing-404",
        put("configmaps/none", configmap("none")),
    ),
    case(
        "configmap-binary-data",
        post(
            "configmaps",
            {**configmap("c", {"text": "t"}), "binaryData": {"bin": "AAEC"}},
            pick=("data", "binaryData"),
        ),
    ),
    case(
        "configmap-invalid-key-422",
        post("configmaps", configmap("c", {"bad key!": "v"})),
    ),
    case(
        "configmap-dry-run-create",
        post("configmaps?dryRun=All", configmap("c"), pick=("metadata.name", "data")),
        get("configmaps/c", pick=("code",)),
    ),
    case(
        "configmap-uid-precondition-on-update",
        prep(post("configmaps", configmap("c"))),
        put(
            "configmaps/c",
            {
                **configmap("c"),
                "metadata": {"name": "c", "uid": "00000000-0000-0000-0000-000000000000"},
            },
        ),
    ),
    # A null decodes to Go's zero value, which an omitempty field leaves out: nothing is
    # stored, nothing is managed, and a Service's null type is defaulted.
    case(
        "builtin-null-fields-dropped",
        post("configmaps", configmap("c1", data=None, labels=None, annotations=None)),
        post(
            "services",
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "s1", "labels": None},
                "spec": {"ports": [{"port": 80, "name": None}], "type": None, "selector": None},
            },
            pick=("spec.type", "spec.selector", "spec.ports", "metadata.labels"),
        ),
    ),
]

"""AscendJob custom resources, and a CRD of our own for schema defaults and pruning."""

from __future__ import annotations

from typing import Any

from hack.fidelity.corpus.objects import acjob, crd
from hack.fidelity.steps import (
    Step,
    Until,
    acj,
    case,
    delete,
    get,
    patch,
    post,
    prep,
    put,
    wait_for,
)

WIDGET_SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer"},
                "color": {"type": "string"},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}
WIDGET_SCHEMA_DEFAULTED = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer"},
                "color": {"type": "string", "default": "blue"},
            },
        },
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


#: WIDGET_SCHEMA with `size` capped at 10: a widget stored with size 50 is invalid under it.
WIDGET_SCHEMA_CAPPED = {
    **WIDGET_SCHEMA,
    "properties": {
        **WIDGET_SCHEMA["properties"],
        "spec": {
            "type": "object",
            "properties": {
                "size": {"type": "integer", "maximum": 10},
                "color": {"type": "string"},
            },
        },
    },
}


def _widgets(plural: str) -> str:
    return f"/apis/fidelity.example.com/v1/namespaces/{{ns}}/{plural}"


def _crd_path(plural: str) -> str:
    return f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{plural}.fidelity.example.com"


def _established_widgets(plural: str) -> tuple[Step, Step]:
    """Unscored set-up: a Widget CRD with WIDGET_SCHEMA, and the wait until it is served."""
    return (
        prep(
            post(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                crd(plural, "Widget", WIDGET_SCHEMA),
            )
        ),
        prep(
            wait_for(
                _crd_path(plural),
                Until(equals=("status.conditions[type=Established].status", "True")),
            )
        ),
    )


def _schema_swap(plural: str, schema: dict[str, object]) -> Step:
    """A scored PATCH of the Widget CRD's one version to `schema` (the new generation)."""
    version = crd("x", "Widget", schema)["spec"]["versions"][0]
    return patch(
        _crd_path(plural), {"spec": {"versions": [version]}}, pick=("metadata.generation",)
    )


def _named(plural: str, **names: object) -> dict[str, Any]:
    """A Gizmo CRD (example.com) with these spec.names beside the helper's."""
    body = crd(plural, "Gizmo", {"type": "object"}, group="example.com")
    body["spec"]["names"].update(names)
    return body


def _widget(name: str, **spec: object) -> dict[str, object]:
    return {
        "apiVersion": "fidelity.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": spec,
    }


CASES = [
    case(
        "acjob-crud",
        post(acj("ascendjobs"), acjob("j"), save={"rv": "metadata.resourceVersion"}),
        get(acj("ascendjobs/j")),
        put(
            acj("ascendjobs/j"),
            {**acjob("j", 2), "metadata": {"name": "j", "resourceVersion": "{rv}"}},
        ),
        get(acj("ascendjobs"), pick=("kind", "items[*].metadata.name", "items[*].spec")),
        delete(acj("ascendjobs/j")),
        get(acj("ascendjobs/j")),
    ),
    case(
        "acjob-unconditional-put-422",
        prep(post(acj("ascendjobs"), acjob("j"))),
        put(acj("ascendjobs/j"), acjob("j", 3)),
    ),
    case(
        "acjob-status-subresource-and-generation",
        prep(post(acj("ascendjobs"), acjob("j"))),
        patch(
            acj("ascendjobs/j/status"),
            {"status": {"conditions": [{"type": "Created", "status": "True"}]}},
            pick=("metadata.generation", "status"),
        ),
        patch(
            acj("ascendjobs/j"),
            {"spec": {"replicaSpecs": {"Master": {"replicas": 2}}}},
            pick=("metadata.generation",),
        ),
        patch(
            acj("ascendjobs/j"),
            {"status": {"restartCount": 9}},
            pick=("metadata.generation", "status"),
        ),
        patch(
            acj("ascendjobs/j"), {"metadata": {"labels": {"x": "y"}}}, pick=("metadata.generation",)
        ),
    ),
    # A status write is validated against the status schema alone, rooted at the status:
    # the field is under `status`, the message's path starts below it. The patch's numbers
    # are read as Go reads them (2^70 is a float64).
    case(
        "acjob-status-schema-errors-422",
        prep(post(acj("ascendjobs"), acjob("j"))),
        *(
            patch(
                acj("ascendjobs/j/status"),
                {
                    "status": {
                        "conditions": [
                            {"type": "Created", "status": "True", "lastTransitionTime": value}
                        ]
                    }
                },
            )
            for value in (5, 5.5, True, 2**70, "yesterday")
        ),
        patch(acj("ascendjobs/j/status"), {"status": {"conditions": [{"type": "Created"}]}}),
        patch(
            acj("ascendjobs/j/status"), {"status": {"replicaStatuses": {"Master": {"active": "1"}}}}
        ),
    ),
    case(
        "acjob-finalizer-delete-bumps-generation",
        post(
            acj("ascendjobs"),
            acjob("j", finalizers=["fidelity.example.com/hold"]),
            pick=("metadata.generation",),
        ),
        delete(acj("ascendjobs/j")),
        get(
            acj("ascendjobs/j"),
            pick=("metadata.generation", "metadata.deletionTimestamp", "metadata.finalizers"),
        ),
        patch(acj("ascendjobs/j"), {"metadata": {"finalizers": None}}),
        get(acj("ascendjobs/j"), pick=("code",)),
    ),
    case(
        "acjob-validation-422",
        post(acj("ascendjobs"), acjob("j", replicas=-1)),
        post(acj("ascendjobs"), acjob("j", replicas="two")),
    ),
    case(
        "acjob-unknown-field-pruned-with-warning",
        post(
            acj("ascendjobs"),
            {**acjob("j"), "spec": {**acjob("j")["spec"], "bogus": 1}},
            pick=("spec",),
            headers=("Warning",),
        ),
    ),
    # spec.names: DNS-1035 labels, kind and listKind in mixed case, and not the same (dry
    # runs: nothing is created).
    case(
        "crd-bad-names-422",
        *[
            post(
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions?dryRun=All",
                _named(plural, **names),
                pick=("metadata.name",),
            )
            for plural, names in (
                ("g{run}gizmos", {"singular": "Gizmo"}),
                ("G{run}gizmos", {}),
                ("g{run}.gizmos", {}),
                ("g{run}gizmos", {"kind": "gizmo"}),
                ("g{run}gizmos", {"listKind": "gizmo list", "shortNames": ["G", "ok"]}),
                ("g{run}gizmos", {"listKind": "Gizmo", "categories": ["Bad Cat"]}),
                ("g{run}gizmos", {"singular": "g" * 64}),
            )
        ],
    ),
    case(
        "acjob-strict-field-validation-400",
        post(acj("ascendjobs?fieldValidation=Strict"), {**acjob("j"), "spec": {"bogus": 1}}),
    ),
    # A patch under Strict: the patcher's 422 quotes the patched object, keys sorted as Go
    # writes a map; the same patch without Strict is pruned with a Warning.
    case(
        "acjob-strict-patch-422",
        prep(post(acj("ascendjobs"), acjob("j"))),
        patch(acj("ascendjobs/j?fieldValidation=Strict"), {"spec": {"bogus": 1}}),
        patch(acj("ascendjobs/j"), {"spec": {"bogus": 1}}, headers=("Warning",), pick=("spec",)),
    ),
    case(
        "acjob-strategic-merge-415",
        prep(post(acj("ascendjobs"), acjob("j"))),
        patch(acj("ascendjobs/j"), {"metadata": {"labels": {"a": "b"}}}, "strategic"),
    ),
    case(
        "acjob-json-patch",
        prep(post(acj("ascendjobs"), acjob("j"))),
        patch(
            acj("ascendjobs/j"),
            [{"op": "replace", "path": "/spec/replicaSpecs/Master/replicas", "value": 4}],
            "json",
            pick=("spec.replicaSpecs.Master.replicas", "metadata.generation"),
        ),
    ),
    case(
        "acjob-status-on-create-dropped",
        post(acj("ascendjobs"), {**acjob("j"), "status": {"restartCount": 3}}, pick=("status",)),
    ),
    case(
        "crd-defaults-applied-on-create-and-read",
        post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            crd("widgets{run}a", "Widget", WIDGET_SCHEMA),
            pick=("metadata.name",),
        ),
        wait_for(
            _crd_path("widgets{run}a"),
            Until(equals=("status.conditions[type=Established].status", "True")),
            pick=("status.acceptedNames",),
        ),
        post(_widgets("widgets{run}a"), _widget("w", size=1), pick=("spec",), until=None),
        get(_widgets("widgets{run}a") + "/w", pick=("spec",)),
        _schema_swap("widgets{run}a", WIDGET_SCHEMA_DEFAULTED),
        wait_for(
            _widgets("widgets{run}a") + "/w", Until(has="spec.color", timeout=15), pick=("spec",)
        ),
        get(_widgets("widgets{run}a"), pick=("items[*].spec",)),
        post(_widgets("widgets{run}a"), _widget("w2", size=2), pick=("spec",)),
        delete(_crd_path("widgets{run}a"), pick=("kind", "metadata.deletionTimestamp")),
    ),
    case(
        "crd-prunes-unknown-fields",
        *_established_widgets("widgets{run}b"),
        post(_widgets("widgets{run}b"), _widget("w", size=1, shape="round"), pick=("spec",)),
        post(
            _widgets("widgets{run}b"), _widget("w2", size="big"), pick=("code", "reason", "message")
        ),
        prep(delete(_crd_path("widgets{run}b"))),
    ),
    case(
        # Validation ratcheting (GA in 1.33): an update may leave an invalid part as it was.
        "crd-validation-ratcheting",
        *_established_widgets("widgets{run}r"),
        post(_widgets("widgets{run}r"), _widget("w", size=50), pick=("spec",)),
        _schema_swap("widgets{run}r", WIDGET_SCHEMA_CAPPED),
        # the stricter schema is in force once a new widget of size 50 is refused
        post(
            _widgets("widgets{run}r") + "?dryRun=All",
            _widget("probe", size=50),
            pick=("code", "reason", "details.causes"),
            until=Until(code=422, timeout=15),
        ),
        patch(_widgets("widgets{run}r") + "/w", {"spec": {"color": "red"}}, pick=("spec",)),
        patch(
            _widgets("widgets{run}r") + "/w",
            {"spec": {"size": 60}},
            pick=("code", "reason", "details.causes"),
        ),
        patch(_widgets("widgets{run}r") + "/w", {"spec": {"size": 5}}, pick=("spec",)),
        prep(delete(_crd_path("widgets{run}r"))),
    ),
]

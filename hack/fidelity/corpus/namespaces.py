"""Namespace lifecycle: create, its ServiceAccount, terminate, refuse new content, vanish."""

from __future__ import annotations

from hack.fidelity.corpus.objects import configmap, pod
from hack.fidelity.steps import Until, case, delete, get, gone, patch, post, prep, wait_for

NS = "/api/v1/namespaces/{ns}"


def _in(resource: str) -> str:
    return f"{NS}/{resource}"


CASES = [
    case(
        "namespace-create-get",
        post("/api/v1/namespaces", {"metadata": {"name": "{ns}", "labels": {"team": "t{run}"}}}),
        get(NS),
        get("/api/v1/namespaces?labelSelector=team%3Dt{run}", pick=("items[*].metadata.name",)),
        namespace=False,
    ),
    case(
        "namespace-default-service-account",
        wait_for(_in("serviceaccounts/default"), Until(code=200)),
        get(_in("serviceaccounts"), pick=("items[*].metadata.name",)),
    ),
    case(
        "namespace-delete-lifecycle",
        prep(post(_in("configmaps"), configmap("c"))),
        delete(NS),
        get(NS, pick=("status.phase", "metadata.deletionTimestamp", "spec")),
        post(_in("configmaps"), configmap("c2")),
        post(_in("pods"), pod("p")),
        patch(_in("configmaps/c"), {"data": {"k": "2"}}, pick=("code", "reason", "data")),
        delete(NS, pick=("code", "kind", "status.phase")),
        gone(NS, pick=("code", "reason", "details")),
        get(_in("configmaps/c"), pick=("code", "reason")),
    ),
    case(
        "namespace-terminating-conditions",
        prep(post(_in("configmaps"), configmap("c", finalizers=["fidelity.example.com/hold"]))),
        delete(NS, pick=("status.phase",)),
        wait_for(
            NS,
            Until(has="status.conditions[type=NamespaceFinalizersRemaining]"),
            pick=(
                "status.phase",
                "status.conditions[type=NamespaceFinalizersRemaining]",
                "status.conditions[type=NamespaceContentRemaining].status",
            ),
        ),
        prep(patch(_in("configmaps/c"), {"metadata": {"finalizers": None}})),
        gone(NS, pick=("code",)),
    ),
    case(
        "namespace-create-in-missing-404",
        post("/api/v1/namespaces/missing-{ns}/configmaps", configmap("c")),
        namespace=False,
    ),
    case(
        "namespace-delete-default-403",
        delete("/api/v1/namespaces/default"),
        delete("/api/v1/namespaces/kube-system"),
        namespace=False,
    ),
    case(
        "namespace-invalid-name-422",
        post("/api/v1/namespaces", {"metadata": {"name": "Not_Valid"}}),
        namespace=False,
    ),
    case(
        "namespace-spec-finalizers-not-changed-by-update",
        patch(NS, {"spec": {"finalizers": []}}, pick=("spec",)),
        patch(
            NS,
            {"metadata": {"labels": {"kubernetes.io/metadata.name": "other"}}},
            pick=("metadata.labels",),
        ),
    ),
    case(
        "namespace-status-subresource",
        patch(NS + "/status", {"status": {"phase": "Terminating"}}, pick=("status",)),
    ),
]

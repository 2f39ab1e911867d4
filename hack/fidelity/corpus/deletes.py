"""Deletion: what DELETE answers per kind, preconditions, finalizers, dry run, collections."""

from __future__ import annotations

from hack.fidelity.corpus.objects import acjob, configmap, lease, pod, service
from hack.fidelity.steps import acj, case, delete, get, ns_path, patch, post, prep

LEASES = ns_path("leases", "/apis/coordination.k8s.io/v1")
SHAPE = ("code", "kind", "status", "details", "metadata.name", "metadata.deletionTimestamp")

CASES = [
    case(
        "delete-answer-shape-per-kind",
        prep(post("configmaps", configmap("c"))),
        prep(post("services", service("s"))),
        prep(post(LEASES, lease("l"))),
        prep(post("secrets", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}})),
        prep(post(acj("ascendjobs"), acjob("j"))),
        prep(post("pods", pod("p"))),
        prep(post("serviceaccounts", {"metadata": {"name": "sa"}})),
        delete("configmaps/c", pick=SHAPE),
        delete("services/s", pick=SHAPE),
        delete(LEASES + "/l", pick=SHAPE),
        delete("secrets/x", pick=SHAPE),
        delete(acj("ascendjobs/j"), pick=SHAPE),
        delete("pods/p", pick=SHAPE),
        delete("serviceaccounts/sa", pick=SHAPE),
    ),
    case(
        "delete-precondition-uid-409",
        prep(post("configmaps", configmap("c"))),
        delete("configmaps/c", {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}),
    ),
    case(
        "delete-precondition-rv-409",
        prep(post("configmaps", configmap("c"), save={"rv": "metadata.resourceVersion"})),
        prep(patch("configmaps/c", {"data": {"k": "2"}})),
        delete("configmaps/c", {"preconditions": {"resourceVersion": "{rv}"}}),
    ),
    case(
        "delete-precondition-matching-uid",
        prep(post("configmaps", configmap("c"), save={"uid": "metadata.uid"})),
        delete("configmaps/c", {"preconditions": {"uid": "{uid}"}}, pick=SHAPE),
    ),
    case(
        "delete-missing-404",
        delete("configmaps/none"),
    ),
    case(
        "delete-finalizer-keeps-object",
        prep(post("configmaps", configmap("c", finalizers=["fidelity.example.com/f"]))),
        delete("configmaps/c"),
        get(
            "configmaps/c",
            pick=(
                "metadata.deletionTimestamp",
                "metadata.deletionGracePeriodSeconds",
                "metadata.finalizers",
                "metadata.generation",
            ),
        ),
        delete("configmaps/c", pick=("metadata.deletionTimestamp",)),
        patch(
            "configmaps/c",
            {"metadata": {"finalizers": ["fidelity.example.com/other"]}},
            pick=("metadata.finalizers",),
        ),
        patch("configmaps/c", {"metadata": {"finalizers": None}}),
        get("configmaps/c", pick=("code",)),
    ),
    case(
        "delete-finalizer-cannot-add-when-terminating",
        prep(post("configmaps", configmap("c", finalizers=["fidelity.example.com/f"]))),
        prep(delete("configmaps/c")),
        patch("configmaps/c", {"metadata": {"labels": {"a": "b"}}}, pick=("metadata.labels",)),
        post("configmaps", configmap("c")),
    ),
    case(
        "delete-dry-run",
        prep(post("configmaps", configmap("c"))),
        delete("configmaps/c?dryRun=All", pick=SHAPE),
        get("configmaps/c", pick=("metadata.name",)),
    ),
    case(
        "delete-collection",
        *(prep(post("configmaps", configmap(f"c{i}", labels={"g": str(i % 2)}))) for i in range(4)),
        delete("configmaps?labelSelector=g%3D1", pick=("kind", "items[*].metadata.name")),
        get("configmaps", pick=("items[*].metadata.name",)),
    ),
    case(
        "delete-collection-pods-bound-and-unbound",
        prep(post("pods", pod("a", labels={"g": "x"}))),
        prep(post("pods", pod("b", labels={"g": "x"}, nodeName="node-a"))),
        delete(
            "pods?labelSelector=g%3Dx",
            pick=("kind", "items[*].metadata.name", "items[*].metadata.deletionTimestamp"),
        ),
        get("pods", pick=("items[*].metadata.name",)),
        prep(delete("pods/b", {"gracePeriodSeconds": 0})),
    ),
    case(
        "delete-bad-propagation-policy",
        prep(post("configmaps", configmap("c"))),
        delete("configmaps/c", {"propagationPolicy": "Sideways"}),
    ),
]

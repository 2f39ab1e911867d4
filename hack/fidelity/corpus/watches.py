"""Watches: event sequences, selector transitions, too-old resourceVersions, initial events."""

from __future__ import annotations

from hack.fidelity.corpus.objects import configmap, pod
from hack.fidelity.steps import (
    case,
    collect,
    delete,
    get,
    patch,
    post,
    prep,
    watch,
)

RV = {"rv": "metadata.resourceVersion"}

CASES = [
    case(
        "watch-add-modify-delete",
        get("configmaps", save=RV, compare=False),
        watch("w", "configmaps?watch=1&resourceVersion={rv}"),
        prep(post("configmaps", configmap("c"))),
        prep(patch("configmaps/c", {"data": {"k": "2"}})),
        prep(delete("configmaps/c")),
        collect("w", 3),
    ),
    case(
        "watch-label-selector-transitions",
        get("configmaps", save=RV, compare=False),
        watch("w", "configmaps?watch=1&labelSelector=app%3Dx&resourceVersion={rv}"),
        prep(post("configmaps", configmap("c", labels={"app": "y"}))),
        prep(patch("configmaps/c", {"metadata": {"labels": {"app": "x"}}})),
        prep(patch("configmaps/c", {"data": {"k": "in"}})),
        prep(patch("configmaps/c", {"metadata": {"labels": {"app": "z"}}})),
        prep(delete("configmaps/c")),
        collect("w", 3),
    ),
    case(
        "watch-field-selector",
        get("pods", save=RV, compare=False),
        watch("w", "pods?watch=1&fieldSelector=metadata.name%3Db&resourceVersion={rv}"),
        prep(post("pods", pod("a"))),
        prep(post("pods", pod("b"))),
        prep(delete("pods/a")),
        prep(delete("pods/b")),
        collect("w", 3),  # ADDED, MODIFIED (marked for deletion, grace 0), DELETED
    ),
    case(
        "watch-too-old-resource-version-410",
        watch("w", "configmaps?watch=1&resourceVersion=1"),
        collect("w", 1),
    ),
    case(
        "watch-from-zero-sends-existing-as-added",
        prep(post("configmaps", configmap("a"))),
        prep(post("configmaps", configmap("b"))),
        watch("w", "configmaps?watch=1&resourceVersion=0"),
        collect("w", 2),
    ),
    case(
        "watch-send-initial-events-with-bookmark",
        prep(post("configmaps", configmap("a"))),
        watch(
            "w",
            "configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true"
            "&resourceVersionMatch=NotOlderThan",
        ),
        collect("w", 2),
    ),
    case(
        "watch-initial-events-without-match-400",
        watch("w", "configmaps?watch=1&sendInitialEvents=true"),
        collect("w", 1),
    ),
    case(
        "watch-pod-graceful-delete-events",
        get("pods", save=RV, compare=False),
        watch("w", "pods?watch=1&resourceVersion={rv}"),
        prep(post("pods", pod("p"))),
        prep(
            post(
                "pods/p/binding",
                {
                    "apiVersion": "v1",
                    "kind": "Binding",
                    "metadata": {"name": "p"},
                    "target": {"kind": "Node", "name": "n1"},
                },
            )
        ),
        prep(delete("pods/p")),
        prep(delete("pods/p", {"gracePeriodSeconds": 0})),
        collect("w", 5),  # ADDED, bound, terminating (30 s), grace 0, DELETED
    ),
    case(
        "watch-timeout-ends-stream",
        get("configmaps", save=RV, compare=False),
        watch("w", "configmaps?watch=1&timeoutSeconds=1&resourceVersion={rv}"),
        collect("w", 5, wait=4.0),
    ),
    case(
        "watch-namespace-scoped-only",
        get("configmaps", save=RV, compare=False),
        watch("w", "configmaps?watch=1&resourceVersion={rv}"),
        prep(post("/api/v1/namespaces/default/configmaps", configmap("other-{ns}"))),
        prep(post("configmaps", configmap("mine"))),
        prep(delete("/api/v1/namespaces/default/configmaps/other-{ns}")),
        collect("w", 1, wait=3.0),
    ),
]

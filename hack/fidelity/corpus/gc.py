"""Garbage collection by ownerReferences: Background, Foreground and Orphan propagation.

The real side is kube-controller-manager's garbage collector, the local side gc.py; both act
after the DELETE returns, so the corpus polls for where things end up.
"""

from __future__ import annotations

from typing import Any

from hack.fidelity.corpus.objects import acjob, configmap, owner_ref, pod
from hack.fidelity.steps import Step, Until, acj, case, delete, get, gone, post, prep, wait_for

OWNER = prep(post("configmaps", configmap("owner"), save={"uid": "metadata.uid"}))


def _dependent(name: str, **ref: Any) -> Step:
    return prep(
        post(
            "configmaps",
            configmap(name, ownerReferences=[owner_ref("ConfigMap", "owner", "{uid}", **ref)]),
        )
    )


CASES = [
    case(
        "gc-background",
        OWNER,
        _dependent("dep"),
        delete(
            "configmaps/owner",
            {"propagationPolicy": "Background"},
            pick=("kind", "metadata.name", "metadata.finalizers"),
        ),
        gone("configmaps/dep", pick=("code",)),
        get("configmaps/owner", pick=("code",)),
    ),
    case(
        "gc-default-policy-is-background",
        OWNER,
        _dependent("dep"),
        delete("configmaps/owner", pick=("kind", "metadata.name")),
        gone("configmaps/dep", pick=("code",)),
    ),
    case(
        "gc-foreground",
        OWNER,
        _dependent("dep", blockOwnerDeletion=True),
        delete(
            "configmaps/owner",
            {"propagationPolicy": "Foreground"},
            pick=("code", "kind", "metadata.finalizers", "metadata.deletionTimestamp"),
        ),
        gone("configmaps/owner", pick=("code",)),
        get("configmaps/dep", pick=("code",)),
    ),
    case(
        "gc-foreground-without-dependents",
        prep(post("configmaps", configmap("alone"))),
        delete(
            "configmaps/alone",
            {"propagationPolicy": "Foreground"},
            pick=("code", "kind", "metadata.finalizers"),
        ),
        gone("configmaps/alone", pick=("code",)),
    ),
    case(
        "gc-orphan",
        OWNER,
        _dependent("dep"),
        delete(
            "configmaps/owner",
            {"propagationPolicy": "Orphan"},
            pick=("code", "kind", "metadata.finalizers"),
        ),
        gone("configmaps/owner", pick=("code",)),
        wait_for(
            "configmaps/dep",
            Until(lacks="metadata.ownerReferences"),
            pick=("metadata.name", "metadata.ownerReferences"),
        ),
    ),
    case(
        "gc-dependent-with-two-owners-survives",
        OWNER,
        prep(post("configmaps", configmap("owner2"), save={"uid2": "metadata.uid"})),
        prep(
            post(
                "configmaps",
                configmap(
                    "dep",
                    ownerReferences=[
                        owner_ref("ConfigMap", "owner", "{uid}"),
                        owner_ref("ConfigMap", "owner2", "{uid2}"),
                    ],
                ),
            )
        ),
        delete("configmaps/owner", pick=("kind",)),
        wait_for(
            "configmaps/dep",
            Until(equals=("metadata.ownerReferences[#]", 1)),
            pick=("metadata.ownerReferences",),
        ),
    ),
    case(
        "gc-acjob-owns-pods",
        prep(post(acj("ascendjobs"), acjob("j"), save={"uid": "metadata.uid"})),
        prep(
            post(
                "pods",
                {
                    **pod("j-master-0"),
                    "metadata": {
                        "name": "j-master-0",
                        "ownerReferences": [
                            owner_ref(
                                "AscendJob",
                                "j",
                                "{uid}",
                                "mindxdl.gitee.com/v1",
                                controller=True,
                                blockOwnerDeletion=True,
                            )
                        ],
                    },
                },
            )
        ),
        delete(
            acj("ascendjobs/j"),
            {"propagationPolicy": "Foreground"},
            pick=("code", "kind", "metadata.finalizers"),
        ),
        gone(acj("ascendjobs/j"), pick=("code",)),
        get("pods/j-master-0", pick=("code",)),
    ),
    case(
        "gc-dangling-owner-collects-dependent",
        prep(
            post(
                "configmaps",
                configmap(
                    "dep",
                    ownerReferences=[
                        owner_ref("ConfigMap", "ghost", "11111111-2222-3333-4444-555555555555")
                    ],
                ),
            )
        ),
        gone("configmaps/dep", pick=("code",)),
    ),
]

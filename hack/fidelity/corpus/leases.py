"""Leases: what leader election does (create, renew with MicroTime, conflict, release)."""

from __future__ import annotations

from hack.fidelity.corpus.objects import lease
from hack.fidelity.steps import case, delete, get, ns_path, post, prep, put

LEASES = ns_path("leases", "/apis/coordination.k8s.io/v1")

CASES = [
    case(
        "lease-crud",
        post(LEASES, lease("l"), save={"rv": "metadata.resourceVersion"}),
        get(LEASES + "/l"),
        put(
            LEASES + "/l",
            {
                **lease("l"),
                "metadata": {"name": "l", "resourceVersion": "{rv}"},
                "spec": {
                    "holderIdentity": "a",
                    "leaseDurationSeconds": 15,
                    "acquireTime": "2026-01-01T00:00:00.000000Z",
                    "renewTime": "2026-01-01T00:00:10.123456Z",
                    "leaseTransitions": 1,
                },
            },
        ),
        delete(LEASES + "/l"),
    ),
    case(
        "lease-stale-renew-409",
        prep(post(LEASES, lease("l"), save={"rv": "metadata.resourceVersion"})),
        prep(
            put(
                LEASES + "/l",
                {**lease("l", "b"), "metadata": {"name": "l", "resourceVersion": "{rv}"}},
            )
        ),
        put(
            LEASES + "/l", {**lease("l", "c"), "metadata": {"name": "l", "resourceVersion": "{rv}"}}
        ),
    ),
    case(
        "lease-put-creates",
        put(LEASES + "/new", lease("new")),
    ),
    case(
        "lease-invalid-duration-422",
        post(LEASES, {**lease("l"), "spec": {"holderIdentity": "a", "leaseDurationSeconds": 0}}),
    ),
]

"""Server-side printing: the Tables `kubectl get` shows, for each kind it is used on."""

from __future__ import annotations

from hack.fidelity.corpus.objects import (
    acjob,
    binding,
    configmap,
    core_event,
    lease,
    new_event,
    pod,
    service,
)
from hack.fidelity.steps import acj, case, delete, ns_path, patch, post, prep, table

LEASES = ns_path("leases", "/apis/coordination.k8s.io/v1")
EVENTS_V1 = ns_path("events", "/apis/events.k8s.io/v1")

CASES = [
    case(
        "table-pods",
        prep(post("pods", pod("a"))),
        prep(post("pods", pod("b"))),
        prep(post("pods/b/binding", binding("b"))),
        prep(
            patch(
                "pods/b/status",
                {
                    "status": {
                        "phase": "Running",
                        "podIP": "10.244.1.5",
                        "containerStatuses": [
                            {
                                "name": "main",
                                "ready": True,
                                "restartCount": 0,
                                "image": "busybox:1.36",
                                "imageID": "",
                                "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                            }
                        ],
                    }
                },
            )
        ),
        table("pods"),
        table("pods/b"),
    ),
    case(
        "table-pod-terminating",
        prep(post("pods", pod("t"))),
        prep(post("pods/t/binding", binding("t"))),
        prep(delete("pods/t")),
        table("pods/t?includeObject=None"),
    ),
    case(
        "table-services",
        prep(post("services", service("web"))),
        prep(post("services", service("hl", clusterIP="None"))),
        table("services"),
    ),
    case(
        "table-configmaps",
        prep(post("configmaps", configmap("c", {"a": "1", "b": "2"}))),
        table("configmaps"),
        table("configmaps/c?includeObject=Object"),
    ),
    case(
        "table-core-events",
        prep(post("events", core_event("e1"))),
        prep(
            post("events", core_event("e2", type="Warning", reason="BackOff", message="back-off"))
        ),
        table("events"),
    ),
    case(
        "table-new-events",
        prep(post(EVENTS_V1, new_event("e1"))),
        table(EVENTS_V1),
    ),
    case(
        "table-namespaces",
        table("/api/v1/namespaces/{ns}"),
    ),
    case(
        "table-acjobs",
        prep(post(acj("ascendjobs"), acjob("j"))),
        prep(
            patch(
                acj("ascendjobs/j/status"),
                {
                    "status": {
                        "restartCount": 2,
                        "conditions": [{"type": "Running", "status": "True"}],
                    }
                },
            )
        ),
        table(acj("ascendjobs")),
        table(acj("ascendjobs/j")),
    ),
    case(
        "table-leases",
        prep(post(LEASES, lease("l"))),
        table(LEASES),
    ),
    case(
        "table-serviceaccounts",
        table("serviceaccounts"),
    ),
    case(
        "table-empty-list",
        table("configmaps"),
    ),
]

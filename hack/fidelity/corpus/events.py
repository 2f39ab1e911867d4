"""Events through core/v1 and events.k8s.io/v1: one storage, two views."""

from __future__ import annotations

from hack.fidelity.corpus.objects import core_event, new_event
from hack.fidelity.steps import case, delete, get, patch, post, prep

EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/{ns}/events"

CASES = [
    case(
        "event-core-crud",
        post("events", core_event("e1")),
        get("events/e1"),
        patch("events/e1", {"count": 3}, pick=("count",)),
        delete("events/e1"),
    ),
    case(
        "event-new-api-crud",
        post(EVENTS_V1, new_event("e2")),
        get(EVENTS_V1 + "/e2"),
        delete(EVENTS_V1 + "/e2"),
    ),
    case(
        "event-new-api-visible-through-core",
        prep(post(EVENTS_V1, new_event("e3"))),
        get("events/e3"),
        get("events", pick=("items[*].metadata.name",)),
    ),
    case(
        "event-core-visible-through-new-api",
        prep(post("events", core_event("e4"))),
        get(EVENTS_V1 + "/e4"),
    ),
    case(
        "event-core-field-selector",
        prep(post("events", core_event("e5"))),
        prep(post("events", core_event("e6", reason="Killing"))),
        get("events?fieldSelector=reason%3DKilling", pick=("items[*].metadata.name",)),
        get(
            "events?fieldSelector=involvedObject.kind%3DPod,involvedObject.name%3Dp",
            pick=("items[*].metadata.name",),
        ),
    ),
    case(
        "event-new-api-missing-fields-422",
        post(
            EVENTS_V1,
            {"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "bad"}},
        ),
    ),
]

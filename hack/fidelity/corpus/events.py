"""Events through core/v1 and events.k8s.io/v1: one storage, two views."""

from __future__ import annotations

from typing import Any

from hack.fidelity.corpus.objects import core_event, new_event
from hack.fidelity.steps import case, delete, get, patch, post, prep

EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/{ns}/events"
T = "2026-01-01T00:00:00.000000Z"


def _new(name: str, **fields: Any) -> dict[str, Any]:
    return {**new_event(name), **fields}


def _core(name: str, **fields: Any) -> dict[str, Any]:
    return {**core_event(name), **fields}


def _regarding(namespace: str | None) -> dict[str, str]:
    ref = {"kind": "Pod", "name": "p"}
    return ref if namespace is None else {**ref, "namespace": namespace}


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
    # Each API checks what it checks (event_rules.py): core/v1 only the involved object's
    # namespace, and the reporting fields once an eventTime is set; events.k8s.io/v1 also the
    # metadata, the series, the eventTime and the type.
    case(
        "event-validation-by-api",
        post(EVENTS_V1, _new("Bad_Name")),
        post(EVENTS_V1, _new("n1", regarding=_regarding(None))),
        post(EVENTS_V1, _new("n2", regarding=_regarding("other")), pick=("regarding",)),
        post(EVENTS_V1, _new("n3", type="Odd")),
        post(EVENTS_V1, _new("n4", series={"count": 1, "lastObservedTime": T})),
        post(EVENTS_V1, _new("n5", series={"count": 5}, type="Warning")),
        post(EVENTS_V1, _new("n6", reportingController="", reportingInstance="", action="")),
        post(
            EVENTS_V1, _new("n7", reportingController="c" * 64, reason="r" * 129, note="n" * 1025)
        ),
        post("events", _core("Bad_Name"), pick=("metadata.name",)),
        post("events", _core("c1", involvedObject=_regarding(None))),
        post("events", _core("c2", involvedObject=_regarding("other"))),
        post("events", _core("c3", eventTime=T)),
        post("events", _core("c4", type="Odd", reason="", message="m" * 2000), pick=("type",)),
        post(
            "events",
            _core(
                "c5",
                eventTime=T,
                reportingComponent="x.io/c",
                reportingInstance="i",
                action="a",
                involvedObject=_regarding(None),
            ),
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

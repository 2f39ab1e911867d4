"""Events through core/v1 and events.k8s.io/v1: one storage, two views."""

from __future__ import annotations

from typing import Any

from hack.fidelity.corpus.objects import core_event, new_event
from hack.fidelity.steps import case, delete, get, patch, post, prep

EVENTS_V1 = "/apis/events.k8s.io/v1/namespaces/{ns}/events"
T = "2026-01-01T00:00:00.000000Z"
#: The time fields an answer shows, through either API.
TIMES = ("eventTime", "firstTimestamp", "lastTimestamp", "series", "count")
NEW_TIMES = ("eventTime", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "series")


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
    # An Event's fields are Go types (event_fields.py): a value of the wrong JSON type is a
    # 400, and so is a time that does not parse, metav1.Time for the first and last
    # timestamps and MicroTime (six digits of fraction) for eventTime and a series' last
    # observed time. A time's own error ends the decoding and wins over any noted before it.
    case(
        "event-typed-fields-400",
        post("events", _core("t1", eventTime="2026-01-01T00:00:00Z")),
        post("events", _core("t2", eventTime="2026-01-01T00:00:00.123Z")),
        post("events", _core("t3", eventTime="2026-01-01T00:00:00.1234567Z")),
        post("events", _core("t4", eventTime=5)),
        post("events", _core("t5", firstTimestamp="2026-02-30T00:00:00Z")),
        post("events", _core("t6", lastTimestamp="2026-01-01T00:00:00+25:00")),
        post("events", _core("t7", firstTimestamp="2026-01-01T00:00:00Zjunk")),
        post("events", _core("t8", count="2")),
        post("events", _core("t9", count=2**40)),
        post("events", _core("t10", series={"count": 2, "lastObservedTime": 5}, eventTime=T)),
        post("events", _core("t11", series=5)),
        post("events", _core("t12", involvedObject={"kind": 5, "name": "p"})),
        post("events", _core("t13", source={"component": 5})),
        post("events", _core("t14", message=["m"])),
        post("events", {"count": "x", **_core("t15", eventTime="2026-01-01T00:00:00Z")}),
        post("events", {**_core("t16", firstTimestamp="bad"), "metadata": {"name": 5}}),
        post(EVENTS_V1, _new("n1", eventTime="2026-01-01T00:00:00Z")),
        post(EVENTS_V1, _new("n2", deprecatedCount="x")),
        post(EVENTS_V1, _new("n3", regarding={"kind": 5})),
        post(EVENTS_V1, _new("n4", deprecatedSource={"component": 5})),
        post(EVENTS_V1, _new("n5", series={"count": "x"})),
        post(EVENTS_V1, _new("n6", note=5)),
    ),
    # A time that parses is stored in UTC, to the second (Time) or the microsecond
    # (MicroTime), truncated; a null field Go omits when zero is not shown.
    case(
        "event-times-stored-in-utc",
        post(
            "events",
            _core(
                "u1",
                firstTimestamp="2026-01-01T05:00:00.9+03:30",
                lastTimestamp="2026-01-01T00:00:00,5Z",
                count=None,
            ),
            pick=TIMES,
        ),
        post(
            "events",
            _core(
                "u2",
                eventTime="2024-02-29T23:59:59.999999-01:00",
                series={"count": 2, "lastObservedTime": "2026-01-01T00:00:00,123456+05:60"},
                reportingComponent="x.io/c",
                reportingInstance="i",
                action="a",
            ),
            pick=TIMES,
        ),
        post("events", _core("u3", firstTimestamp="0001-01-01T00:00:00Z"), pick=TIMES),
        post(EVENTS_V1, _new("u4", eventTime="2026-06-01T12:00:00.000001+02:00"), pick=NEW_TIMES),
        get("events/u4", pick=TIMES),
    ),
    # Through events.k8s.io/v1 the deprecated core/v1 fields must stay unset.
    case(
        "event-new-api-deprecated-fields-422",
        post(EVENTS_V1, _new("d1", deprecatedFirstTimestamp=T)),
        post(
            EVENTS_V1,
            _new(
                "d2",
                deprecatedLastTimestamp="2026-01-01T00:00:00Z",
                deprecatedCount=3,
                deprecatedSource={"component": "c"},
                deprecatedFirstTimestamp="2026-01-01T00:00:00Z",
            ),
        ),
        post(EVENTS_V1, _new("d3", deprecatedSource={"host": "h"}, type="Odd")),
        post(EVENTS_V1, _new("d4", deprecatedCount=0, deprecatedSource={}), pick=NEW_TIMES),
    ),
]

"""event_fields: an Event's typed fields decoded as kube-apiserver v1.37.2 decodes them (each
row's error is the real server's answer to the same body, fidelity case event-typed-fields)."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.localcluster import event_fields

CORE = "v1"
NEW = "events.k8s.io/v1"
MICRO = '"2006-01-02T15:04:05.000000Z07:00"'


def _event(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, **fields}


@pytest.mark.parametrize(
    ("api", "event", "shown", "field", "go_type"),
    [
        (CORE, _event(count="x"), "string", "Event.count", "int32"),
        (CORE, _event(count=2.5), "number 2.5", "Event.count", "int32"),
        (CORE, _event(count=2**40), "number 1099511627776", "Event.count", "int32"),
        (CORE, _event(series=5), "number", "Event.series", "v1.EventSeries"),
        (CORE, _event(series={"count": "2"}), "string", "EventSeries.series.count", "int32"),
        (CORE, _event(series={"lastObservedTime": 5}), "number",
         "EventSeries.series.lastObservedTime", "string"),
        (CORE, _event(involvedObject={"kind": 5}), "number",
         "ObjectReference.involvedObject.kind", "string"),
        (CORE, _event(involvedObject=5), "number", "Event.involvedObject", "v1.ObjectReference"),
        (CORE, _event(source=[1]), "array", "Event.source", "v1.EventSource"),
        (CORE, _event(source={"component": 5}), "number", "EventSource.source.component", "string"),
        (CORE, _event(message=5), "number", "Event.message", "string"),
        (CORE, _event(eventTime=5), "number", "Event.eventTime", "string"),
        (NEW, _event(deprecatedCount="x"), "string", "Event.deprecatedCount", "int32"),
        (NEW, _event(regarding={"kind": 5}), "number", "ObjectReference.regarding.kind", "string"),
        (NEW, _event(deprecatedSource={"component": 5}), "number",
         "EventSource.deprecatedSource.component", "string"),
        (NEW, _event(note=5), "number", "Event.note", "string"),
    ],
)  # fmt: skip
def test_a_value_of_the_wrong_type(
    api: str, event: dict[str, Any], shown: str, field: str, go_type: str
) -> None:
    error = f"json: cannot unmarshal {shown} into Go struct field {field} of type {go_type}"
    assert event_fields.unmarshal_error(event, api) == error


@pytest.mark.parametrize(
    ("api", "event"),
    [
        (CORE, _event(reason="R", count=2)),
        (NEW, _event(message=5)),  # not a field of events.k8s.io/v1 (pruned, not decoded)
    ],
)
def test_no_error(api: str, event: dict[str, Any]) -> None:
    assert event_fields.unmarshal_error(event, api) is None


def test_a_time_error_ends_decoding_and_wins_over_a_type_error_noted_before() -> None:
    bad_time = 'parsing time "x" as ' + MICRO + ': cannot parse "x" as "2006"'
    noted_first = {"count": "x", **_event(eventTime="x")}
    assert event_fields.unmarshal_error(noted_first, CORE) == bad_time
    name_first = {**_event(eventTime="x"), "metadata": {"name": 5}}
    assert event_fields.unmarshal_error(name_first, CORE) == bad_time
    # Two type errors: the first in the body is reported.
    two = {**_event(count="x"), "metadata": {"name": 5}}
    assert "ObjectMeta.metadata.name" in (event_fields.unmarshal_error(two, CORE) or "")


def test_times_are_stored_as_the_server_writes_them() -> None:
    event = _event(
        firstTimestamp="2026-01-01T05:00:00.9+03:30",
        eventTime="2026-01-01T00:00:00,123456Z",
        series={"count": 2, "lastObservedTime": "2026-01-01T00:00:00.000001+01:00"},
    )
    event_fields.store_times(event, CORE)
    assert event["firstTimestamp"] == "2026-01-01T01:30:00Z"
    assert event["eventTime"] == "2026-01-01T00:00:00.123456Z"
    assert event["series"]["lastObservedTime"] == "2025-12-31T23:00:00.000001Z"


def test_the_new_api_stores_its_own_field_names() -> None:
    event = _event(deprecatedFirstTimestamp="2026-01-01T00:00:00.5Z", firstTimestamp="x")
    event_fields.store_times(event, NEW)
    assert event["deprecatedFirstTimestamp"] == "2026-01-01T00:00:00Z"
    assert event["firstTimestamp"] == "x"  # not a field of events.k8s.io/v1

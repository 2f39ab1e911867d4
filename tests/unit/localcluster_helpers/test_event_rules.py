"""event_rules: an Event's causes by the API it came through (kube-apiserver v1.37.2's answers,
also compared by the fidelity case event-validation-by-api)."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.localcluster.event_rules import NEW_API, event_causes

T = "2026-01-01T00:00:00.000000Z"
NAME_CAUSE = {
    "reason": "FieldValueInvalid",
    "message": "Invalid value: x",
    "field": "metadata.name",
}


def _event(**fields: Any) -> dict[str, Any]:
    """A valid event with an eventTime, in its stored (core/v1) form."""
    return {
        "metadata": {"name": "e", "namespace": "ns"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "ns"},
        "eventTime": T,
        "reportingComponent": "x.io/ctl",
        "reportingInstance": "i-1",
        "action": "Act",
        "reason": "Why",
        "message": "m",
        "type": "Normal",
        **fields,
    }


def _fields(causes: list[dict[str, str]]) -> list[str]:
    return [f"{c['field']}: {c['message']}" for c in causes]


@pytest.mark.parametrize("api", ["v1", NEW_API])
def test_a_complete_event_has_no_cause(api: str) -> None:
    assert event_causes(_event(), "ns", api, []) == []


@pytest.mark.parametrize(
    ("involved_ns", "namespace", "time", "refused"),
    [
        ("", "default", None, False),
        ("", "ns", None, True),
        ("other", "ns", None, True),
        ("ns", "ns", None, False),
        ("other", "ns", T, False),  # with an eventTime another namespace may be named
        ("", "ns", T, True),
        ("", "kube-system", T, False),
    ],
)
def test_the_involved_objects_namespace(
    involved_ns: str, namespace: str, time: str | None, refused: bool
) -> None:
    event = _event(
        eventTime=time, involvedObject={"kind": "Pod", "name": "p", "namespace": involved_ns}
    )
    causes = event_causes(event, namespace, "v1", [])
    mismatch = (
        f'involvedObject.namespace: Invalid value: "{involved_ns}": does not match event.namespace'
    )
    assert (mismatch in _fields(causes)) is refused


def test_core_v1_checks_neither_name_nor_type_nor_sizes_without_an_eventtime() -> None:
    event = _event(eventTime=None, type="Odd", reason="", message="m" * 5000)
    assert event_causes(event, "ns", "v1", [NAME_CAUSE]) == []


def test_the_reporting_fields_once_an_eventtime_is_set() -> None:
    event = _event(reportingComponent="", reportingInstance="", action="", reason="r" * 129)
    event["message"] = "é" * 513  # 1,026 bytes
    fields = [c["field"] for c in event_causes(event, "ns", "v1", [])]
    assert fields == [
        "reportingComponent",
        "reportingComponent",
        "reportingComponent",
        "reportingInstance",
        "action",
        "reason",
        "message",
    ]
    new = [c["field"] for c in event_causes(event, "ns", NEW_API, [])]
    assert new[:3] == ["reportingController"] * 3


def test_the_new_api_adds_metadata_series_eventtime_and_type_in_that_order() -> None:
    event = _event(eventTime=None, type="", series={"count": 1})
    event["involvedObject"]["namespace"] = ""
    assert _fields(event_causes(event, "ns", NEW_API, [NAME_CAUSE])) == [
        'involvedObject.namespace: Invalid value: "": does not match event.namespace',
        "metadata.name: Invalid value: x",
        'series.count: Invalid value: "": should be at least 2',
        "series.lastObservedTime: Required value",
        "eventTime: Required value",
        'type: Invalid value: "": has invalid value: ',
    ]


def test_the_new_api_wants_the_deprecated_core_fields_unset() -> None:
    unset = 'Invalid value: "": needs to be unset'
    event = _event(
        type="Odd",
        source={"host": "h"},
        count=3,
        lastTimestamp="2026-01-01T00:00:00Z",
        firstTimestamp="2026-01-01T00:00:00Z",
    )
    assert _fields(event_causes(event, "ns", NEW_API, [])) == [
        'type: Invalid value: "": has invalid value: Odd',
        f"firstTimestamp: {unset}",
        f"lastTimestamp: {unset}",
        f"count: {unset}",
        f"source: {unset}",
    ]
    assert event_causes(event, "ns", "v1", []) == []
    assert event_causes(_event(count=0, source={}), "ns", NEW_API, []) == []

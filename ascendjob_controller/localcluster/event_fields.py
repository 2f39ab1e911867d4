"""An Event's typed fields as kube-apiserver decodes them, through either Events API.

The Event kinds' fields are Go types, not free JSON: strings, int32 counts, object
references, an EventSource and an EventSeries, and times. A value of the wrong JSON type is
a 400 (`json: cannot unmarshal number into Go struct field Event.count of type int32`), and
so is a time that does not parse: `firstTimestamp` and `lastTimestamp` are metav1.Time
(RFC 3339), `eventTime` and a series' `lastObservedTime` are metav1.MicroTime, which needs
exactly six digits of fraction (`2026-01-01T00:00:00Z` is refused there). A time that
parses is stored as the server writes it back: in UTC, truncated to the second or the
microsecond (gotime.py). (A null leaves a field at its zero value: dropped with the unknown
fields, `builtin_fields.py`.)

Errors are found in the body's order, as Go decodes: a value of the wrong type is noted and
the first noted is reported at the end, unless a time's own decoding fails first, which
ends the decoding at once and is reported instead (`typed_fields.object_meta_errors`).
Fields are named as the API the body came through names them (`Event.note`,
`EventSource.deprecatedSource.component` through events.k8s.io/v1). Checked against
kube-apiserver v1.37.2 with probe bodies (the fidelity case event-typed-fields).
"""

from __future__ import annotations

from typing import Any

from ascendjob_controller.localcluster import gotime
from ascendjob_controller.localcluster.typed_fields import (
    object_meta_errors,
    scalar_error,
    time_field_error,
    unmarshal_type_error,
)

NEW_API = "events.k8s.io/v1"

#: A field's decoding: a Go scalar type, "time" or "micro", or a struct's name in STRUCTS.
_CORE_FIELDS = {
    "involvedObject": "ref",
    "reason": "string",
    "message": "string",
    "source": "source",
    "firstTimestamp": "time",
    "lastTimestamp": "time",
    "count": "int32",
    "type": "string",
    "eventTime": "micro",
    "series": "series",
    "action": "string",
    "related": "ref",
    "reportingComponent": "string",
    "reportingInstance": "string",
}
_NEW_FIELDS = {
    "eventTime": "micro",
    "series": "series",
    "reportingController": "string",
    "reportingInstance": "string",
    "action": "string",
    "reason": "string",
    "regarding": "ref",
    "related": "ref",
    "note": "string",
    "type": "string",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "time",
    "deprecatedLastTimestamp": "time",
    "deprecatedCount": "int32",
}
_REFERENCE = ("kind", "namespace", "name", "apiVersion", "resourceVersion", "fieldPath")
#: The structs: (Go type, Go struct name, fields by decoding).
_STRUCTS: dict[str, tuple[str, str, dict[str, str]]] = {
    "ref": (
        "v1.ObjectReference",
        "ObjectReference",
        {**dict.fromkeys(_REFERENCE, "string"), "uid": "types.UID"},
    ),
    "source": ("v1.EventSource", "EventSource", {"component": "string", "host": "string"}),
    "series": ("v1.EventSeries", "EventSeries", {"count": "int32", "lastObservedTime": "micro"}),
}
#: Each API's time fields, (name, is a MicroTime), by "is events.k8s.io/v1".
_TIMES = {
    new: tuple((k, d == "micro") for k, d in fields.items() if d in ("time", "micro"))
    for new, fields in ((False, _CORE_FIELDS), (True, _NEW_FIELDS))
}

Errors = tuple[str | None, str | None]


def _fields(group_version: str) -> dict[str, str]:
    return _NEW_FIELDS if group_version == NEW_API else _CORE_FIELDS


def unmarshal_error(event: dict[str, Any], group_version: str) -> str | None:
    """Go's decode error for an Event body posted through `group_version`, else None."""
    fields = _fields(group_version)
    first: str | None = None
    for key, value in event.items():
        if value is None:
            continue
        if key == "metadata" and isinstance(value, dict):
            at_once, noted = object_meta_errors(value, "ObjectMeta.metadata.")
        elif key in fields:
            decoding = fields[key]
            if decoding == "string" and isinstance(value, str):
                continue  # the common case, spared the call
            at_once, noted = _field_errors(decoding, value, f"Event.{key}", key)
        else:
            continue
        if at_once is not None:
            return at_once
        first = first or noted
    return first


def _field_errors(decoding: str, value: Any, field: str, path: str) -> Errors:
    """(the error that ends decoding, the first one noted) for one field's value."""
    if decoding in ("time", "micro"):
        return time_field_error(value, field, micro=decoding == "micro"), None
    if decoding not in _STRUCTS:
        return None, scalar_error(value, field, decoding)
    go_type, struct, members = _STRUCTS[decoding]
    if not isinstance(value, dict):
        return None, unmarshal_type_error(value, field, go_type)
    first: str | None = None
    for key, item in value.items():
        if item is None or key not in members:
            continue
        at_once, noted = _field_errors(members[key], item, f"{struct}.{path}.{key}", "")
        if at_once is not None:
            return at_once, first
        first = first or noted
    return None, first


def store_times(event: dict[str, Any], group_version: str) -> None:
    """Write an Event's times as the server stores them (in place; the event has no decode
    error)."""
    for key, micro in _TIMES[group_version == NEW_API]:
        value = event.get(key)
        if isinstance(value, str):
            event[key] = gotime.stored(value, micro)
    series = event.get("series")
    if isinstance(series, dict) and isinstance(series.get("lastObservedTime"), str):
        series["lastObservedTime"] = gotime.stored(series["lastObservedTime"], micro=True)

"""An Event create's causes, as kube-apiserver's event validation finds them.

Events are checked by the API they were posted through (checked against v1.37.2 with probe
bodies, the fidelity cases event-*):

- Both APIs run the legacy checks. An event without `eventTime` (the core/v1 kind most
  clients still send) is only checked for its involved object's namespace: empty, it must be
  in `default` (or no namespace); set, it must be the event's. An event with an `eventTime`
  also needs a reporting controller (a qualified name), a reporting instance, an action and
  a reason, each at most 128 bytes, and a message of at most 1024; its involved object may
  then name another namespace, and an empty one is allowed in `default` and `kube-system`.
- events.k8s.io/v1 adds the rest: the metadata's causes, its series (count at least 2, a
  lastObservedTime), a required eventTime, a type of Normal or Warning, and the deprecated
  core/v1 fields unset (first and last timestamps, count, source).
- core/v1 checks nothing else, not even the name (`Bad_Name` is created).

Causes name the stored (core/v1) fields, whichever API was used (`involvedObject`,
`message`), except the reporting controller: `reportingComponent` through core/v1,
`reportingController` through events.k8s.io/v1.
"""

from __future__ import annotations

from typing import Any

from ascendjob_controller.localcluster.metadata_rules import qualified_name_errors
from ascendjob_controller.localcluster.validation import Cause, invalid_cause

NEW_API = "events.k8s.io/v1"
_LIMITS = (("reportingInstance", 128), ("action", 128), ("reason", 128))
_MESSAGE_LIMIT = 1024
_TYPES = ("Normal", "Warning")


def _required(field: str) -> Cause:
    return {"reason": "FieldValueRequired", "message": "Required value", "field": field}


def _text(event: dict[str, Any], key: str) -> str:
    value = event.get(key)
    return value if isinstance(value, str) else ""


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def event_causes(
    event: dict[str, Any], namespace: str, api: str, meta_causes: list[Cause]
) -> list[Cause]:
    """Every cause of a new Event in its stored (core/v1) form, posted through `api` into
    `namespace`; `meta_causes` are its metadata's (name first), which only events.k8s.io/v1
    reports."""
    causes = _legacy(event, namespace, api)
    if api != NEW_API:
        return causes
    causes += meta_causes
    causes += _series(event.get("series"))
    if not event.get("eventTime"):
        causes.append(_required("eventTime"))
    kind = _text(event, "type")
    if kind not in _TYPES:
        causes.append(invalid_cause("type", "", f"has invalid value: {kind}"))
    return causes + _deprecated_set(event)


def _deprecated_set(event: dict[str, Any]) -> list[Cause]:
    """The core/v1-only fields a new Event must leave unset (its deprecated* fields)."""
    source = event.get("source")
    source = source if isinstance(source, dict) else {}
    set_ = {
        "firstTimestamp": bool(event.get("firstTimestamp")),
        "lastTimestamp": bool(event.get("lastTimestamp")),
        "count": bool(event.get("count")),
        "source": bool(source.get("component") or source.get("host")),
    }
    return [
        invalid_cause(field, "", "needs to be unset") for field, is_set in set_.items() if is_set
    ]


def _legacy(event: dict[str, Any], namespace: str, api: str) -> list[Cause]:
    involved = event.get("involvedObject")
    involved_ns = involved.get("namespace") if isinstance(involved, dict) else None
    involved_ns = involved_ns if isinstance(involved_ns, str) else ""
    mismatch = invalid_cause(
        "involvedObject.namespace", involved_ns, "does not match event.namespace"
    )
    if not event.get("eventTime"):
        if involved_ns == "":
            return [] if namespace in ("", "default") else [mismatch]
        return [] if namespace == involved_ns else [mismatch]
    causes = [] if involved_ns or namespace in ("default", "kube-system") else [mismatch]
    field = "reportingController" if api == NEW_API else "reportingComponent"
    controller = _text(event, "reportingComponent")
    if not controller:
        causes.append(_required(field))
    causes += [
        invalid_cause(field, controller, error) for error in qualified_name_errors(controller)
    ]
    for key, limit in _LIMITS:
        value = _text(event, key)
        if not value:
            causes.append(_required(key))
        elif _size(value) > limit:
            causes.append(invalid_cause(key, "", f"can have at most {limit} characters"))
    if _size(_text(event, "message")) > _MESSAGE_LIMIT:
        causes.append(invalid_cause("message", "", f"can have at most {_MESSAGE_LIMIT} characters"))
    return causes


def _series(series: Any) -> list[Cause]:
    if not isinstance(series, dict):
        return []
    causes = []
    count = series.get("count")
    if not isinstance(count, int) or count < 2:
        causes.append(invalid_cause("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        causes.append(_required("series.lastObservedTime"))
    return causes

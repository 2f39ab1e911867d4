"""One Event storage, two APIs: core/v1 and events.k8s.io/v1, as kube-apiserver serves them.

Events are stored in their core/v1 form; events.k8s.io/v1 reads and writes convert (the
fields were renamed when the newer API was introduced: involvedObject/regarding,
message/note, source/deprecatedSource, firstTimestamp/deprecatedFirstTimestamp...). Each
form always carries the fields its Go type never omits (`eventTime: null`, `source: {}`,
`reportingComponent: ""`...), so a read looks like the real server's whichever API wrote it.
"""

from __future__ import annotations

from typing import Any

CORE_VERSION = "v1"
NEW_VERSION = "events.k8s.io/v1"
_RENAMED = (  # core/v1 name, events.k8s.io/v1 name
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
)
_SHARED: tuple[str, ...] = ("metadata", "reason", "type", "action", "related", "series")
_SHARED += ("eventTime", "reportingInstance")


def core_defaults(event: dict[str, Any]) -> None:
    """The fields a core/v1 Event always shows (in place)."""
    event.setdefault("involvedObject", {})
    event.setdefault("source", {})
    for key in ("firstTimestamp", "lastTimestamp", "eventTime"):
        event.setdefault(key, None)
    event.setdefault("reportingComponent", "")
    event.setdefault("reportingInstance", "")


def to_new(core: dict[str, Any]) -> dict[str, Any]:
    """A stored core/v1 Event as events.k8s.io/v1 shows it."""
    out: dict[str, Any] = {"apiVersion": NEW_VERSION, "kind": "Event"}
    for key in _SHARED:
        if key in core:
            out[key] = core[key]
    for old, new in _RENAMED:
        if core.get(old) not in (None, "", 0, {}):
            out[new] = core[old]
    if not out.get("reportingInstance"):
        out.pop("reportingInstance", None)
    out.setdefault("eventTime", None)
    out.setdefault("deprecatedSource", {})
    out.setdefault("deprecatedFirstTimestamp", None)
    out.setdefault("deprecatedLastTimestamp", None)
    return out


def to_core(new: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event (a request body) in the core/v1 form it is stored in."""
    out: dict[str, Any] = {"apiVersion": CORE_VERSION, "kind": "Event"}
    for key in _SHARED:
        if key in new:
            out[key] = new[key]
    for old, renamed in _RENAMED:
        if new.get(renamed) not in (None, "", 0, {}):
            out[old] = new[renamed]
    core_defaults(out)
    return out

"""metadata.managedFields: which manager owns which fields, kept as kube-apiserver keeps them.

- `record_update`: a create, update or non-apply patch. The fields the write added or changed
  go to its manager (an `Update` entry per manager, API version and subresource), and leave
  every other manager; fields it removed leave everyone. A write that changes nothing keeps
  the entries (and their times) as they were.
- `record_apply`: server-side apply. The manager's `Apply` entry becomes exactly the applied
  configuration's fields; fields it applied before and no longer applies are removed from the
  object unless someone else owns them; a field another manager owns and the apply would
  change is a conflict (409) unless `force`, which takes it over.
Identity and server-owned metadata are never tracked, nor what the write cannot change
(`status` through the main resource, everything else through `status`).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ascendjob_controller.localcluster import fieldsets
from ascendjob_controller.localcluster.errors import ApiError
from ascendjob_controller.localcluster.fieldsets import FieldPath, Schema
from ascendjob_controller.localcluster.timestamps import now_rfc3339

_STRIPPED: set[FieldPath] = {
    (("f", "apiVersion"),),
    (("f", "kind"),),
    (("f", "metadata"),),
    *((("f", "metadata"), ("f", key)) for key in (
        "name", "namespace", "creationTimestamp", "selfLink", "uid", "clusterName",
        "generation", "managedFields", "resourceVersion",
    )),
}  # fmt: skip


@dataclass(frozen=True)
class Write:
    """Who writes what: manager name, the object's API version, and the subresource."""

    manager: str
    api_version: str
    subresource: str = ""
    has_status: bool = False  # the kind has a status subresource (its writes are split)


def _key(entry: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(entry.get("manager", "")),
        str(entry.get("operation", "")),
        str(entry.get("apiVersion", "")),
        str(entry.get("subresource", "")),
    )


def _sort_key(entry: dict[str, Any]) -> tuple[str, str, str, str, str]:
    manager, operation, api_version, subresource = _key(entry)
    return (operation, str(entry.get("time", "")), manager, api_version, subresource)


def _untracked(write: Write) -> set[FieldPath]:
    """Prefixes the write cannot change (reset fields)."""
    if not write.has_status:
        return set()
    if write.subresource == "status":
        return {(("f", "spec"),), (("f", "metadata"),)}
    return {(("f", "status"),)}


def _filter(fields: set[FieldPath], write: Write) -> set[FieldPath]:
    reset = {p[0] for p in _untracked(write)}  # all single-field prefixes
    if not reset:
        return fields
    return {f for f in fields if f[0] not in reset}


def _bare(obj: dict[str, Any] | None) -> dict[str, Any]:
    if not obj:
        return {}
    out = dict(obj)
    out["metadata"] = {k: v for k, v in (obj.get("metadata") or {}).items() if k != "managedFields"}
    return out


def _entry(
    write: Write, operation: str, fields: set[FieldPath], time: str | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"manager": write.manager, "operation": operation}
    entry["apiVersion"] = write.api_version
    if time:
        entry["time"] = time
    entry["fieldsType"] = "FieldsV1"
    entry["fieldsV1"] = fieldsets.to_v1(fields)
    if write.subresource:
        entry["subresource"] = write.subresource
    return entry


def _without(entries: list[dict[str, Any]], drop: set[FieldPath]) -> list[dict[str, Any]]:
    """Entries with `drop` taken out of each; entries left empty are removed.

    An entry that holds none of `drop` (another manager's, for a status write) is kept as
    it is, found by walking down each dropped path instead of expanding its whole tree.
    """
    out = []
    for entry in entries:
        tree = entry.get("fieldsV1")
        if fieldsets.has_v1(tree) and not any(fieldsets.in_v1(tree, fp) for fp in drop):
            out.append(entry)
            continue
        fields = fieldsets.from_v1(tree)
        left = fields - drop
        if not left:
            continue
        if left != fields:
            entry = {**entry, "fieldsV1": fieldsets.to_v1(left)}
        out.append(entry)
    return out


def current_entries(obj: dict[str, Any] | None) -> list[dict[str, Any]]:
    managed = ((obj or {}).get("metadata") or {}).get("managedFields")
    return [e for e in managed if isinstance(e, dict)] if isinstance(managed, list) else []


def record_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    schema: Schema,
    write: Write,
    now: datetime | None = None,
) -> list[dict[str, Any]]:
    """The managedFields `new` gets when `write` turns `old` (None: nothing) into it."""
    entries = current_entries(old)
    given = (new.get("metadata") or {}).get("managedFields")
    if old is None and not given:
        return _created(new, schema, write, now)
    if isinstance(given, list) and given != entries and not write.subresource:
        # A client may set managedFields itself (an empty list resets them), except through
        # a subresource.
        entries = [e for e in given if isinstance(e, dict)]
    diff = fieldsets.compare(_bare(old) if old else _empty_like(new), _bare(new), schema)
    changed = _filter(diff.added | diff.modified, write) - _STRIPPED
    if not changed:
        return sorted(_without(entries, diff.removed), key=_sort_key)
    key = (write.manager, "Update", write.api_version, write.subresource)
    fields = changed | _kept_fields([e for e in entries if _key(e) == key], changed, diff.removed)
    entries = _without([e for e in entries if _key(e) != key], changed | diff.removed)
    entries.append(_entry(write, "Update", fields, now_rfc3339(now)))
    return sorted(entries, key=_sort_key)


def _kept_fields(
    mine: list[dict[str, Any]], changed: set[FieldPath], removed: set[FieldPath]
) -> set[FieldPath]:
    """What the writer's own earlier entry keeps: the first of its entries (a client may
    have sent several) that has fields besides the changed and removed ones, minus removed.

    The same set as taking the changed and removed fields out of every entry and reading
    the writer's back, with one expansion of its tree instead of two and a rebuild.
    """
    for entry in mine:
        fields = fieldsets.from_v1(entry.get("fieldsV1"))
        if fields - changed - removed:
            return fields - removed
    return set()


_STRIPPED_META = {f"f:{key}" for path in _STRIPPED if len(path) == 2 for _, key in path[1:]}


def _created(
    obj: dict[str, Any], schema: Schema, write: Write, now: datetime | None
) -> list[dict[str, Any]]:
    """record_update's fast path for a create: one entry, everything the writer set."""
    tree = fieldsets.added_v1(_empty_like(obj), _bare(obj), schema)
    for key in ("f:apiVersion", "f:kind"):
        tree.pop(key, None)
    meta = tree.get("f:metadata")
    if meta is not None:
        for key in (*_STRIPPED_META, "."):
            meta.pop(key, None)
        if not meta:
            del tree["f:metadata"]
    for prefix in _untracked(write):
        tree.pop(f"f:{prefix[0][1]}", None)
    if not tree:
        return []
    entry = _entry(write, "Update", set(), now_rfc3339(now))
    entry["fieldsV1"] = tree
    return [entry]


def _empty_like(obj: dict[str, Any]) -> dict[str, Any]:
    """What a new object is compared with: the empty object of its Go type.

    Typed objects always have their struct-valued top-level fields (metadata, spec,
    status...) and their fields without omitempty (null or ""), so creating one never adds
    those fields themselves, only what is under them.

    The shared template itself, not a copy: its callers (`fieldsets.compare`, `added_v1`)
    only read it, and the deep copy was a sixth of an Event create's CPU.
    """
    kind, api_version = str(obj.get("kind")), str(obj.get("apiVersion"))
    template = EMPTY_OBJECTS.get((kind, api_version)) or EMPTY_OBJECTS.get((kind, ""))
    return template if template is not None else {"metadata": {}}


_WITH_STATUS: dict[str, Any] = {"metadata": {}, "spec": {}, "status": {}}
#: Read-only: `_empty_like` hands these out to the comparisons as they are.
EMPTY_OBJECTS: dict[tuple[str, str], dict[str, Any]] = {
    ("Pod", ""): {"metadata": {}, "spec": {"containers": None}, "status": {}},
    ("Service", ""): _WITH_STATUS,
    ("Namespace", ""): _WITH_STATUS,
    ("Node", ""): _WITH_STATUS,
    ("Deployment", ""): _WITH_STATUS,
    ("CustomResourceDefinition", ""): _WITH_STATUS,
    ("Lease", ""): {"metadata": {}, "spec": {}},
    ("Event", "v1"): {
        "metadata": {},
        "involvedObject": {},
        "source": {},
        "firstTimestamp": None,
        "lastTimestamp": None,
        "eventTime": None,
        "reportingComponent": "",
        "reportingInstance": "",
    },
    ("Event", "events.k8s.io/v1"): {
        "metadata": {},
        "eventTime": None,
        "regarding": {},
        "deprecatedSource": {},
        "deprecatedFirstTimestamp": None,
        "deprecatedLastTimestamp": None,
    },
}


def conflict_error(conflicts: list[tuple[dict[str, Any], FieldPath]]) -> ApiError:
    def who(entry: dict[str, Any]) -> str:
        text = json.dumps(entry.get("manager", ""))
        if entry.get("subresource"):
            text += f" with subresource {json.dumps(entry['subresource'])}"
        if entry.get("operation") == "Update":
            text += f" using {entry.get('apiVersion', '')}"
        return text

    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {who(e)}",
            "field": fieldsets.path_string(p),
        }
        for e, p in conflicts
    ]
    if len(conflicts) == 1:
        message = f"Apply failed with 1 conflict: {causes[0]['message']}: {causes[0]['field']}"
    else:
        lines: list[str] = []
        for manager in sorted({who(e) for e, _ in conflicts}):
            lines.append(f"conflicts with {manager}:")
            lines += [
                f"- {c['field']}" for c in causes if c["message"] == f"conflict with {manager}"
            ]
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, {"causes": causes})


def record_apply(
    live: dict[str, Any] | None,
    config: dict[str, Any],
    merged: dict[str, Any],
    schema: Schema,
    write: Write,
    force: bool,
    now: datetime | None = None,
    ordered: bool = True,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the object after pruning, its managedFields) for an apply of `config` by `write`.

    `merged` is `config` merged into `live` (patch.apply_merge). Raises 409 on conflicts
    unless `force`. `ordered=False` keeps entries in write order instead of the API's order.
    """
    entries = current_entries(live)
    key = (write.manager, "Apply", write.api_version, write.subresource)
    previous = next((e for e in entries if _key(e) == key), None)
    others = [e for e in entries if _key(e) != key]
    applied = _filter(fieldsets.field_set(_bare(config), schema), write) - _STRIPPED
    last = fieldsets.from_v1(previous["fieldsV1"]) if previous else set()
    owned_by_others = set().union(*(fieldsets.from_v1(e.get("fieldsV1")) for e in others))
    result = copy.deepcopy(merged)
    fieldsets.remove_fields(result, last - applied - owned_by_others, last)
    base = _bare(live) if live else _empty_like(result)
    diff = fieldsets.compare(base, _bare(result), schema)
    changed = _filter(diff.added | diff.modified, write)
    conflicts = [
        (e, p) for e in others for p in sorted(fieldsets.from_v1(e.get("fieldsV1")) & changed)
    ]
    if conflicts and not force:
        raise conflict_error(conflicts)
    others = _without(others, changed | diff.removed)
    if changed or diff.removed:
        time: str | None = now_rfc3339(now)
    else:
        time = previous.get("time") if previous else None
    if applied:
        others.append(_entry(write, "Apply", applied, time))
    return result, sorted(others, key=_sort_key) if ordered else others

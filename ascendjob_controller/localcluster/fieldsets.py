"""Field sets as server-side apply tracks them (structured-merge-diff semantics, in Python).

A field path is a tuple of elements: ("f", name) for a field or map key, ("k", json) for the
element of a list keyed by fields (`k:{"name":"main"}`), ("v", json) for an element of a set
list. Lists are atomic unless the schema says otherwise (then the whole list is one field).

- `Schema`: which lists are sets or keyed maps, and which objects are maps (their keys are
  entries, not declared fields): a table for built-in kinds, the CRD's structural schema for
  custom resources (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`).
- `compare(old, new)`: the fields `new` added, modified and removed relative to `old`; an
  added object counts itself and everything under it.
- `field_set(obj)`: the fields an applied configuration sets (a declared field holding a
  non-empty object is reached through its children only, as upstream's ToFieldSet).
- `to_v1` / `from_v1`: the `fieldsV1` encoding of managedFields (`.` marks a member that
  also has members below it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from ascendjob_controller.localcluster import fastjson

PathElem = tuple[str, str]
FieldPath = tuple[PathElem, ...]
ListType = tuple[str, tuple[str, ...]]  # ("atomic"|"set"|"map", map keys)
SchemaPath = tuple[str, ...]  # field names, "[]" for a list element
ATOMIC: ListType = ("atomic", ())
_MISSING = object()


def _json(value: Any) -> str:
    """A list element's key as fieldsV1 spells it: compact JSON, keys sorted.

    orjson where it can (a tenth of a status write went into `json.dumps` here); it sorts
    keys by code point as json does, and writes the same bytes for anything but a float's
    notation (see fastjson.dumps).
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True)
class Schema:
    list_type: Callable[[SchemaPath], ListType] = field(default=lambda path: ATOMIC)
    is_map: Callable[[SchemaPath], bool] = field(default=lambda path: False)
    atomic_map: Callable[[SchemaPath], bool] = field(default=lambda path: False)


# --- built-in kinds ----------------------------------------------------------------------

_KEYED: dict[str, tuple[str, ...]] = {
    "containers": ("name",),
    "initContainers": ("name",),
    "ephemeralContainers": ("name",),
    "volumes": ("name",),
    "env": ("name",),
    "volumeMounts": ("mountPath",),
    "volumeDevices": ("devicePath",),
    "imagePullSecrets": ("name",),
    "hostAliases": ("ip",),
    "resourceClaims": ("name",),
    "schedulingGates": ("name",),
    "topologySpreadConstraints": ("topologyKey", "whenUnsatisfiable"),
    "ownerReferences": ("uid",),
    "conditions": ("type",),
    "podIPs": ("ip",),
    "hostIPs": ("ip",),
    "addresses": ("type",),
    "versions": ("name",),
}


def _builtin_list_type(kind: str) -> Callable[[SchemaPath], ListType]:
    def list_type(path: SchemaPath) -> ListType:
        names = tuple(p for p in path if p != "[]")
        if not names:
            return ATOMIC
        last = names[-1]
        if names == ("metadata", "finalizers"):
            return ("set", ())
        if last == "ports":
            if kind == "Service":
                return ("map", ("port", "protocol"))
            return ("map", ("containerPort", "protocol"))
        if last == "conditions" and names[0] != "status":
            return ATOMIC
        if last in _KEYED:
            return ("map", _KEYED[last])
        return ATOMIC

    return list_type


# Maps and structs replaced whole (`+mapType=atomic`, `+structType=atomic`): one field.
_ATOMIC_MAPS = {("Service", ("spec", "selector")), ("Pod", ("spec", "nodeSelector"))}
_ATOMIC_STRUCTS = {
    ("Event", ("involvedObject",)),
    ("Event", ("related",)),
    ("Event", ("regarding",)),
    ("", ("metadata", "ownerReferences", "[]")),
    ("Pod", ("spec", "imagePullSecrets", "[]")),
}


def builtin_schema(kind: str) -> Schema:
    atomic = frozenset(
        path for owner, path in _ATOMIC_MAPS | _ATOMIC_STRUCTS if owner in (kind, "")
    )

    def atomic_map(path: SchemaPath) -> bool:
        return path in atomic

    return Schema(list_type=_builtin_list_type(kind), atomic_map=atomic_map)


# --- custom resources --------------------------------------------------------------------

_DEDUCED: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}
_OBJECT_META = builtin_schema("")


def _resolve(schema: dict[str, Any] | None, path: SchemaPath) -> dict[str, Any]:
    current: dict[str, Any] = schema or _DEDUCED
    for name in path:
        if name == "[]":
            items = current.get("items")
            current = items if isinstance(items, dict) else _DEDUCED
            continue
        props = current.get("properties") or {}
        additional = current.get("additionalProperties")
        if name in props:
            current = props[name]
        elif isinstance(additional, dict):
            current = additional
        else:
            current = _DEDUCED
    return current


def crd_schema(open_api: dict[str, Any] | None) -> Schema:
    """A custom resource's schema; metadata follows ObjectMeta's rules."""

    def list_type(path: SchemaPath) -> ListType:
        if path[:1] == ("metadata",):
            return _OBJECT_META.list_type(path)
        node = _resolve(open_api, path)
        kind = node.get("x-kubernetes-list-type")
        if kind == "set":
            return ("set", ())
        if kind == "map":
            return ("map", tuple(node.get("x-kubernetes-list-map-keys") or ()))
        return ATOMIC

    def is_map(path: SchemaPath) -> bool:
        if path[:1] == ("metadata",):
            return len(path) == 2 and path[1] in ("labels", "annotations")
        node = _resolve(open_api, path)
        return not node.get("properties")

    return Schema(list_type=list_type, is_map=is_map)


# --- walking values ----------------------------------------------------------------------


def _element(item: Any, list_type: ListType) -> PathElem:
    kind, keys = list_type
    if kind == "map" and isinstance(item, dict):
        return ("k", _json({k: item[k] for k in keys if k in item}))
    return ("v", _json(item))


def _elements(value: Any, list_type: ListType) -> dict[PathElem, Any]:
    out: dict[PathElem, Any] = {}
    for item in value if isinstance(value, list) else ():
        out.setdefault(_element(item, list_type), item)
    return out


@dataclass
class Comparison:
    added: set[FieldPath] = field(default_factory=set)
    modified: set[FieldPath] = field(default_factory=set)
    removed: set[FieldPath] = field(default_factory=set)


def compare(old: Any, new: Any, schema: Schema) -> Comparison:
    out = Comparison()
    _compare(old, new, (), (), schema, out)
    return out


def _added(value: Any, path: FieldPath, spath: SchemaPath, schema: Schema, out: Comparison) -> None:
    """Everything at and under `path` is new (the fast path of a create)."""
    if path:
        out.added.add(path)
    if isinstance(value, dict):
        if not schema.atomic_map(spath):
            for key, child in value.items():
                _added(child, (*path, ("f", key)), (*spath, key), schema, out)
    elif isinstance(value, list):
        list_type = schema.list_type(spath)
        if list_type[0] != "atomic":
            for pe, item in _elements(value, list_type).items():
                _added(item, (*path, pe), (*spath, "[]"), schema, out)


def _scalar(value: Any) -> bool:
    """A JSON string, number, boolean or null that is present."""
    return value is not _MISSING and not isinstance(value, dict | list)


def _differs(lhs: Any, rhs: Any) -> bool:
    """Two present values are not the same JSON value (1, 1.0 and True all differ)."""
    return bool(lhs != rhs) or type(lhs) is not type(rhs)


def _compare(
    lhs: Any, rhs: Any, path: FieldPath, spath: SchemaPath, schema: Schema, out: Comparison
) -> None:
    if lhs is _MISSING:
        _added(rhs, path, spath, schema, out)
        return
    if lhs is None and isinstance(rhs, dict | list):
        # A typed field that exists but is null (a Go nil slice without omitempty): what
        # goes in is added below it, the field itself is not.
        _compare(type(rhs)(), rhs, path, spath, schema, out)
        return
    granular_list = False
    if isinstance(lhs if lhs is not _MISSING else rhs, list):
        granular_list = schema.list_type(spath)[0] != "atomic"
    both_or_one = [v for v in (lhs, rhs) if v is not _MISSING]
    if len(both_or_one) == 2 and isinstance(lhs, dict | list) and fastjson.identical(lhs, rhs):
        return  # nothing below changed: skip the walk (most of an update's tree)
    if all(isinstance(v, dict) for v in both_or_one) and not schema.atomic_map(spath):
        left = lhs if isinstance(lhs, dict) else {}
        right = rhs if isinstance(rhs, dict) else {}
        for key in {*left, *right}:
            lv, rv = left.get(key, _MISSING), right.get(key, _MISSING)
            if _scalar(lv) and _scalar(rv):
                # Two scalars (most leaves of a status write): the last branch below,
                # without a call per field.
                if _differs(lv, rv):
                    out.modified.add((*path, ("f", key)))
                continue
            _compare(lv, rv, (*path, ("f", key)), (*spath, key), schema, out)
    elif granular_list and all(isinstance(v, list) for v in both_or_one):
        list_type = schema.list_type(spath)
        left_items = _elements(lhs, list_type) if lhs is not _MISSING else {}
        right_items = _elements(rhs, list_type) if rhs is not _MISSING else {}
        for pe in {*left_items, *right_items}:
            _compare(
                left_items.get(pe, _MISSING), right_items.get(pe, _MISSING),
                (*path, pe), (*spath, "[]"), schema, out,
            )  # fmt: skip
    elif lhs is not _MISSING and rhs is not _MISSING:
        if _differs(lhs, rhs):
            out.modified.add(path)
        return
    if not path:
        return
    if lhs is _MISSING:
        out.added.add(path)
    elif rhs is _MISSING:
        out.removed.add(path)


def added_v1(template: Any, value: Any, schema: Schema) -> dict[str, Any]:
    """The fieldsV1 of what `value` adds to `template` (compare's `added`, built directly).

    A create compares the new object with its type's empty object; building the tree in one
    walk, without path tuples, keeps creates cheap.
    """
    return _added_tree(template, value, (), schema, member=False) or {}


def _added_tree(
    template: Any, value: Any, spath: SchemaPath, schema: Schema, member: bool
) -> dict[str, Any] | None:
    if template is None and isinstance(value, dict | list):
        template = type(value)()  # a typed null field: itself not added
    node: dict[str, Any] = {}
    if isinstance(value, dict) and not schema.atomic_map(spath):
        base = template if isinstance(template, dict) else {}
        for key, child in value.items():
            known = key in base
            sub = _added_tree(
                base[key] if known else _MISSING, child, (*spath, key), schema, not known
            )
            if sub is not None:
                node[f"f:{key}"] = sub
    elif isinstance(value, list) and schema.list_type(spath)[0] != "atomic":
        for (kind, name), item in _elements(value, schema.list_type(spath)).items():
            node[f"{kind}:{name}"] = _added_tree(_MISSING, item, (*spath, "[]"), schema, True) or {}
    elif template is not _MISSING and not member:
        changed = template != value or type(template) is not type(value)
        return {} if changed else None  # a modified leaf is owned as well
    if member and node:
        node["."] = {}
    return node if (member or node) else None


def field_set(obj: Any, schema: Schema) -> set[FieldPath]:
    """The fields an applied configuration sets (upstream's ToFieldSet)."""
    out: set[FieldPath] = set()
    _collect(obj, (), (), schema, out)
    return out


def _collect(
    value: Any, path: FieldPath, spath: SchemaPath, schema: Schema, out: set[FieldPath]
) -> None:
    if isinstance(value, dict) and not schema.atomic_map(spath):
        is_map = schema.is_map(spath)
        for key, child in value.items():
            child_path = (*path, ("f", key))
            _collect(child, child_path, (*spath, key), schema, out)
            if child is None or child == {} or is_map:
                out.add(child_path)
        return
    if isinstance(value, list) and schema.list_type(spath)[0] != "atomic":
        for pe, item in _elements(value, schema.list_type(spath)).items():
            _collect(item, (*path, pe), (*spath, "[]"), schema, out)
            out.add((*path, pe))
        return
    if path:
        out.add(path)


# --- fieldsV1 ----------------------------------------------------------------------------


def to_v1(fields: set[FieldPath]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    nodes = []
    for fp in sorted(fields):
        node = tree
        for kind, name in fp:
            node = node.setdefault(f"{kind}:{name}", {})
        nodes.append(node)
    for node in nodes:  # a member with members below it says so with "."
        if node:
            node["."] = {}
    return tree


def from_v1(tree: Any, prefix: FieldPath = ()) -> set[FieldPath]:
    out: set[FieldPath] = set()
    if not isinstance(tree, dict):
        return out
    for key, child in tree.items():
        if key == "." or ":" not in key:
            continue
        kind, _, name = key.partition(":")
        path = (*prefix, (kind, name))
        children = {k: v for k, v in child.items() if k != "."} if isinstance(child, dict) else {}
        if not children or "." in child:
            out.add(path)
        out |= from_v1(children, path)
    return out


def has_v1(tree: Any) -> bool:
    """`bool(from_v1(tree))`, stopping at the first field (at once, for any real entry)."""
    if not isinstance(tree, dict):
        return False
    for key, child in tree.items():
        if key == "." or ":" not in key:
            continue
        children = {k: v for k, v in child.items() if k != "."} if isinstance(child, dict) else {}
        if not children or "." in child or has_v1(children):
            return True
    return False


def in_v1(tree: Any, fp: FieldPath) -> bool:
    """`fp in from_v1(tree)`, without expanding the whole tree: one walk down `fp`."""
    node = tree
    for kind, name in fp:
        if not isinstance(node, dict) or (key := f"{kind}:{name}") not in node:
            return False
        node = node[key]
    if not fp or not isinstance(node, dict):
        return bool(fp)
    return "." in node or not any(key != "." for key in node)


def path_string(fp: FieldPath) -> str:
    """A path as conflict messages print it: `.data.a`, `.spec.containers[name="main"]`."""
    out = ""
    for kind, name in fp:
        if kind == "f":
            out += f".{name}"
        elif kind == "k":
            keys = json.loads(name)
            out += "[" + ",".join(f"{k}={_json(v)}" for k, v in keys.items()) + "]"
        elif kind == "v":
            out += f"[={name}]"
        else:
            out += f"[{name}]"
    return out


def under(fp: FieldPath, prefixes: set[FieldPath]) -> bool:
    return any(fp[: len(p)] == p for p in prefixes)


# --- removing fields --------------------------------------------------------------------


def _remove_path(obj: Any, fp: FieldPath) -> None:
    """Remove the field at fp from obj (in place); silently stop if it is already gone."""
    cur = obj
    for i, (kind_, name) in enumerate(fp):
        last = i == len(fp) - 1
        if kind_ == "f":
            if not isinstance(cur, dict) or name not in cur:
                return
            if last:
                del cur[name]
                return
            cur = cur[name]
        elif kind_ in ("k", "v"):
            if not isinstance(cur, list):
                return
            want = json.loads(name)
            if kind_ == "k":
                idx = [
                    j
                    for j, e in enumerate(cur)
                    if isinstance(e, dict) and all(e.get(k) == v for k, v in want.items())
                ]
            else:
                idx = [j for j, e in enumerate(cur) if e == want]
            if not idx:
                return
            if last:
                del cur[idx[0]]
                return
            cur = cur[idx[0]]
        else:
            return


def remove_fields(
    obj: dict[str, Any], dropped: set[FieldPath], owned_before: set[FieldPath]
) -> None:
    """Remove fields a manager stopped applying (in place; apply's pruning).

    Leaves and list elements go; a map the manager only reached through its children is kept
    unless it ends up empty (Go omits empty maps), so fields set by writers we do not track
    survive.
    """

    def has_children(fp: FieldPath) -> bool:
        return any(len(o) > len(fp) and o[: len(fp)] == fp for o in owned_before)

    containers: set[FieldPath] = set()
    for fp in sorted(dropped, key=len):
        if fp[-1][0] == "f" and has_children(fp):
            containers.add(fp)
        else:
            _remove_path(obj, fp)
        containers |= {fp[:i] for i in range(1, len(fp)) if all(k == "f" for k, _ in fp[:i])}
    for fp in sorted(containers, key=len, reverse=True):
        value = _lookup(obj, fp)
        if value in ({}, []) and fp != (("f", "metadata"),):
            _remove_path(obj, fp)


def _lookup(obj: Any, fp: FieldPath) -> Any:
    cur = obj
    for kind_, name in fp:
        if kind_ != "f" or not isinstance(cur, dict) or name not in cur:
            return None
        cur = cur[name]
    return cur

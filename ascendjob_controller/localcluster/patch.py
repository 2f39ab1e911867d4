"""The four patch flavours kube-apiserver accepts, as pure functions over JSON-like values.

- `json_merge_patch`: RFC 7386 (`application/merge-patch+json`).
- `json_patch`: RFC 6902 (`application/json-patch+json`).
- `strategic_merge_patch`: `application/strategic-merge-patch+json` for built-in kinds. Which
  lists merge by which key is a table here (`_LIST_RULES`) instead of Go struct tags; only the
  fields kubectl and our controller touch are listed, every other list is replaced whole.
- `apply_merge`: the merge step of server-side apply (`application/apply-patch+yaml`): the
  applied configuration merged into the live object (strategic list rules for built-in kinds,
  recursive map merge with lists replaced for custom resources). Field ownership, pruning and
  conflicts are managedfields.py's; `apply_patch` does both in one call.

No function mutates its inputs: every result is a fresh deep copy, so the server can patch a
stored object and throw the result away when validation fails, leaving storage untouched.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime
from typing import Any


class PatchError(ValueError):
    """A patch that cannot be applied: the server answers 422 (or 400 for a malformed one)."""


# --- RFC 7386 ------------------------------------------------------------------------------


def json_merge_patch(target: Any, patch: Any, *, owned: bool = False) -> Any:
    """RFC 7386: maps merge recursively, null deletes, anything else (lists too) replaces.

    `target` is left as it was, unless `owned` says it is the caller's own copy (the server
    patches a fresh decode of the stored object): then it is changed in place, which saves
    a deep copy per level on every PATCH."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if isinstance(target, dict):
        result: dict[str, Any] = target if owned else copy.deepcopy(target)
    else:
        result = {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value, owned=True)
    return result


# --- RFC 6902 ------------------------------------------------------------------------------


def _parse_pointer(pointer: Any) -> list[str]:
    if not isinstance(pointer, str):
        raise PatchError(f"JSON pointer must be a string, got {pointer!r}")
    if pointer == "":
        return []
    if not pointer.startswith("/"):
        raise PatchError(f"JSON pointer must start with '/': {pointer!r}")
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer[1:].split("/")]


def _list_index(token: str, length: int, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return length
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchError(f"invalid array index {token!r}")
    index = int(token)
    limit = length if allow_end else length - 1
    if index > limit:
        raise PatchError(f"array index {index} out of bounds (length {length})")
    return index


def _resolve_parent(doc: Any, tokens: list[str], pointer: str) -> Any:
    cur = doc
    for token in tokens[:-1]:
        if isinstance(cur, dict):
            if token not in cur:
                raise PatchError(f"path {pointer!r}: key {token!r} not found")
            cur = cur[token]
        elif isinstance(cur, list):
            cur = cur[_list_index(token, len(cur), allow_end=False)]
        else:
            raise PatchError(f"path {pointer!r}: cannot traverse into a scalar")
    return cur


def _get(doc: Any, pointer: str) -> Any:
    tokens = _parse_pointer(pointer)
    if not tokens:
        return doc
    parent = _resolve_parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {pointer!r} not found")
        return parent[last]
    if isinstance(parent, list):
        return parent[_list_index(last, len(parent), allow_end=False)]
    raise PatchError(f"path {pointer!r}: cannot traverse into a scalar")


def _add(doc: Any, pointer: str, value: Any) -> Any:
    tokens = _parse_pointer(pointer)
    if not tokens:
        return value
    parent = _resolve_parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_list_index(last, len(parent), allow_end=True), value)
    else:
        raise PatchError(f"path {pointer!r}: cannot add into a scalar")
    return doc


def _remove(doc: Any, pointer: str) -> tuple[Any, Any]:
    tokens = _parse_pointer(pointer)
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _resolve_parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {pointer!r} not found")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_list_index(last, len(parent), allow_end=False))
    raise PatchError(f"path {pointer!r}: cannot remove from a scalar")


def _replace(doc: Any, pointer: str, value: Any) -> Any:
    tokens = _parse_pointer(pointer)
    if not tokens:
        return value
    parent = _resolve_parent(doc, tokens, pointer)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {pointer!r} not found")
        parent[last] = value
    elif isinstance(parent, list):
        parent[_list_index(last, len(parent), allow_end=False)] = value
    else:
        raise PatchError(f"path {pointer!r}: cannot replace in a scalar")
    return doc


def _json_equal(a: Any, b: Any) -> bool:
    # JSON equality: 1 == 1.0, but True != 1 (bool is an int subclass in Python).
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and (isinstance(a, (int, float)) == isinstance(b, (int, float)))


def json_patch(target: Any, ops: Any, *, owned: bool = False, fresh_values: bool = False) -> Any:
    """RFC 6902 over a deep copy of target (over target itself if `owned`: the caller's own
    copy, discarded on error); the whole patch applies or PatchError is raised.

    `fresh_values`: the ops' values are the caller's to give away (a request body decoded
    for this call alone), so `add` and `replace` place them without a deep copy: json.loads
    never shares an object between two places, so nothing in the result aliases.
    """
    if not isinstance(ops, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = target if owned else copy.deepcopy(target)
    given = (lambda value: value) if fresh_values else copy.deepcopy
    for i, op in enumerate(ops):
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"operation {i} must be an object with 'op' and 'path'")
        name, path = op["op"], op["path"]
        if name in ("add", "replace", "test") and "value" not in op:
            raise PatchError(f"operation {i} ({name}) is missing 'value'")
        if name in ("move", "copy") and "from" not in op:
            raise PatchError(f"operation {i} ({name}) is missing 'from'")
        if name == "add":
            doc = _add(doc, path, given(op["value"]))
        elif name == "remove":
            doc, _ = _remove(doc, path)
        elif name == "replace":
            doc = _replace(doc, path, given(op["value"]))
        elif name == "move":
            src = op["from"]
            if path != src and str(path).startswith(str(src) + "/"):
                raise PatchError(f"operation {i}: cannot move {src!r} into its own child")
            doc, value = _remove(doc, src)
            doc = _add(doc, path, value)
        elif name == "copy":
            doc = _add(doc, path, copy.deepcopy(_get(doc, op["from"])))
        elif name == "test":
            if not _json_equal(_get(doc, path), op["value"]):
                raise PatchError(f"testing value {path} failed")
        else:
            raise PatchError(f"operation {i}: unknown op {name!r}")
    return doc


# --- strategic merge patch -----------------------------------------------------------------

# A list rule: ("merge", key) merges maps by key; ("set", None) merges primitives as a set.
ListRule = tuple[str, str | None]

# Field name -> rule, for every built-in kind. Field names are specific enough in the core API
# that the name alone decides; `ports` is the one exception (see `_list_rule`).
_LIST_RULES: dict[str, ListRule] = {
    "containers": ("merge", "name"),
    "initContainers": ("merge", "name"),
    "ephemeralContainers": ("merge", "name"),
    "env": ("merge", "name"),
    "volumes": ("merge", "name"),
    "volumeMounts": ("merge", "mountPath"),
    "volumeDevices": ("merge", "devicePath"),
    "imagePullSecrets": ("merge", "name"),
    "hostAliases": ("merge", "ip"),
    "podIPs": ("merge", "ip"),
    "hostIPs": ("merge", "ip"),
    "ownerReferences": ("merge", "uid"),
    "conditions": ("merge", "type"),
    "finalizers": ("set", None),
    "topologySpreadConstraints": ("merge", "topologyKey"),
    "schedulingGates": ("merge", "name"),
    "resourceClaims": ("merge", "name"),
    "secrets": ("merge", "name"),  # ServiceAccount.secrets
}

# Maps whose keys are user data, not field names: a key there never names a list rule.
_OPAQUE_MAPS = {"labels", "annotations", "data", "binaryData", "stringData", "nodeSelector"}

_DIRECTIVE = "$patch"
_RETAIN_KEYS = "$retainKeys"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"
_SET_ORDER = "$setElementOrder/"


def _list_rule(kind: str, path: tuple[str, ...]) -> ListRule | None:
    """The strategic rule for the list at `path` (map keys from the root) in an object of kind."""
    name = path[-1]
    if name == "ports":
        if kind == "Service" and path == ("spec", "ports"):
            return ("merge", "port")
        if len(path) >= 2 and path[-2] in ("containers", "initContainers", "ephemeralContainers"):
            return ("merge", "containerPort")
        return None
    if name == "finalizers" and path != ("metadata", "finalizers"):
        return None  # Namespace spec.finalizers is a plain list
    if len(path) >= 2 and path[-2] in _OPAQUE_MAPS:
        return None
    return _LIST_RULES.get(name)


def strategic_merge_patch(
    target: dict[str, Any], patch: dict[str, Any], kind: str, *, owned: bool = False
) -> dict[str, Any]:
    """Apply a strategic merge patch to a built-in object; returns a new object (or changes
    `target` itself when `owned`: the caller's own copy)."""
    if not isinstance(patch, dict):
        raise PatchError("a strategic merge patch must be a JSON object")
    base = (target if owned else copy.deepcopy(target)) if isinstance(target, dict) else {}
    merged = _merge_map(base, patch, kind, ())
    return merged if merged is not None else {}


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], kind: str, path: tuple[str, ...]
) -> dict[str, Any] | None:
    """Merge patch into original (owned by the caller, mutated); None means "delete me"."""
    directive = patch.get(_DIRECTIVE)
    if directive == "delete":
        return None
    if directive == "replace":
        return _strip_directives({k: v for k, v in patch.items() if k != _DIRECTIVE})
    if directive not in (None, "merge"):
        raise PatchError(f"unknown patch type: {directive!r} in map at {'.'.join(path) or '.'}")

    retain = patch.get(_RETAIN_KEYS)
    if retain is not None:
        if not isinstance(retain, list):
            raise PatchError(f"$retainKeys must be a list at {'.'.join(path)}")
        keep = set(retain)
        for key in list(original):
            if key not in keep:
                del original[key]

    # Deletions from primitive lists run before the merge, as upstream does.
    for key, value in patch.items():
        if key.startswith(_DELETE_PRIMITIVE):
            field = key[len(_DELETE_PRIMITIVE) :]
            if not isinstance(value, list):
                raise PatchError(f"{key} must be a list")
            current = original.get(field)
            if isinstance(current, list):
                original[field] = [v for v in current if v not in value]

    for key, value in patch.items():
        if key in (_DIRECTIVE, _RETAIN_KEYS) or key.startswith(_DELETE_PRIMITIVE):
            continue
        if key.startswith(_SET_ORDER):
            continue
        child_path = (*path, key)
        if value is None:
            original.pop(key, None)
            continue
        current = original.get(key)
        if isinstance(value, dict):
            base = current if isinstance(current, dict) else {}
            merged = _merge_map(base, value, kind, child_path)
            if merged is None:
                original.pop(key, None)
            else:
                original[key] = merged
        elif isinstance(value, list):
            rule = _list_rule(kind, child_path)
            base_list = current if isinstance(current, list) else []
            original[key] = _merge_list(base_list, value, rule, kind, child_path)
        else:
            original[key] = copy.deepcopy(value)

    for key, order in patch.items():
        if key.startswith(_SET_ORDER):
            field = key[len(_SET_ORDER) :]
            if not isinstance(order, list):
                raise PatchError(f"{key} must be a list")
            current = original.get(field)
            if isinstance(current, list):
                rule = _list_rule(kind, (*path, field))
                original[field] = _apply_order(current, order, rule)
    return original


def _merge_list(
    original: list[Any], patch: list[Any], rule: ListRule | None, kind: str, path: tuple[str, ...]
) -> list[Any]:
    if rule is None:
        return _strip_directives(copy.deepcopy(patch))
    strategy, key = rule
    # A `{"$patch": "replace"}` element replaces the whole list with the rest of the patch.
    if any(isinstance(e, dict) and e.get(_DIRECTIVE) == "replace" for e in patch):
        rest = [e for e in patch if not (isinstance(e, dict) and e.get(_DIRECTIVE) == "replace")]
        return _strip_directives(copy.deepcopy(rest))
    if strategy == "set":
        result = list(original)
        for item in patch:
            if isinstance(item, dict):
                raise PatchError(f"{'.'.join(path)}: expected a primitive list")
            if item not in result:
                result.append(item)
        return result
    assert key is not None
    result = list(original)
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"{'.'.join(path)}: expected a list of objects")
        if key not in item:
            raise PatchError(f"map: {item} does not contain declared merge key: {key}")
        matches = [
            i for i, e in enumerate(result) if isinstance(e, dict) and e.get(key) == item[key]
        ]
        if item.get(_DIRECTIVE) == "delete":
            result = [e for i, e in enumerate(result) if i not in matches]
            continue
        if matches:
            merged = _merge_map(result[matches[0]], item, kind, path)
            if merged is None:
                result.pop(matches[0])
            else:
                result[matches[0]] = merged
        else:
            merged = _merge_map({}, item, kind, path)
            if merged is not None:
                result.append(merged)
    return result


def _element_id(item: Any, rule: ListRule | None) -> Any:
    if rule is not None and rule[0] == "merge" and isinstance(item, dict):
        return json.dumps(item.get(rule[1]), sort_keys=True)
    return json.dumps(item, sort_keys=True)


def _apply_order(current: list[Any], order: list[Any], rule: ListRule | None) -> list[Any]:
    """Reorder per `$setElementOrder`: listed elements take the listed order, in the slots the
    listed elements occupy; elements the patch did not mention keep their positions."""
    rank = {_element_id(o, rule): i for i, o in enumerate(order)}
    listed = [e for e in current if _element_id(e, rule) in rank]
    listed.sort(key=lambda e: rank[_element_id(e, rule)])
    it = iter(listed)
    return [next(it) if _element_id(e, rule) in rank else e for e in current]


def _strip_directives(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _strip_directives(v)
            for k, v in value.items()
            if not (
                k in (_DIRECTIVE, _RETAIN_KEYS)
                or k.startswith(_DELETE_PRIMITIVE)
                or k.startswith(_SET_ORDER)
            )
        }
    if isinstance(value, list):
        return [_strip_directives(v) for v in value]
    return value


# --- server-side apply ---------------------------------------------------------------------


def _merge_apply_custom(existing: Any, applied: Any) -> Any:
    if isinstance(existing, dict) and isinstance(applied, dict):
        result = dict(existing)
        for key, value in applied.items():
            if value is None:
                result.pop(key, None)
            else:
                result[key] = _merge_apply_custom(existing.get(key), value)
        return result
    return copy.deepcopy(applied)


def apply_merge(
    existing: dict[str, Any] | None, applied: dict[str, Any], builtin: bool, kind: str
) -> dict[str, Any]:
    """The applied configuration merged into the live object (no field bookkeeping).

    Built-in kinds merge lists by their strategic keys; custom resources merge maps and
    replace lists, as a schema without list types does.
    """
    base = copy.deepcopy(existing) if existing else {}
    body = copy.deepcopy(applied)
    (body.get("metadata") or {}).pop("managedFields", None)
    return strategic_merge_patch(base, body, kind) if builtin else _merge_apply_custom(base, body)


def apply_patch(
    existing: dict[str, Any] | None,
    applied: dict[str, Any],
    field_manager: str,
    builtin: bool,
    kind: str,
    now: datetime | None = None,
    schema: Any = None,
) -> dict[str, Any]:
    """Server-side apply in one call, forcing conflicts (see managedfields.record_apply).

    The server checks fieldManager, apiVersion and kind itself (with the real errors) and
    detects conflicts; this keeps the entries in write order for callers that want one step.
    """
    from ascendjob_controller.localcluster import fieldsets, managedfields

    if not isinstance(applied, dict):
        raise PatchError("an apply patch must be an object")
    if not field_manager:
        raise PatchError("PATCH requests with apply content type must specify a fieldManager")
    for key in ("apiVersion", "kind"):
        if not applied.get(key):
            raise PatchError(f"{key} must be set in an apply patch")
    merged = apply_merge(existing, applied, builtin, kind)
    if schema is None:
        schema = fieldsets.builtin_schema(kind) if builtin else fieldsets.Schema()
    write = managedfields.Write(field_manager, str(applied.get("apiVersion")))
    result, entries = managedfields.record_apply(
        existing, applied, merged, schema, write, force=True, now=now, ordered=False
    )
    result.setdefault("metadata", {})["managedFields"] = entries
    return result

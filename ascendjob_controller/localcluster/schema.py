"""Structural OpenAPI v3 schema handling for custom resources, as kube-apiserver does it.

The server calls, in this order, on every write of a custom resource:
`prune` (drop undeclared fields; their paths feed `fieldValidation=Strict/Warn`),
`apply_defaults`, then `validate`, whose causes go verbatim into the 422 Invalid Status.

Cause shapes follow apimachinery's field.Error: the `message` is what kubectl prints after the
field path, e.g. `Invalid value: "string": spec.x in body must be of type integer: "string"`.
Type mismatches carry the reason `FieldValueTypeInvalid`, as the real server sends them
(the message still begins with "Invalid value", which is what users and kubectl see).

Numbers as kube-apiserver v1.37 checks them (kube-openapi): a float is an integer only when
it is integral and below 2^53 in size (`typed_fields.go_numbers` has made those ints already);
a float an integer field refuses gets a type cause (`must be of type int32: "float64"` where a
format is set) and the number checks still run after it. `format: int32`/`int64` is a range:
a value outside it, or not integral, gets the cause `<nil>: Invalid value: "": Checked value
must be of type integer with format int32 in <path>`.

An update is validated with ratcheting (KEP-4008; on by default since 1.30, GA in 1.33): a part
of the new object that is the same JSON as the stored object's part at the same place is not
validated again, so an object made invalid by a tightened schema can still be updated
elsewhere, and a status write does not re-validate an unchanged spec. Object properties and
map values are matched by key, items of `x-kubernetes-list-type: map` lists by their keys;
other list items are not matched (a changed atomic list or set is validated whole). As
upstream (kube-openapi's ratcheting validator), an unchanged node drops every error of its
own, its quantors' (`allOf`...) included, while the branches of a quantor are never matched
with old values on their own.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

from ascendjob_controller.localcluster import fastjson
from ascendjob_controller.localcluster.goquote import go_quote
from ascendjob_controller.localcluster.typed_fields import JSON_INTEGER_LIMIT, GoNegativeZero

Cause = dict[str, str]

_INT_BOUNDS = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}

_TOP_LEVEL_META = ("apiVersion", "kind", "metadata")


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "number" if isinstance(value, GoNegativeZero) else "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _fmt_value(value: Any) -> str:
    """A bad value as Go's field.Error prints it: strings quoted by `%q`, numbers bare."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if value is None:
        return "null"
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _fmt_number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def _invalid(path: str, value: Any, detail: str) -> Cause:
    return {
        "reason": "FieldValueInvalid",
        "message": f"Invalid value: {_fmt_value(value)}: {detail}",
        "field": path,
    }


def _matches_type(schema: dict[str, Any], value: Any) -> tuple[bool, str]:
    """Whether value has the schema's type, and the type name to print when it does not."""
    if schema.get("x-kubernetes-int-or-string"):
        ok = (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)
        return ok, "integer,string"
    want = schema.get("type")
    if not want:
        return True, ""
    got = _type_name(value)
    if want == "number":
        return got in ("integer", "number"), want
    if want == "integer" and got == "number":
        # kube-openapi takes 1.0 (and -0) for an integer (IsFloat64AJSONInteger), up to 2^53.
        if isinstance(value, GoNegativeZero):
            return True, want
        return value.is_integer() and abs(value) < JSON_INTEGER_LIMIT, want
    return got == want, want


#: Nothing stored at this place before the update (a create, or a new field or item).
_NEW = object()


def validate(
    schema: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None = None
) -> list[Cause]:
    """All violations of schema by obj, as 422 causes (empty when obj is valid).

    `old` is the stored object an update replaces: what the update left as it was is
    ratcheted (the module docstring).
    """
    causes: list[Cause] = []
    if not isinstance(obj, dict):
        return [_type_cause("", obj, "object")]
    top = dict(schema)
    props = dict(top.get("properties") or {})
    for key in _TOP_LEVEL_META:
        props.pop(key, None)
    top["properties"] = props
    top["required"] = [r for r in top.get("required") or [] if r not in _TOP_LEVEL_META]
    meta = obj.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        causes.append(_type_cause("metadata", meta, "object"))
    body = {k: v for k, v in obj.items() if k not in _TOP_LEVEL_META}
    before: Any = _NEW
    if isinstance(old, dict):
        before = {k: v for k, v in old.items() if k not in _TOP_LEVEL_META}
    _validate(top, body, "", causes, before)
    return causes


def validate_status(
    schema: dict[str, Any], obj: dict[str, Any], old: dict[str, Any] | None = None
) -> list[Cause]:
    """A status write's causes: kube-apiserver validates the status alone, with a validator
    of the status schema rooted at `status`. A cause's field is under `status`; its message
    names the path from the status down (`status.conditions[0].x: Invalid value: 5:
    conditions[0].x in body must be of type string`)."""
    status_schema = (schema.get("properties") or {}).get("status")
    if not isinstance(status_schema, dict) or "status" not in obj:
        return []
    causes: list[Cause] = []
    before = old.get("status", _NEW) if isinstance(old, dict) else _NEW
    _validate(status_schema, obj["status"], "", causes, before)
    for cause in causes:
        inner = cause.get("field", "")
        cause["field"] = "status" + (f".{inner}" if inner and inner[0] != "[" else inner)
    return causes


def _ratcheted(value: Any, old: Any) -> bool:
    """The update left this part as it was: upstream drops whatever its validation finds."""
    return old is not _NEW and fastjson.identical(value, old)


def _old_child(old: Any, key: str) -> Any:
    return old.get(key, _NEW) if isinstance(old, dict) else _NEW


def _old_items(schema: dict[str, Any], keys: list[str], old: Any) -> dict[tuple[Any, ...], Any]:
    """A map list's old items by their `keys`; {} for other lists (their items are not
    matched)."""
    if schema.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(old, list):
        return {}
    return {_item_key(keys, item): item for item in old if isinstance(item, dict)}


def _item_key(keys: list[str], item: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(fastjson.dumps(item.get(k)) for k in keys)


def _type_cause(path: str, value: Any, want: str, got: str | None = None) -> Cause:
    """`got` names the value's type where JSON's name is not the one printed (Go's)."""
    got = _type_name(value) if got is None else got
    shown = path or "body"
    return {
        "reason": "FieldValueTypeInvalid",
        "message": f'Invalid value: "{got}": {shown} in body must be of type {want}: "{got}"',
        "field": path,
    }


#: The format kube-openapi's type validator gives a Go value (`schemaInfoForType`): what it
#: prints for a value of the wrong type in a field that has a format.
_GO_FORMATS: dict[type, str] = {
    bool: "",
    dict: "",
    float: "float64",
    GoNegativeZero: "float64",
    int: "int64",
}


def _mismatch(schema: dict[str, Any], value: Any, path: str, want: str) -> Cause:
    """The type cause for a value `_matches_type` refused.

    Where the schema has a format, kube-openapi names the format instead of the type for
    any value that is neither a string nor an array, and the value's own Go format with it:
    `must be of type int32: ""` for a boolean or an object, `"float64"` for a float.
    """
    fmt = schema.get("format")
    if fmt and not isinstance(value, (str, list)) and not schema.get("x-kubernetes-int-or-string"):
        return _type_cause(path, value, fmt, _GO_FORMATS.get(type(value), ""))
    return _type_cause(path, value, want)


def _validate(
    schema: dict[str, Any], value: Any, path: str, causes: list[Cause], old: Any = _NEW
) -> None:
    """Every cause of `value` against `schema`, as kube-openapi's schema validator finds them.

    Its validators run in a fixed order and each one that applies to the value's kind runs,
    whether or not an earlier one failed: the type, the quantors (allOf...), the string, the
    number or the array checks, the enum, then an object's properties. So a value of the wrong
    type still gets the enum's cause ("Unsupported value: 5"), and a float in an integer field
    the range checks.
    """
    if _ratcheted(value, old):
        return
    if value is None:
        if schema.get("nullable"):
            return
        if schema.get("type") or schema.get("x-kubernetes-int-or-string"):
            want = "integer,string" if schema.get("x-kubernetes-int-or-string") else schema["type"]
            causes.append(_type_cause(path, value, want))
        return
    ok, want = _matches_type(schema, value)
    if not ok:
        causes.append(_mismatch(schema, value, path, want))
    if not _QUANTORS.isdisjoint(schema):
        _validate_quantors(schema, value, path, causes)
    shown = path or "body"
    if isinstance(value, str):
        _validate_string(schema, value, path, shown, causes)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _validate_number(schema, value, path, shown, causes)
    elif isinstance(value, list):
        _validate_array(schema, value, path, shown, causes, old)
    if "enum" in schema:
        _validate_enum(schema, value, path, causes)
    if isinstance(value, dict):
        _validate_object(schema, value, path, shown, causes, old)


#: The schema keys `_validate_quantors` reads (most schemas have none of them).
_QUANTORS = frozenset({"allOf", "anyOf", "oneOf", "not"})


def _validate_quantors(schema: dict[str, Any], value: Any, path: str, causes: list[Cause]) -> None:
    for sub in schema.get("allOf") or []:
        _validate(sub, value, path, causes)
    any_of = schema.get("anyOf")
    int_or_string = schema.get("x-kubernetes-int-or-string")
    if any_of and not int_or_string and not any(_passes(s, value, path) for s in any_of):
        causes.append(_invalid("", "", f'"{path}" must validate at least one schema (anyOf)'))
    one_of = schema.get("oneOf")
    if one_of:
        passing = sum(1 for sub in one_of if _passes(sub, value, path))
        if passing != 1:
            causes.append(
                _invalid("", "", f'"{path}" must validate one and only one schema (oneOf)')
            )
    not_schema = schema.get("not")
    if isinstance(not_schema, dict) and _passes(not_schema, value, path):
        causes.append(_invalid("", "", f'"{path}" must not validate the schema (not)'))


def _validate_enum(schema: dict[str, Any], value: Any, path: str, causes: list[Cause]) -> None:
    if not any(_same(value, e) for e in schema["enum"]):
        supported = ", ".join(
            json.dumps(e) if isinstance(e, str) else json.dumps(json.dumps(e))
            for e in schema["enum"]
        )
        causes.append(
            {
                "reason": "FieldValueNotSupported",
                "message": f"Unsupported value: {_fmt_value(value)}: supported values: {supported}",
                "field": path,
            }
        )


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _passes(schema: dict[str, Any], value: Any, path: str) -> bool:
    trial: list[Cause] = []
    _validate(schema, value, path, trial)
    return not trial


def _validate_number(
    schema: dict[str, Any], value: float, path: str, shown: str, causes: list[Cause]
) -> None:
    lo, hi = schema.get("minimum"), schema.get("maximum")
    fmt = schema.get("format")
    if fmt in _INT_BOUNDS:
        flo, fhi = _INT_BOUNDS[fmt]
        integral = isinstance(value, int) or value.is_integer()
        if not integral or not flo <= value <= fhi:
            message = f"Checked value must be of type integer with format {fmt} in {path}"
            causes.append(
                {"reason": "FieldValueInvalid", "message": f'Invalid value: "": {message}',
                 "field": "<nil>"}
            )  # fmt: skip
    if lo is not None:
        if schema.get("exclusiveMinimum") and value <= lo:
            causes.append(
                _invalid(path, value, f"{shown} in body should be greater than {_fmt_number(lo)}")
            )
        elif value < lo:
            causes.append(
                _invalid(
                    path,
                    value,
                    f"{shown} in body should be greater than or equal to {_fmt_number(lo)}",
                )
            )
    if hi is not None:
        if schema.get("exclusiveMaximum") and value >= hi:
            causes.append(
                _invalid(path, value, f"{shown} in body should be less than {_fmt_number(hi)}")
            )
        elif value > hi:
            causes.append(
                _invalid(
                    path,
                    value,
                    f"{shown} in body should be less than or equal to {_fmt_number(hi)}",
                )
            )
    mult = schema.get("multipleOf")
    if mult and (value / mult) != int(value / mult):
        causes.append(
            _invalid(path, value, f"{shown} in body should be a multiple of {_fmt_number(mult)}")
        )


_DATE_TIME_RE = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})?$"
)
_FORMATS: dict[str, Callable[[str], bool]] = {
    "date-time": lambda s: bool(_DATE_TIME_RE.match(s)),
    "date": lambda s: bool(re.match(r"^\d{4}-\d{2}-\d{2}$", s)),
    "uuid": lambda s: bool(
        re.match(
            r"^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$", s
        )
    ),
}


def _validate_string(
    schema: dict[str, Any], value: str, path: str, shown: str, causes: list[Cause]
) -> None:
    max_len = schema.get("maxLength")
    if max_len is not None and len(value) > max_len:
        causes.append(
            {
                "reason": "FieldValueTooLong",
                "message": f"Too long: may not be more than {max_len} bytes",
                "field": path,
            }
        )
    min_len = schema.get("minLength")
    if min_len is not None and len(value) < min_len:
        causes.append(
            _invalid(path, value, f"{shown} in body should be at least {min_len} chars long")
        )
    pattern = schema.get("pattern")
    if pattern:
        try:
            ok = re.search(pattern, value) is not None
        except re.error:
            ok = True  # a pattern Python cannot compile is not the client's fault
        if not ok:
            causes.append(_invalid(path, value, f"{shown} in body should match '{pattern}'"))
    fmt = schema.get("format")
    check = _FORMATS.get(fmt or "")
    if check is not None and not check(value):
        # A string not in its format is a type error to kube-openapi, as a number is.
        cause = _invalid(path, value, f"{shown} in body must be of type {fmt}: {_fmt_value(value)}")
        causes.append({**cause, "reason": "FieldValueTypeInvalid"})


def _validate_array(
    schema: dict[str, Any],
    value: list[Any],
    path: str,
    shown: str,
    causes: list[Cause],
    old: Any = _NEW,
) -> None:
    max_items = schema.get("maxItems")
    if max_items is not None and len(value) > max_items:
        causes.append(
            {
                "reason": "FieldValueTooMany",
                "message": f"Too many: {len(value)}: must have at most {max_items} items",
                "field": path,
            }
        )
    min_items = schema.get("minItems")
    if min_items is not None and len(value) < min_items:
        causes.append(
            _invalid(path, value, f"{shown} in body should have at least {min_items} items")
        )
    items = schema.get("items")
    if isinstance(items, dict):
        keys = schema.get("x-kubernetes-list-map-keys") or []
        before = _old_items(schema, keys, old)
        for i, item in enumerate(value):
            was = (
                before.get(_item_key(keys, item), _NEW)
                if before and isinstance(item, dict)
                else _NEW
            )
            _validate(items, item, _index(path, i), causes, was)
    if schema.get("uniqueItems") or schema.get("x-kubernetes-list-type") == "set":
        seen: list[Any] = []
        for i, item in enumerate(value):
            if any(_same(item, s) for s in seen):
                causes.append(
                    {
                        "reason": "FieldValueDuplicate",
                        "message": f"Duplicate value: {_fmt_value(item)}",
                        "field": _index(path, i),
                    }
                )
            seen.append(item)


def _validate_object(
    schema: dict[str, Any],
    value: dict[str, Any],
    path: str,
    shown: str,
    causes: list[Cause],
    old: Any = _NEW,
) -> None:
    """In kube-openapi's order: the property counts, the values under additionalProperties,
    the declared properties, then the required ones. (Upstream walks the values of each
    group in Go's random map order; here they go in the body's order.)"""
    min_props = schema.get("minProperties")
    if min_props is not None and len(value) < min_props:
        causes.append(
            _invalid(path, value, f"{shown} in body should have at least {min_props} properties")
        )
    max_props = schema.get("maxProperties")
    if max_props is not None and len(value) > max_props:
        causes.append(
            {
                "reason": "FieldValueTooMany",
                "message": f"Too many: {len(value)}: must have at most {max_props} items",
                "field": path,
            }
        )
    props: dict[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    declared: list[str] = []
    for key, child in value.items():
        if embedded and key == "metadata":
            continue
        if key in props:
            declared.append(key)
        elif isinstance(additional, dict):
            _validate(additional, child, _child(path, key), causes, _old_child(old, key))
    for key in declared:
        _validate(props[key], value[key], _child(path, key), causes, _old_child(old, key))
    for req in schema.get("required") or []:
        if req not in value:
            causes.append(
                {
                    "reason": "FieldValueRequired",
                    "message": "Required value",
                    "field": _child(path, req),
                }
            )


# --- pruning -------------------------------------------------------------------------------


def prune(schema: dict[str, Any], obj: dict[str, Any]) -> list[str]:
    """Drop fields the schema does not declare (in place); return their paths.

    Nulls in non-nullable fields are dropped too (silently), as the real server does before
    defaulting. apiVersion, kind and metadata at the top level are never pruned.
    """
    dropped: list[str] = []
    if not isinstance(obj, dict):
        return dropped
    _prune_object(schema, obj, "", dropped, top=True)
    return dropped


def _prune(schema: dict[str, Any], value: Any, path: str, dropped: list[str]) -> None:
    if schema.get("x-kubernetes-int-or-string"):
        return
    if isinstance(value, dict):
        _prune_object(schema, value, path, dropped, top=False)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                _prune(items, item, _index(path, i), dropped)


def _prune_object(
    schema: dict[str, Any], value: dict[str, Any], path: str, dropped: list[str], *, top: bool
) -> None:
    props: dict[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or additional is True
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    for key in list(value):
        child = value[key]
        keep_meta = (top or embedded) and key in _TOP_LEVEL_META
        if key in props:
            sub = props[key]
            if child is None and not sub.get("nullable"):
                del value[key]
                continue
            if not keep_meta:
                _prune(sub, child, _child(path, key), dropped)
        elif isinstance(additional, dict):
            if child is None and not additional.get("nullable"):
                del value[key]
                continue
            _prune(additional, child, _child(path, key), dropped)
        elif keep_meta or preserve:
            continue
        else:
            del value[key]
            dropped.append(_child(path, key))


# --- defaulting ----------------------------------------------------------------------------


def apply_defaults(schema: dict[str, Any], obj: dict[str, Any]) -> None:
    """Fill in schema `default` values (in place), top-down, as the server does after pruning."""
    _default(schema, obj)


def _default(schema: dict[str, Any], value: Any) -> None:
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        for key, sub in props.items():
            if "default" in sub and (
                key not in value or (value[key] is None and not sub.get("nullable"))
            ):
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                _default(sub, value[key])
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key in value:
                if key not in props:
                    _default(additional, value[key])
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for item in value:
                _default(items, item)

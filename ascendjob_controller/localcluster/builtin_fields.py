"""Unknown fields of built-in kinds, dropped as kube-apiserver drops them.

The real server decodes a built-in kind's body into its Go struct: a field the struct does not
have is lost, and reported with its path (`unknown field "spec.containers[0].bogus"`; a map's
key is a step like a field's, `properties.spec.bogus`): in a Warning header
by default, as a 400 `strict decoding error` under `fieldValidation=Strict`, not at all under
`Ignore`. The fields of each struct come from `builtin_fields.json`, written from the real
server's OpenAPI v3 document by `hack/gen_builtin_fields.py` (see its docstring for the
shapes), so the list is the server's own, not a guess.

A null in a struct field decodes to Go's zero value, which the field's omitempty leaves out
of what is stored (`type: null` in a Service spec is defaulted as if absent, `labels: null`
records no managed field); the walk drops it. (A null map value, `data: {"a": null}`, is
the value type's zero, `""` for a string; map value types are not in the table, so it is
kept as null here.)

Custom resources are pruned from their CRD schema instead (`schema.prune`).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

TABLE_PATH = Path(__file__).with_name("builtin_fields.json")


@functools.cache
def _table() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(TABLE_PATH.read_text())
    return loaded


def has_table(group_version: str, kind: str) -> bool:
    return f"{group_version}/{kind}" in _table()["kinds"]


def prune_unknown(
    group_version: str, kind: str, obj: dict[str, Any], drop: bool = True
) -> list[str]:
    """Drop from `obj`, in place, every field its kind does not have, and every null struct
    field; the unknown fields' paths, in the order of the document (the order Go's decoder
    meets them). `drop=False` only finds them, leaving `obj` as it is."""
    table = _table()
    root = table["kinds"].get(f"{group_version}/{kind}")
    if root is None:
        return []
    unknown: list[str] = []
    _prune(obj, root, "", table["types"], unknown, drop)
    return unknown


def _prune(
    value: Any, shape: Any, path: str, types: dict[str, Any], unknown: list[str], drop: bool
) -> None:
    """One value against its shape (a pod create walks about 150 values: 30-60 us)."""
    if shape == 0 or value is None:
        return
    if type(shape) is str:
        if type(value) is dict:
            fields = types[shape]
            for key in list(value):
                if key not in fields:
                    if drop:
                        del value[key]
                    unknown.append(f"{path}.{key}" if path else key)
                elif value[key] is None:
                    if drop:
                        del value[key]  # Go's zero value, which an omitempty field leaves out
                elif (inner := fields[key]) != 0:
                    where = f"{path}.{key}" if path else key
                    _prune(value[key], inner, where, types, unknown, drop)
        return
    how, inner = shape
    if how == "l" and type(value) is list:
        for index, item in enumerate(value):
            _prune(item, inner, f"{path}[{index}]", types, unknown, drop)
    elif how == "m" and type(value) is dict:
        for key, item in value.items():
            _prune(item, inner, f"{path}.{key}", types, unknown, drop)

"""Dotted paths into JSON answers, for `save=` and `pick=` in the corpus.

A path is segments separated by dots: `metadata.uid`; `items[0]` and `items[-1]` index a
list; `resources[name=pods]` picks the first element whose field equals a value; `items[*]`
maps the rest of the path over every element; `paths{}` gives a map's sorted keys and
`items[#]` a list's length; a key with dots in it is quoted: `paths.'apis/a.b/v1'`.
A missing step gives MISSING rather than an error, so a difference in shape shows up as a
difference, not as a crash of the suite.
"""

from __future__ import annotations

import re
from typing import Any

MISSING = "<missing>"
_SEGMENT = re.compile(r"^(?P<key>[^\[{]*)(?P<index>\[[^\]]*\])?(?P<keys>\{\})?$")


def _split(path: str) -> list[str]:
    """Dots split segments, except inside brackets or single quotes (`'apis/a.b/v1'`)."""
    out, depth, quoted, cur = [], 0, False, ""
    for char in path:
        if char == "'":
            quoted = not quoted
            continue
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        if char == "." and depth == 0 and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += char
    out.append(cur)
    return [s for s in out if s]


def lookup(value: Any, path: str) -> Any:
    """The value at `path` in `value`, or MISSING."""
    return _walk(value, _split(path))


def _walk(value: Any, segments: list[str]) -> Any:
    for i, segment in enumerate(segments):
        m = _SEGMENT.match(segment)
        if m is None:
            return MISSING
        key, index, keys = m.group("key"), m.group("index"), m.group("keys")
        if key:
            if not isinstance(value, dict) or key not in value:
                return MISSING
            value = value[key]
        if index:
            spec = index[1:-1]
            if spec == "*":
                if not isinstance(value, list):
                    return MISSING
                return [_walk(v, segments[i + 1 :]) for v in value]
            value = _index(value, spec)
            if value is MISSING:
                return MISSING
        if keys:
            return sorted(value) if isinstance(value, dict) else MISSING
    return value


def _index(value: Any, spec: str) -> Any:
    if not isinstance(value, list):
        return MISSING
    if spec == "#":
        return len(value)
    if "=" in spec:
        field, _, wanted = spec.partition("=")
        for item in value:
            if isinstance(item, dict) and str(item.get(field)) == wanted:
                return item
        return MISSING
    try:
        return value[int(spec)]
    except (ValueError, IndexError):
        return MISSING

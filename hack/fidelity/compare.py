"""Compare two normalized answers and describe the difference compactly.

A difference is a list of (path, local value, real value) at the deepest place where the two
disagree, so a missing toleration shows as `spec.tolerations: [] vs [..2 items..]`, not as
two whole pods.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hack.fidelity.paths import MISSING

Diff = tuple[str, Any, Any]


@dataclass
class Outcome:
    """One step's comparison: identical or not, and how it differs."""

    case: str
    index: int
    description: str
    identical: bool
    diffs: list[Diff]


def differences(a: Any, b: Any, path: str = "") -> list[Diff]:
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[Diff] = []
        for key in sorted(set(a) | set(b), key=str):
            child = f"{path}.{key}" if path else str(key)
            out += differences(a.get(key, MISSING), b.get(key, MISSING), child)
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    if a == b and type(a) is type(b):
        return []
    return [(path or "(root)", a, b)]


def short(value: Any, limit: int = 160) -> str:
    """A value in one line, cut to `limit` characters."""
    if value is MISSING:
        return "<missing>"
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def excerpts(a: Any, b: Any, limit: int = 160) -> tuple[str, str]:
    """Both values in one line each; two long strings are shown from where they part."""
    if isinstance(a, str) and isinstance(b, str) and max(len(a), len(b)) > limit:
        start = 0
        while start < min(len(a), len(b)) and a[start] == b[start]:
            start += 1
        start = max(0, start - 40)
        if start:
            return short("..." + a[start:], limit), short("..." + b[start:], limit)
    return short(a, limit), short(b, limit)

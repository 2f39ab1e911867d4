"""The JSON merge patch (RFC 7386) that turns one document into another.

Status writes send only what changed: a patch with the changed keys of `status` (lists, such
as conditions, go whole: a merge patch replaces arrays), plus a resourceVersion precondition.
Smaller than a full-object PUT, and it never sends the spec back.
"""

from __future__ import annotations

from typing import Any


def merge_patch(old: Any, new: Any) -> Any:
    """The patch P with apply(old, P) == new. Objects recurse; anything else is replaced.

    `None` values in `new` cannot be expressed (merge patch uses null for "delete"), and the
    API never stores nulls in status, so they are treated as deletions.
    """
    if not isinstance(old, dict) or not isinstance(new, dict):
        return new
    patch: dict[str, Any] = {}
    for key in old.keys() - new.keys():
        patch[key] = None
    for key, value in new.items():
        if key not in old:
            patch[key] = value
        elif old[key] != value:
            if isinstance(old[key], dict) and isinstance(value, dict):
                patch[key] = merge_patch(old[key], value)
            else:
                patch[key] = value
    return patch


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386's apply, for tests and for reading back what a patch meant."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result

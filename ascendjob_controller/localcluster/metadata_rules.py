"""The label and annotation rules kube-apiserver (v1.37) applies to every object's metadata.

ObjectMeta validation refuses, with a 422 beside the object's other causes:

- a label key or an annotation key that is no qualified name: an optional DNS-1123
  subdomain prefix and `/`, then a name part of at most 63 bytes of `[-A-Za-z0-9_.]`,
  alphanumeric at both ends (annotation keys are checked lowercased);
- a label value over 63 bytes, or not empty and not of that same shape.

Each problem is its own cause at `metadata.labels` or `metadata.annotations`, in the words of
apimachinery's validation; identical causes are reported once, as `ErrorList.ToAggregate`
does. The local cluster once stored a job labelled `framework: pytorch-`, which the real
server refuses (found by `make fuzz`, seed 31). Lengths are bytes, as Go counts them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from ascendjob_controller.localcluster.goquote import go_quote

Cause = dict[str, str]

_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")

_NAME_SHAPE = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
_SUBDOMAIN_SHAPE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
_VALUE_SHAPE = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
_TWO_SLASHES = (
    f"a valid label key {_NAME_SHAPE} with an optional DNS subdomain prefix and '/' (e.g. "
    "'example.com/MyName')"
)


def _too_long(value: str, limit: int) -> bool:
    return len(value.encode("utf-8", "surrogatepass")) > limit


def qualified_name_errors(key: str) -> list[str]:
    """apimachinery's IsQualifiedName: every problem of `key`, [] when it is one."""
    return list(_qualified_name_errors(key))


def label_value_errors(value: str) -> list[str]:
    """apimachinery's IsValidLabelValue: every problem of `value`, [] when it is valid."""
    return list(_label_value_errors(value))


# Memoized: every pod of a job carries the same keys and most of the same values, and the
# checks were 23 us of a pod create's ~330 us in the bed before.
@lru_cache(maxsize=4096)
def _qualified_name_errors(key: str) -> tuple[str, ...]:
    parts = key.split("/")
    if len(parts) > 2:
        return (_TWO_SLASHES,)
    errors: list[str] = []
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if _too_long(prefix, 253):
                errors.append("prefix part must be no more than 253 bytes")
            if not _SUBDOMAIN.fullmatch(prefix):
                errors.append(f"prefix part {_SUBDOMAIN_SHAPE}")
    if not name:
        errors.append("name part must be non-empty")
    elif _too_long(name, 63):
        errors.append("name part must be no more than 63 bytes")
    if not _NAME.fullmatch(name):
        errors.append(f"name part {_NAME_SHAPE}")
    return tuple(errors)


@lru_cache(maxsize=4096)
def _label_value_errors(value: str) -> tuple[str, ...]:
    errors = ["must be no more than 63 bytes"] if _too_long(value, 63) else []
    if not _VALUE.fullmatch(value):
        errors.append(_VALUE_SHAPE)
    return tuple(errors)


def metadata_causes(meta: dict[str, Any]) -> list[Cause]:
    """The 422 causes of `meta`'s labels, then its annotation keys (object decoding already
    made both string maps), each identical cause once."""
    causes: list[Cause] = []
    labels = meta.get("labels")
    if isinstance(labels, dict):
        causes += label_causes(labels, "metadata.labels")
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        for key in annotations:
            causes += _invalid("metadata.annotations", key, _qualified_name_errors(key.lower()))
    if not causes:
        return causes
    unique: list[Cause] = []
    for cause in causes:
        if cause not in unique:
            unique.append(cause)
    return unique


def label_causes(labels: dict[str, Any], field: str) -> list[Cause]:
    """ValidateLabels: each key's causes, then its value's, all under `field` (a pod's
    nodeSelector is validated as labels are)."""
    causes: list[Cause] = []
    for key, value in labels.items():
        causes += _invalid(field, key, _qualified_name_errors(key))
        if isinstance(value, str):
            causes += _invalid(field, value, _label_value_errors(value))
    return causes


def _invalid(field: str, value: str, errors: tuple[str, ...]) -> list[Cause]:
    return [
        {
            "reason": "FieldValueInvalid",
            "message": f"Invalid value: {go_quote(value)}: {error}",
            "field": field,
        }
        for error in errors
    ]


__all__ = ["label_causes", "label_value_errors", "metadata_causes", "qualified_name_errors"]

"""Go's unmarshal errors for typed fields, as kube-apiserver's decoder words them (a 400).

kube-apiserver decodes a body into Go structs before it validates anything, so a field of the
wrong JSON type is a 400 BadRequest (`Pod in version "v1" cannot be handled as a Pod: json:
cannot unmarshal number into Go struct field Container.spec.containers.command of type
[]string`), not a 422. The local cluster stores JSON as it comes; this models the decode
errors clients run into: metadata's string maps (in `verbs.check_body`) and the string lists
of a pod's containers, which hand-written templates get wrong.
"""

from __future__ import annotations

from typing import Any

#: A container's fields that are lists of strings in Go (`[]string`).
_STRING_LISTS = ("command", "args")


def json_type(value: Any) -> str:
    """The JSON type word Go's encoding/json uses in an unmarshal error."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, list):
        return "array"
    return "object"


def pod_unmarshal_error(pod: dict[str, Any]) -> str | None:
    """`json: cannot unmarshal ...` for the first container string list of the wrong type."""
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return None
    for list_name in ("initContainers", "containers"):
        containers = spec.get(list_name)
        for container in containers if isinstance(containers, list) else []:
            if not isinstance(container, dict):
                continue
            for field_name in _STRING_LISTS:
                value = container.get(field_name)
                if value is None:
                    continue
                wrong = value if not isinstance(value, list) else None
                target = "[]string"
                if isinstance(value, list):
                    wrong = next(
                        (v for v in value if not isinstance(v, str) and v is not None), None
                    )
                    target = "string"
                if wrong is not None:
                    return (
                        f"json: cannot unmarshal {json_type(wrong)} into Go struct field "
                        f"Container.spec.{list_name}.{field_name} of type {target}"
                    )
    return None

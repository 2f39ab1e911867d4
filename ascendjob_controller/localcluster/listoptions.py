"""List and watch options, checked as kube-apiserver checks them (ValidateListOptions).

The rules clients trip over: `resourceVersionMatch` needs a `resourceVersion` (and for a
watch, `sendInitialEvents`); `sendInitialEvents` needs `resourceVersionMatch=NotOlderThan`
and is a watch-only option; `Exact` is not allowed with `resourceVersion=0`. Every broken
rule becomes one cause of a single 422 about ListOptions.
"""

from __future__ import annotations

from ascendjob_controller.localcluster.errors import ApiError, options_invalid

EXACT = "Exact"
NOT_OLDER_THAN = "NotOlderThan"


def _forbidden(field: str, detail: str) -> dict[str, str]:
    return {"reason": "FieldValueForbidden", "message": f"Forbidden: {detail}", "field": field}


def _unsupported(field: str, value: str, supported: list[str]) -> dict[str, str]:
    listed = ", ".join(f'"{v}"' for v in supported)
    return {
        "reason": "FieldValueNotSupported",
        "message": f'Unsupported value: "{value}": supported values: {listed}',
        "field": field,
    }


def check(query: dict[str, str], watch: bool) -> None:
    """422 for options that do not go together."""
    match = query.get("resourceVersionMatch", "")
    rv = query.get("resourceVersion", "")
    initial = "sendInitialEvents" in query
    causes: list[dict[str, str]] = []
    if watch:
        if initial and match != NOT_OLDER_THAN:
            causes.append(
                _forbidden(
                    "resourceVersionMatch",
                    f"sendInitialEvents requires setting resourceVersionMatch to {NOT_OLDER_THAN}",
                )
            )
        if match:
            if not initial:
                causes.append(
                    _forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents "
                        "is provided",
                    )
                )
            if match != NOT_OLDER_THAN:
                causes.append(_unsupported("resourceVersionMatch", match, [NOT_OLDER_THAN]))
    else:
        if match:
            if not rv:
                causes.append(
                    _forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    )
                )
            if query.get("continue"):
                causes.append(
                    _forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided",
                    )
                )
            if match not in (EXACT, NOT_OLDER_THAN):
                causes.append(
                    _unsupported("resourceVersionMatch", match, [EXACT, NOT_OLDER_THAN, ""])
                )
            if match == EXACT and rv == "0":
                causes.append(
                    _forbidden(
                        "resourceVersionMatch",
                        'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
                    )
                )
        if initial:
            causes.append(
                _forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
            )
    if causes:
        raise options_invalid("ListOptions", *causes)


def too_large(rv: int, current: int) -> ApiError:
    """504 for a resourceVersion the server has not reached (after waiting for it)."""
    return ApiError(
        504,
        "Timeout",
        f"Timeout: Too large resource version: {rv}, current: {current}",
        {
            "causes": [
                {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
            ],
            "retryAfterSeconds": 1,
        },
    )

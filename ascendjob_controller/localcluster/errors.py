"""API errors as kube-apiserver shapes them: a `kind: Status` body with reason and code.

Clients branch on `reason` and `code` (client-go's IsNotFound, kubectl's messages), so the
shapes here copy the real server's wording rather than inventing friendlier text.
"""

from __future__ import annotations

from typing import Any

from ascendjob_controller.localcluster.goquote import go_quote
from ascendjob_controller.localcluster.resources import ResourceType

_REASON_BY_CODE: dict[int, str] = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


class ApiError(Exception):
    """Raised anywhere below the HTTP layer; the server turns it into a Status response."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def status(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
        }
        if self.reason:
            body["reason"] = self.reason
        body["code"] = self.code
        if self.details is not None:
            body["details"] = self.details
        return body


def _details(rt: ResourceType, name: str, kind: str | None = None) -> dict[str, Any]:
    details: dict[str, Any] = {"name": name} if name else {}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = kind or rt.plural
    return details


def not_found(rt: ResourceType, name: str) -> ApiError:
    return ApiError(404, "NotFound", f'{rt.group_resource} "{name}" not found', _details(rt, name))


def namespace_not_found(name: str) -> ApiError:
    return ApiError(
        404, "NotFound", f'namespaces "{name}" not found', {"name": name, "kind": "namespaces"}
    )


def already_exists(rt: ResourceType, name: str, existing: dict[str, Any] | None = None) -> ApiError:
    """409; for a name still held by an object being deleted, etcd3's "object is being deleted"."""
    message = f'{rt.group_resource} "{name}" already exists'
    if existing is not None and existing.get("deletionTimestamp"):
        message = f"object is being deleted: {message}"
    return ApiError(409, "AlreadyExists", message, _details(rt, name))


def conflict(rt: ResourceType, name: str, why: str) -> ApiError:
    return ApiError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {rt.group_resource} "{name}": {why}',
        _details(rt, name),
    )


STALE_MESSAGE = (
    "the object has been modified; please apply your changes to the latest version and try again"
)


def stale(rt: ResourceType, name: str) -> ApiError:
    return conflict(rt, name, STALE_MESSAGE)


def invalid(rt: ResourceType, name: str, causes: list[dict[str, Any]]) -> ApiError:
    """422 with one `field: message` per cause, bracketed when there are several (as Go does)."""
    qualified = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
    parts = [f"{c.get('field', '')}: {c.get('message', '')}" for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details = _details(rt, name, kind=rt.kind)
    details["causes"] = causes
    return ApiError(422, "Invalid", f'{qualified} "{name}" is invalid: {joined}', details)


def options_invalid(kind: str, *causes: dict[str, str]) -> ApiError:
    """A 422 about request options (DeleteOptions, PatchOptions, ListOptions) themselves."""
    parts = [f"{c['field']}: {c['message']}" for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    return ApiError(
        422,
        "Invalid",
        f'{kind}.meta.k8s.io "" is invalid: {joined}',
        {"group": "meta.k8s.io", "kind": kind, "causes": list(causes)},
    )


def invalid_resource(rt: ResourceType, name: str, causes: list[dict[str, Any]]) -> ApiError:
    """422 qualified by resource rather than kind, as the registry's own checks word it."""
    parts = [f"{c.get('field', '')}: {c.get('message', '')}" for c in causes]
    joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
    details = _details(rt, name)
    details["causes"] = causes
    return ApiError(422, "Invalid", f'{rt.group_resource} "{name}" is invalid: {joined}', details)


def strict_patch_invalid(shown: str, unknown: list[str]) -> ApiError:
    """The 422 of kube-apiserver's patcher for a patch whose result has unknown fields under
    fieldValidation=Strict: no kind and no name, one cause on the field `patch` quoting
    `shown` (the strategic patch as Go prints it, else the patched object's JSON)."""
    listed = ", ".join(f'unknown field "{path}"' for path in unknown)
    message = f"Invalid value: {go_quote(shown)}: strict decoding error: {listed}"
    cause = {"reason": "FieldValueInvalid", "message": message, "field": "patch"}
    return ApiError(422, "Invalid", f' "" is invalid: patch: {message}', {"causes": [cause]})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def forbidden(message: str, details: dict[str, Any] | None = None) -> ApiError:
    return ApiError(403, "Forbidden", message, details)


def method_not_allowed() -> ApiError:
    return ApiError(
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
        {},
    )


def path_not_found() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource", {})


def unsupported_media_type(content_type: str, accepted: list[str]) -> ApiError:
    return ApiError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: "
        f"{', '.join(accepted)}",
    )


def expired(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_old(requested: int, oldest_available: int) -> ApiError:
    return expired(f"too old resource version: {requested} ({oldest_available})")


def injected(code: int) -> ApiError:
    """A fault-injected failure: the code a test asked for, with the reason that code implies."""
    reason = _REASON_BY_CODE.get(code, "Unknown")
    headers = {"Retry-After": "1"} if code in (429, 503) else None
    return ApiError(code, reason, f"fault injected: {code} {reason}", {}, headers)


def internal(message: str) -> ApiError:
    return ApiError(500, "InternalError", f"Internal error occurred: {message}", {})

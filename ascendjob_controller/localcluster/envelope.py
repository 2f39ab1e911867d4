"""A custom resource body's apiVersion and kind, answered as kube-apiserver answers them.

A custom resource is decoded as unstructured JSON: apiVersion and kind must be strings, the
kind must be there, and the body's group/version must be the request's, each a 400 worded by
the decoder or the create/update handler. (A kind that is there but not the resource's kind
is a 422 from validation: `verbs.check_body`.) Built-in kinds are decoded into their Go types
and answer differently (`verbs.check_body`). Found by `make fuzz`, where the local cluster
stored such bodies or answered 500.

Also here: how Go's decoder quotes a body in its errors (`excerpt`), and its nesting limit,
which every body meets before anything in it is decoded (`nesting_error`).
"""

from __future__ import annotations

import re
from typing import Any

from ascendjob_controller.localcluster.errors import ApiError, bad_request
from ascendjob_controller.localcluster.goquote import go_quote
from ascendjob_controller.localcluster.resources import ResourceType
from ascendjob_controller.localcluster.typed_fields import (
    json_type,
    object_meta_error,
    object_meta_type_error,
)


def excerpt(raw: bytes) -> str:
    """The start of a body as the API server quotes it in a decode error (its
    summarizeData): the first 30 bytes, then ` ...`; as text when the body starts with `{`,
    else in hex (a list, a BOM, `null`)."""
    if not raw:
        return "<empty>"
    more = " ..." if len(raw) > 30 else ""
    if raw[:1] == b"{":
        return raw[:30].decode("utf-8", "replace") + more
    return raw[:30].hex() + more


#: The struct the API server first decodes every body into, to find its apiVersion and kind.
_TYPE_META = (
    'struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
    'Kind string "json:\\"kind,omitempty\\"" }'
)


def non_object_error(rt: ResourceType, body: Any, raw: bytes) -> ApiError | None:
    """The 400 for a JSON body that is no object: a list, a string, a number or a bool, and
    `null` for a custom resource (a built-in kind decodes `null` as an empty object)."""
    if isinstance(body, dict) or (body is None and rt.builtin):
        return None
    unrecognized = f"the object provided is unrecognized (must be of type {rt.kind})"
    if body is None:
        return bad_request(f"{unrecognized}: Object 'Kind' is missing in 'null' ({excerpt(raw)})")
    return bad_request(
        f"{unrecognized}: couldn't get version/kind; json parse error: json: cannot unmarshal "
        f"{json_type(body)} into Go value of type {_TYPE_META} ({excerpt(raw)})"
    )


#: encoding/json's scanner refuses a document nested deeper than this (`maxNestingDepth`)
#: before a field is decoded, and kube-apiserver reads every body with it.
GO_MAX_DEPTH = 10_000
#: A JSON string (its brackets are not nesting) or one bracket.
_STRING_OR_BRACKET = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)


def nesting_error(raw: bytes) -> str | None:
    """Go's syntax error for a body nested deeper than GO_MAX_DEPTH, else None.

    The local cluster decodes deeper documents (cluster.DEEP_RECURSION_LIMIT), and stored a
    job nested 10,001 levels under its template where kube-apiserver answers 400. Only a
    body with more opening brackets than the limit (counted in C) is scanned, so the common
    body pays two `bytes.count`s.
    """
    if raw.count(b"{") + raw.count(b"[") <= GO_MAX_DEPTH:
        return None
    depth = 0
    for token in _STRING_OR_BRACKET.finditer(raw):
        bracket = token.group()
        if bracket in (b"{", b"["):
            depth += 1
            if depth > GO_MAX_DEPTH:
                return f"invalid character {bracket.decode()!r} exceeded max depth"
        elif bracket in (b"}", b"]"):
            depth -= 1
    return None


def custom_envelope_error(rt: ResourceType, body: Any, raw: bytes) -> ApiError | None:
    """The 400 for a custom resource body whose apiVersion or kind the decoder refuses."""
    if rt.builtin or not isinstance(body, dict):
        return None
    unrecognized = f"the object provided is unrecognized (must be of type {rt.kind})"
    for key in ("apiVersion", "kind"):
        value = body.get(key)
        if value is not None and not isinstance(value, str):
            return bad_request(
                f"{unrecognized}: couldn't get version/kind; json parse error: json: cannot "
                f"unmarshal {json_type(value)} into Go struct field .{key} of type string "
                f"({excerpt(raw)})"
            )
    if not body.get("kind"):
        text = raw.decode("utf-8", "replace")
        return bad_request(f"{unrecognized}: Object 'Kind' is missing in '{text}' ({excerpt(raw)})")
    if "apiVersion" in body and body["apiVersion"] is None:
        return bad_request(
            f'{rt.kind} in version "" cannot be handled as a {rt.kind}: .apiVersion accessor '
            "error: <nil> is of the type <nil>, expected string"
        )
    api_version = body.get("apiVersion") or ""
    if api_version != rt.group_version:
        decode = _metadata_decode_error(rt, body.get("metadata"))
        if decode is not None:
            # The body is decoded before its version is compared: a metadata decode error is
            # reported first, naming the body's own version.
            version = go_quote(api_version.rpartition("/")[2])
            return bad_request(
                f"{rt.kind} in version {version} cannot be handled as a {rt.kind}: {decode}"
            )
        return bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({rt.group_version})"
        )
    return None


def _metadata_decode_error(rt: ResourceType, meta: Any) -> str | None:
    """Go's decode error for a custom resource's metadata, as `verbs.check_body` finds it."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        return object_meta_type_error(meta, rt)
    return object_meta_error(meta, "ObjectMeta.", typed=False)

"""OpenAPI documents (`/openapi/v3`, `/openapi/v3/<gv>`, `/openapi/v2`) built from ResourceTypes.

What kubectl 1.32 actually reads, and therefore what must be right here:
- Before `apply`/`create`/`replace` with default validation it asks, per GVK, whether the
  server supports the `fieldValidation` query parameter: it scans the group-version document
  for PATCH operations whose `x-kubernetes-group-version-kind` is that GVK and looks for an
  inline `fieldValidation` query parameter. Every PATCH operation (the resource and its /status)
  carries it, so kubectl delegates validation to the server (and our 422s reach the user).
- `kubectl apply` builds a strategic merge patch from the OpenAPI v3 schema only when the
  PATCH operation lists `application/strategic-merge-patch+json`. Our built-in schemas are
  deliberately permissive, so they do NOT list it: kubectl then falls back to the strategic
  patch metadata compiled into it, which is exact. Custom resources never list it either
  (as on a real server), so kubectl uses JSON merge patch for them.
Custom resource schemas are the CRD's openAPIV3Schema with metadata pointing at ObjectMeta.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Iterable
from typing import Any

from ascendjob_controller.localcluster.resources import ResourceType

OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"
STATUS = "io.k8s.apimachinery.pkg.apis.meta.v1.Status"
PATCH = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
DELETE_OPTIONS = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"
WATCH_EVENT = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent"
_INFO = {"title": "Kubernetes", "version": "v1.37.2"}
_CRD_INFO = {"title": "Kubernetes CRD Swagger", "version": "v0.1.0"}

# Strategic-merge metadata on the built-in list fields (documentation for `kubectl explain`
# and other readers; kubectl apply itself uses its compiled-in copy, see the docstring).
_MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
}
_CONTAINER_MERGE_KEYS: dict[str, str] = {
    "env": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
}


def schema_name(rt: ResourceType, kind: str | None = None) -> str:
    """The components/definitions name kube-apiserver uses for a kind."""
    kind = kind or rt.kind
    if not rt.builtin:
        reversed_group = ".".join(reversed(rt.group.split(".")))
        return f"{reversed_group}.{rt.version}.{kind}"
    if rt.group == "apiextensions.k8s.io":
        return f"io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{rt.version}.{kind}"
    short = rt.group.split(".")[0] if rt.group else "core"
    return f"io.k8s.api.{short}.{rt.version}.{kind}"


def _gvk(rt: ResourceType, kind: str | None = None) -> dict[str, str]:
    return {"group": rt.group, "version": rt.version, "kind": kind or rt.kind}


# --- schemas -------------------------------------------------------------------------------


def _meta_schemas(ref: str) -> dict[str, Any]:
    """ObjectMeta, ListMeta, Status, Patch, DeleteOptions: enough for clients to resolve refs."""
    open_object = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    string = {"type": "string"}
    return {
        OBJECT_META: {
            "description": "ObjectMeta is metadata that all persisted resources must have.",
            "type": "object",
            "properties": {
                "name": string,
                "generateName": string,
                "namespace": string,
                "uid": string,
                "resourceVersion": string,
                "generation": {"type": "integer", "format": "int64"},
                "creationTimestamp": {"type": "string", "format": "date-time"},
                "deletionTimestamp": {"type": "string", "format": "date-time"},
                "deletionGracePeriodSeconds": {"type": "integer", "format": "int64"},
                "labels": {"type": "object", "additionalProperties": string},
                "annotations": {"type": "object", "additionalProperties": string},
                "finalizers": {
                    "type": "array",
                    "items": string,
                    "x-kubernetes-patch-strategy": "merge",
                    "x-kubernetes-list-type": "set",
                },
                "ownerReferences": {
                    "type": "array",
                    "items": open_object,
                    "x-kubernetes-patch-merge-key": "uid",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "managedFields": {"type": "array", "items": open_object},
                "selfLink": string,
            },
        },
        LIST_META: {
            "type": "object",
            "properties": {
                "continue": string,
                "remainingItemCount": {"type": "integer", "format": "int64"},
                "resourceVersion": string,
                "selfLink": string,
            },
        },
        STATUS: {
            "type": "object",
            "properties": {
                "apiVersion": string,
                "kind": string,
                "code": {"type": "integer", "format": "int32"},
                "details": open_object,
                "message": string,
                "metadata": {"allOf": [{"$ref": ref + LIST_META}], "default": {}},
                "reason": string,
                "status": string,
            },
            "x-kubernetes-group-version-kind": [{"group": "", "version": "v1", "kind": "Status"}],
        },
        PATCH: {"type": "object", "description": "Patch is provided to give a concrete name."},
        DELETE_OPTIONS: {
            "type": "object",
            "properties": {
                "apiVersion": string,
                "kind": string,
                "dryRun": {"type": "array", "items": string},
                "gracePeriodSeconds": {"type": "integer", "format": "int64"},
                "propagationPolicy": string,
                "preconditions": open_object,
            },
        },
        WATCH_EVENT: {
            "type": "object",
            "required": ["type", "object"],
            "properties": {"type": string, "object": open_object},
        },
    }


def _builtin_schema(rt: ResourceType, ref: str) -> dict[str, Any]:
    """A permissive schema for a built-in kind: anything goes under spec/status and the rest."""
    open_object: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    props: dict[str, Any] = {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"allOf": [{"$ref": ref + OBJECT_META}], "default": {}},
    }
    if rt.kind == "Pod":
        props["spec"] = _pod_spec_schema()
    elif rt.kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job"):
        props["spec"] = {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {
                "template": {
                    "type": "object",
                    "x-kubernetes-preserve-unknown-fields": True,
                    "properties": {"spec": _pod_spec_schema()},
                }
            },
        }
    elif rt.kind == "Service":
        props["spec"] = {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
            "properties": {
                "ports": {
                    "type": "array",
                    "items": open_object,
                    "x-kubernetes-patch-merge-key": "port",
                    "x-kubernetes-patch-strategy": "merge",
                }
            },
        }
    else:
        props["spec"] = dict(open_object)
    props["status"] = dict(open_object)
    return {
        "description": f"{rt.kind} (served by the ascendjob-controller local cluster).",
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": props,
        "x-kubernetes-group-version-kind": [_gvk(rt)],
    }


def _pod_spec_schema() -> dict[str, Any]:
    open_object: dict[str, Any] = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    container = {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {
            name: {
                "type": "array",
                "items": open_object,
                "x-kubernetes-patch-merge-key": key,
                "x-kubernetes-patch-strategy": "merge",
            }
            for name, key in _CONTAINER_MERGE_KEYS.items()
        },
    }
    props: dict[str, Any] = {}
    for name, key in _MERGE_KEYS.items():
        items = container if name.endswith("ontainers") else open_object
        props[name] = {
            "type": "array",
            "items": items,
            "x-kubernetes-patch-merge-key": key,
            "x-kubernetes-patch-strategy": "merge",
        }
    return {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "properties": props}


def _custom_schema(rt: ResourceType, ref: str) -> dict[str, Any]:
    schema: dict[str, Any] = (
        copy.deepcopy(rt.schema)
        if rt.schema
        else {
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": True,
        }
    )
    props: dict[str, Any] = schema.setdefault("properties", {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    description = (props.get("metadata") or {}).get("description")
    meta: dict[str, Any] = {"allOf": [{"$ref": ref + OBJECT_META}]}
    if description:
        meta["description"] = description
    props["metadata"] = meta
    schema["x-kubernetes-group-version-kind"] = [_gvk(rt)]
    return schema


def _list_schema(rt: ResourceType, ref: str) -> dict[str, Any]:
    return {
        "description": f"{rt.list_kind} is a list of {rt.kind}",
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "items": {"type": "array", "items": {"$ref": ref + schema_name(rt)}},
            "metadata": {"allOf": [{"$ref": ref + LIST_META}], "default": {}},
        },
        "x-kubernetes-group-version-kind": [_gvk(rt, rt.list_kind)],
    }


def _schemas(resources: list[ResourceType], ref: str) -> dict[str, Any]:
    out = _meta_schemas(ref)
    for rt in resources:
        body = _builtin_schema(rt, ref) if rt.builtin else _custom_schema(rt, ref)
        out[schema_name(rt)] = body
        out[schema_name(rt, rt.list_kind)] = _list_schema(rt, ref)
    return out


# --- paths ---------------------------------------------------------------------------------


def _query(name: str, description: str, kind: str = "string") -> dict[str, Any]:
    schema: dict[str, Any] = {"type": kind, "uniqueItems": True}
    return {"name": name, "in": "query", "description": description, "schema": schema}


_DRY_RUN = _query("dryRun", "When present, indicates that modifications should not be persisted.")
_FIELD_MANAGER = _query("fieldManager", "A name associated with the actor making these changes.")
_FIELD_VALIDATION = _query(
    "fieldValidation",
    "How the server handles unknown or duplicate fields: Ignore, Warn or Strict.",
)
_FORCE = _query("force", "Force an apply request, re-acquiring conflicting fields.", "boolean")
_PRETTY = _query("pretty", "If 'true', then the output is pretty printed.")
_LIST_PARAMS = [
    _query("allowWatchBookmarks", "Request watch events with type BOOKMARK.", "boolean"),
    _query("continue", "The continue option from a previous list."),
    _query("fieldSelector", "A selector to restrict the list of returned objects by their fields."),
    _query("labelSelector", "A selector to restrict the list of returned objects by their labels."),
    _query("limit", "Maximum number of responses to return for a list call.", "integer"),
    _query("resourceVersion", "Which resource versions a request may be served from."),
    _query("resourceVersionMatch", "How resourceVersion is applied to list calls."),
    _query("sendInitialEvents", "Send synthetic ADDED events before the watch.", "boolean"),
    _query("timeoutSeconds", "Timeout for the list/watch call.", "integer"),
    _query("watch", "Watch for changes and return them as a stream of events.", "boolean"),
]
_DELETE_PARAMS = [
    _DRY_RUN,
    _query(
        "gracePeriodSeconds", "The duration in seconds before the object is deleted.", "integer"
    ),
    _query("propagationPolicy", "Whether and how garbage collection will be performed."),
]

_READ_TYPES = ("application/json", "application/yaml")
_PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
)


def _content(ref: str, types: Iterable[str] = _READ_TYPES) -> dict[str, Any]:
    return {t: {"schema": {"$ref": ref}} for t in types}


def _op(
    rt: ResourceType,
    action: str,
    verb: str,
    name: str,
    response_ref: str,
    params: list[dict[str, Any]],
    body_ref: str | None = None,
    body_types: Iterable[str] = ("*/*",),
    extra_responses: tuple[str, ...] = (),
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": "OK", "content": _content(response_ref)}}
    for code in extra_responses:
        responses[code] = {"description": "Created", "content": _content(response_ref)}
    responses["401"] = {"description": "Unauthorized"}
    op: dict[str, Any] = {
        "tags": [rt.group_version.replace("/", "_").replace(".", "")],
        "description": f"{action} {name}",
        "operationId": f"{verb}{name}",
        "parameters": params,
        "responses": responses,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(rt),
    }
    if body_ref is not None:
        op["requestBody"] = {
            "content": {t: {"schema": {"$ref": body_ref}} for t in body_types},
            "required": True,
        }
    return op


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "description": description,
        "required": True,
        "schema": {"type": "string", "uniqueItems": True},
    }


def _paths(rt: ResourceType, ref: str) -> dict[str, Any]:
    """Every REST path of one resource, with the verbs it serves."""
    root = f"/api/{rt.version}" if not rt.group else f"/apis/{rt.group}/{rt.version}"
    obj_ref = ref + schema_name(rt)
    list_ref = ref + schema_name(rt, rt.list_kind)
    ns_param = _path_param(
        "namespace", "object name and auth scope, such as for teams and projects"
    )
    name_param = _path_param("name", f"name of the {rt.kind}")
    verbs = set(rt.verbs)
    label = rt.kind + ("Namespaced" if rt.namespaced else "")
    collection = (
        f"{root}/namespaces/{{namespace}}/{rt.plural}" if rt.namespaced else f"{root}/{rt.plural}"
    )
    scope_params = [ns_param] if rt.namespaced else []
    write_params = [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]
    patch_params = [*write_params, _FORCE]
    paths: dict[str, Any] = {}

    coll: dict[str, Any] = {"parameters": [*scope_params, _PRETTY]}
    if "list" in verbs:
        coll["get"] = _op(rt, "list", "list", label, list_ref, list(_LIST_PARAMS))
    if "create" in verbs:
        coll["post"] = _op(
            rt,
            "post",
            "create",
            label,
            obj_ref,
            list(write_params),
            obj_ref,
            _READ_TYPES,
            ("201", "202"),
        )
    if "deletecollection" in verbs:
        coll["delete"] = _op(
            rt,
            "deletecollection",
            "deletecollection",
            label,
            ref + STATUS,
            [*_DELETE_PARAMS, *_LIST_PARAMS],
            ref + DELETE_OPTIONS,
            _READ_TYPES,
        )
    paths[collection] = coll
    if rt.namespaced and "list" in verbs:
        paths[f"{root}/{rt.plural}"] = {
            "parameters": [_PRETTY],
            "get": _op(
                rt, "list", "list", f"{rt.kind}ForAllNamespaces", list_ref, list(_LIST_PARAMS)
            ),
        }

    item: dict[str, Any] = {"parameters": [name_param, *scope_params, _PRETTY]}
    if "get" in verbs:
        item["get"] = _op(rt, "get", "read", label, obj_ref, [])
    if "update" in verbs:
        item["put"] = _op(
            rt, "put", "replace", label, obj_ref, list(write_params), obj_ref, _READ_TYPES, ("201",)
        )
    if "patch" in verbs:
        item["patch"] = _op(
            rt,
            "patch",
            "patch",
            label,
            obj_ref,
            list(patch_params),
            ref + PATCH,
            _PATCH_TYPES,
            ("201",),
        )
    if "delete" in verbs:
        item["delete"] = _op(
            rt,
            "delete",
            "delete",
            label,
            obj_ref,
            list(_DELETE_PARAMS),
            ref + DELETE_OPTIONS,
            _READ_TYPES,
            ("202",),
        )
    paths[f"{collection}/{{name}}"] = item

    for sub in sorted(rt.subresources):
        if sub not in ("status", "scale"):
            continue
        sub_label = f"{label}{sub.capitalize()}"
        sub_item: dict[str, Any] = {"parameters": [name_param, *scope_params, _PRETTY]}
        sub_item["get"] = _op(rt, "get", "read", sub_label, obj_ref, [])
        sub_item["put"] = _op(
            rt,
            "put",
            "replace",
            sub_label,
            obj_ref,
            list(write_params),
            obj_ref,
            _READ_TYPES,
            ("201",),
        )
        sub_item["patch"] = _op(
            rt,
            "patch",
            "patch",
            sub_label,
            obj_ref,
            list(patch_params),
            ref + PATCH,
            _PATCH_TYPES,
            ("201",),
        )
        paths[f"{collection}/{{name}}/{sub}"] = sub_item
    return paths


# --- documents -----------------------------------------------------------------------------


def _v3_path_key(group_version: str) -> str:
    return f"api/{group_version}" if "/" not in group_version else f"apis/{group_version}"


def _hash(doc: dict[str, Any]) -> str:
    raw = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(raw).hexdigest().upper()


def openapi_v3_document(
    group_version: str, resources: Iterable[ResourceType]
) -> dict[str, Any] | None:
    """The OpenAPI 3.0 document of one group-version; None when nothing is served there."""
    matching = sorted(
        (rt for rt in resources if rt.group_version == group_version), key=lambda r: r.plural
    )
    if not matching:
        return None
    ref = "#/components/schemas/"
    paths: dict[str, Any] = {}
    for rt in matching:
        paths.update(_paths(rt, ref))
    return {
        "openapi": "3.0.0",
        "info": dict(_INFO if all(rt.builtin for rt in matching) else _CRD_INFO),
        "paths": paths,
        "components": {"schemas": _schemas(matching, ref)},
    }


def openapi_v3_index(resources: Iterable[ResourceType]) -> dict[str, Any]:
    """`/openapi/v3`: one entry per group-version, its URL carrying a content hash so that
    kubectl's disk cache refreshes exactly when a CRD changes."""
    resources = list(resources)
    group_versions = sorted({rt.group_version for rt in resources})
    paths: dict[str, Any] = {}
    for gv in group_versions:
        doc = openapi_v3_document(gv, resources)
        assert doc is not None
        key = _v3_path_key(gv)
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={_hash(doc)}"}
    return {"paths": paths}


def _to_v2(value: Any) -> Any:
    """Rewrite v3 refs and drop v3-only constructs for the swagger 2.0 document."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k == "$ref" and isinstance(v, str):
                out[k] = v.replace("#/components/schemas/", "#/definitions/")
            elif k == "nullable":
                continue
            else:
                out[k] = _to_v2(v)
        return out
    if isinstance(value, list):
        return [_to_v2(v) for v in value]
    return value


def _v2_operation(op: dict[str, Any]) -> dict[str, Any]:
    params = []
    for p in op.get("parameters", []):
        q = {k: v for k, v in p.items() if k != "schema"}
        q["type"] = p.get("schema", {}).get("type", "string")
        q["uniqueItems"] = True
        params.append(q)
    body = op.get("requestBody")
    consumes = ["*/*"]
    if body:
        content = body["content"]
        consumes = list(content)
        first = next(iter(content.values()))
        params.insert(
            0, {"name": "body", "in": "body", "required": True, "schema": _to_v2(first["schema"])}
        )
    responses = {}
    for code, resp in op["responses"].items():
        entry: dict[str, Any] = {"description": resp["description"]}
        if "content" in resp:
            entry["schema"] = _to_v2(next(iter(resp["content"].values()))["schema"])
        responses[code] = entry
    out = {k: v for k, v in op.items() if k not in ("parameters", "requestBody", "responses")}
    out.update(
        consumes=consumes,
        produces=["application/json", "application/yaml"],
        schemes=["https"],
        parameters=params,
        responses=responses,
    )
    return out


def openapi_v2(resources: Iterable[ResourceType]) -> dict[str, Any]:
    """`/openapi/v2` (swagger 2.0), the same content for clients that predate v3."""
    resources = sorted(resources, key=lambda r: (r.group, r.version, r.plural))
    paths: dict[str, Any] = {}
    for rt in resources:
        for path, item in _paths(rt, "#/components/schemas/").items():
            v2_item: dict[str, Any] = {}
            for key, value in item.items():
                if key == "parameters":
                    v2_item[key] = [
                        {
                            **{k: v for k, v in p.items() if k != "schema"},
                            "type": "string",
                            "uniqueItems": True,
                        }
                        for p in value
                    ]
                else:
                    v2_item[key] = _v2_operation(value)
            paths[path] = v2_item
    definitions = _to_v2(_schemas(resources, "#/components/schemas/"))
    return {"swagger": "2.0", "info": dict(_INFO), "paths": paths, "definitions": definitions}


# --- protobuf v2 ---------------------------------------------------------------------------

# What kubectl sends in Accept, and the Content-Type to answer with: Go's mime parser rejects
# the "@" of the Accept form in a Content-Type, so the server answers with the dotted form.
OPENAPI_V2_PROTOBUF_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
OPENAPI_V2_PROTOBUF_CONTENT_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"


def _proto_string(field_number: int, value: str) -> bytes:
    data = value.encode()
    return _proto_key(field_number) + _varint(len(data)) + data


def _proto_key(field_number: int, wire_type: int = 2) -> bytes:
    return _varint(field_number << 3 | wire_type)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def openapi_v2_protobuf() -> bytes:
    """`/openapi/v2` as kubectl requests it (gnostic OpenAPIv2 Document, protobuf).

    client-go only parses the protobuf form. kubectl falls back to it for client-side
    validation when it cannot confirm server-side field validation for a kind (`kind: List`
    files, unknown kinds) and for strategic-merge metadata. A document holding just the
    swagger version and info parses cleanly and describes no models, so kubectl skips
    client-side checks (the server validates with fieldValidation) and uses its compiled-in
    patch metadata: exactly the behaviour we want, without encoding every schema.
    """
    info = _proto_string(1, _INFO["title"]) + _proto_string(2, _INFO["version"])
    return _proto_string(1, "2.0") + _proto_key(2) + _varint(len(info)) + info

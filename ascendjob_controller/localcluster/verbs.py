"""The write and read verbs with kube-apiserver semantics, independent of HTTP.

Each verb builds the complete new object first and only then writes it under the store lock,
so a rejected request never leaves a half-written object. The garbage collector and the
namespace cleaner call these same verbs in-process.
"""

from __future__ import annotations

import dataclasses
import json
import random
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ascendjob_controller.localcluster import (
    admission,
    builtin,
    builtin_fields,
    deletion,
    event_fields,
    event_rules,
    fastjson,
    fieldsets,
    managedfields,
    validation,
)
from ascendjob_controller.localcluster.deletion import DeleteOptions
from ascendjob_controller.localcluster.errors import (
    ApiError,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    invalid_resource,
    namespace_not_found,
    not_found,
    options_invalid,
    stale,
    strict_patch_invalid,
    unsupported_media_type,
)
from ascendjob_controller.localcluster.goquote import go_json, go_print, go_quote
from ascendjob_controller.localcluster.metadata_rules import metadata_causes
from ascendjob_controller.localcluster.registry import Registry
from ascendjob_controller.localcluster.resources import ResourceType
from ascendjob_controller.localcluster.store import Entry, Store, decode_continue, encode_continue
from ascendjob_controller.localcluster.timestamps import now_rfc3339
from ascendjob_controller.localcluster.typed_fields import (
    go_numbers,
    json_type,
    object_meta_errors,
    object_meta_type_error,
    pod_unmarshal_error,
)

_SUBDOMAIN_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_SYSTEM_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)
MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"


@dataclass
class Result:
    """What a write produced: the stored (or would-be) object, HTTP code, and warnings."""

    entry: Entry
    code: int = 200
    warnings: list[str] = field(default_factory=list)
    answer: dict[str, Any] | None = None  # a body other than the object (a DELETE's Status)


@dataclass
class ListResult:
    entries: list[Entry]
    resource_version: int
    continue_token: str
    remaining: int | None


def _spec_part(obj: dict[str, Any]) -> dict[str, Any]:
    """Everything generation counts: all but metadata, status and type fields."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _comparable(obj: dict[str, Any]) -> dict[str, Any]:
    """What decides whether a write changes anything (a no-op write is not persisted).

    managedFields timestamps are left out: re-applying the same configuration must not bump
    the resourceVersion just because the apply happened a second later.
    """
    meta = {k: v for k, v in obj.get("metadata", {}).items() if k not in ("resourceVersion",)}
    managed = meta.get("managedFields")
    if isinstance(managed, list):
        meta["managedFields"] = [
            {k: v for k, v in m.items() if k != "time"} if isinstance(m, dict) else m
            for m in managed
        ]
    return {**obj, "metadata": meta}


INTERNAL_MANAGER = "kube-controller-manager"  # in-process writers: the garbage collector


def schema_of(rt: ResourceType) -> fieldsets.Schema:
    """How managedFields sees this kind's lists and maps."""
    if rt.builtin:
        return fieldsets.builtin_schema(rt.kind)
    return fieldsets.crd_schema(rt.schema)


def _set_managed(obj: dict[str, Any], managed: list[dict[str, Any]]) -> None:
    if managed:
        obj["metadata"]["managedFields"] = managed
    else:
        obj["metadata"].pop("managedFields", None)


def storage_key(rt: ResourceType) -> str:
    """The etcd key prefix kube-apiserver stores a resource under (it shows in some errors)."""
    if rt is builtin.SERVICES:
        return "/registry/services/specs"
    if not rt.builtin:
        return f"/registry/{rt.group}/{rt.plural}"
    return f"/registry/{rt.plural}"


def _create_causes(
    rt: ResourceType, obj: dict[str, Any], meta_causes: list[dict[str, str]], event_api: str
) -> list[dict[str, str]]:
    """A new built-in object's causes: its metadata's first, then its kind's. An Event's are
    its API's own (event_rules.py: core/v1 does not even check the name)."""
    if rt is builtin.EVENTS:
        namespace = obj["metadata"].get("namespace", "")
        return event_rules.event_causes(obj, namespace, event_api, meta_causes)
    return meta_causes + validation.on_create(rt.kind, obj)


def _unknown_fields_answer(
    rt: ResourceType, unknown: list[str], field_validation: str
) -> list[str]:
    """What the real server does about the unknown fields it dropped from a body: a 400 under
    Strict, nothing under Ignore, else one Warning each."""
    listed = [f'unknown field "{path}"' for path in unknown]
    if listed and field_validation == "Strict":
        raise bad_request(
            f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            f"strict decoding error: {', '.join(listed)}"
        )
    return [] if field_validation == "Ignore" else listed


def _check_finalizers(rt: ResourceType, old: dict[str, Any], new: dict[str, Any]) -> None:
    """422: an object being deleted may lose finalizers, never gain one."""
    if not old["metadata"].get("deletionTimestamp"):
        return
    before = set(old["metadata"].get("finalizers") or [])
    added = [f for f in new["metadata"].get("finalizers") or [] if f not in before]
    if added:
        listed = ", ".join(json.dumps(f) for f in added)
        cause = {
            "reason": "FieldValueForbidden",
            "message": "Forbidden: no new finalizers can be added if the object is being "
            f"deleted, found new finalizers []string{{{listed}}}",
            "field": "metadata.finalizers",
        }
        raise invalid(rt, old["metadata"]["name"], [cause])


def _deleted_by_update(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """An update removes the object when deletion waits only for finalizers it empties.

    A pod in its grace period (deletionGracePeriodSeconds > 0) is not removed by updates:
    the kubelet's delete with grace 0 ends it.
    """
    return (
        bool(old.get("deletionTimestamp"))
        and not new.get("finalizers")
        and not old.get("deletionGracePeriodSeconds")
    )


def _crd_status(crd: dict[str, Any]) -> dict[str, Any]:
    """What the apiextensions controllers would write: names accepted and established."""
    ts = now_rfc3339()
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    names.setdefault("singular", str(names.get("kind", "")).lower())
    names.setdefault("listKind", f"{names.get('kind', '')}List")
    stored = [v["name"] for v in spec.get("versions") or [] if v.get("storage")]
    return {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "reason": "NoConflicts",
                "message": "no conflicts found",
                "lastTransitionTime": ts,
            },
            {
                "type": "Established",
                "status": "True",
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
                "lastTransitionTime": ts,
            },
        ],
        "storedVersions": stored,
    }


def _under_status(path: Any) -> bool:
    return isinstance(path, str) and (path == "/status" or path.startswith("/status/"))


def only_status(content_type: str, patch: Any) -> bool:
    """The patch can change nothing but `status` (and a resourceVersion precondition).

    Conservative: False whenever unsure, which only costs a copy. A JSON patch qualifies
    when every op writes under /status (a `test` may look anywhere; a `move` must also come
    from under /status); a merge patch when its only other key is metadata.resourceVersion,
    which the write checks and then replaces with the stored one.
    """
    if content_type == JSON_PATCH and isinstance(patch, list):
        for op in patch:
            if not isinstance(op, dict):
                return False
            kind = op.get("op")
            if kind == "test":
                continue
            if kind not in ("add", "replace", "remove", "copy", "move"):
                return False
            if not _under_status(op.get("path")):
                return False
            if kind == "move" and not _under_status(op.get("from")):
                return False
        return True
    if content_type == MERGE_PATCH and isinstance(patch, dict):
        meta = patch.get("metadata", {})
        return set(patch) <= {"status", "metadata"} and (
            isinstance(meta, dict) and set(meta) <= {"resourceVersion"}
        )
    return False


def _unmarshal_error(rt: ResourceType, obj: dict[str, Any], meta: dict[str, Any]) -> str | None:
    """The decode error kube-apiserver's Go decoder reports for a body, else None: a time
    that fails to decode ends the decoding at once and wins over any type error noted
    before it (`object_meta_errors`)."""
    if rt.builtin and rt.kind == "Event":
        return event_fields.unmarshal_error(obj, rt.group_version)
    prefix = "ObjectMeta.metadata." if rt.builtin else "ObjectMeta."
    at_once, first = object_meta_errors(meta, prefix, typed=rt.builtin)
    if at_once is None and first is None and rt.kind == "Pod" and rt.builtin:
        first = pod_unmarshal_error(obj)
    return at_once or first


def _check_builtin_envelope(rt: ResourceType, obj: dict[str, Any], cannot: str) -> None:
    """A built-in kind's body names another group/version or kind: the scheme's 400s."""
    api_version = obj.get("apiVersion")
    if api_version and api_version != rt.group_version:
        raise bad_request(
            f'{cannot}: no kind "{obj.get("kind") or rt.kind}" is registered for version '
            f'"{api_version}" in scheme "pkg/runtime/scheme.go:111"'
        )
    kind = obj.get("kind")
    if kind and kind != rt.kind:
        raise bad_request(
            f'{kind} in version "{rt.version}" cannot be handled as a {rt.kind}: '
            f"the kind in the data ({kind}) does not match the expected kind ({rt.kind})"
        )


class Api:
    """The verbs over one Store and Registry."""

    def __init__(self, store: Store, registry: Registry) -> None:
        self.store = store
        self.registry = registry
        self.allocator = builtin.ClusterIPAllocator()
        self._rand = random.Random()

    # --- reads -----------------------------------------------------------------------------
    def get(self, rt: ResourceType, namespace: str, name: str) -> Entry:
        entry = self.store.get(rt.group_resource, namespace if rt.namespaced else "", name)
        if entry is None:
            raise not_found(rt, name)
        return entry

    def list_objects(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str = "",
        field_selector: str = "",
        limit: int = 0,
        continue_token: str = "",
    ) -> ListResult:
        match = make_matcher(label_selector, field_selector, rt)
        after = None
        if continue_token:
            _, after = decode_continue(continue_token)
        ns = namespace if rt.namespaced and namespace else None
        entries, rv, more, remaining = self.store.page(rt.group_resource, ns, after, limit, match)
        return self._list_result(entries, rv, more, remaining)

    def list_at(
        self,
        rt: ResourceType,
        namespace: str | None,
        rv: int,
        label_selector: str = "",
        field_selector: str = "",
    ) -> ListResult:
        """A list as of an exact past revision (`resourceVersionMatch=Exact`)."""
        match = make_matcher(label_selector, field_selector, rt)
        ns = namespace if rt.namespaced and namespace else None
        entries = self.store.list_at(rt.group_resource, ns, rv)
        return ListResult([e for e in entries if match is None or match(e.obj)], rv, "", None)

    def _list_result(
        self, entries: list[Entry], rv: int, more: bool, remaining: int | None
    ) -> ListResult:
        token = ""
        if more and entries:
            last = entries[-1].obj["metadata"]
            token = encode_continue(rv, last.get("namespace", ""), last["name"])
        return ListResult(entries, rv, token, remaining if more else None)

    # --- create ------------------------------------------------------------------------------
    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        field_validation: str = "",
        dry_run: bool = False,
        manager: str = INTERNAL_MANAGER,
        managed: list[dict[str, Any]] | None = None,
        event_api: str = "v1",
    ) -> Result:
        """POST; `managed` is the managedFields an apply computed (None: an Update entry);
        `event_api`, the API an Event was posted through (its checks differ)."""
        obj = self.check_body(rt, body)
        # `managed` comes with an apply, whose unknown field is its own error (not modelled),
        # and from the events.k8s.io/v1 view, which prunes the body in its own form.
        pruned = self.prune_builtin(rt, obj, field_validation) if managed is None else []
        meta = obj["metadata"]
        self._place_namespace(rt, namespace, meta)
        asked_version = meta.get("resourceVersion")
        name_causes = self._new_identity(rt, meta)
        if "status" in rt.subresources and not rt.builtin:
            obj.pop("status", None)
        meta_causes = metadata_causes(meta)
        warnings = pruned + self._validate_custom(
            rt, obj, field_validation, first=name_causes + meta_causes
        )
        if rt is builtin.CRDS and (causes := name_causes + meta_causes + builtin.validate_crd(obj)):
            raise invalid(rt, meta["name"], causes)
        builtin.decode_defaults(rt, obj)
        if managed is None:
            managed = managedfields.record_update(
                None, obj, schema_of(rt), self._write(rt, manager)
            )
        with self.store.lock:
            self._require_namespace(rt, meta.get("namespace", ""), meta["name"])
            if rt is builtin.PODS:
                admission.admit_pod(obj, meta["namespace"], self._find_account)
            if rt.builtin and (
                causes := _create_causes(rt, obj, name_causes + meta_causes, event_api)
            ):
                raise invalid(rt, meta["name"], causes)
            if not dry_run and _stored_version(asked_version):
                # The storage's own check, after validation and before the name's: an internal
                # error, not a 4xx (a dry run's storage does not make it).
                raise ApiError(
                    500, "", "resourceVersion should not be set on objects to be created"
                )
            present = self.store.get(rt.group_resource, meta.get("namespace", ""), meta["name"])
            if present is not None:
                raise already_exists(rt, meta["name"], present.obj["metadata"])
            self._default_builtin(rt, obj)
            builtin.omit_empty(rt, obj)
            _set_managed(obj, managed)
            if dry_run:
                if rt is builtin.SERVICES:
                    self._release_ip(obj)
                if isinstance(asked_version, str) and asked_version:
                    # A dry run's storage copies the object as it is: the version sent stays.
                    meta["resourceVersion"] = asked_version
                return Result(Entry(obj, json.dumps(obj).encode()), 201, warnings)
            entry = self.store.write(rt.group_resource, obj, "ADDED")
            self._after_write(rt, entry.obj)
        return Result(entry, 201, warnings)

    def _new_identity(self, rt: ResourceType, meta: dict[str, Any]) -> list[dict[str, str]]:
        """Name (or a generated one), uid, creationTimestamp, generation of a new object.

        Returns the name's causes, which the object's 422 reports first: before the rest of
        its metadata's and a built-in kind's own, or a custom resource's schema's. (A custom
        resource without a schema has no later check: its causes are raised here.)"""
        if not meta.get("name") and not meta.get("generateName"):
            cause = {
                "reason": "FieldValueRequired",
                "message": "Required value: name or generateName is required",
                "field": "metadata.name",
            }
            if not rt.builtin and not rt.schema:
                raise invalid(rt, "", [cause])
            meta["name"] = ""
            name_causes = [cause]
        else:
            if not meta.get("name"):
                meta["name"] = self._generated_name(rt, meta)
            name_causes = self._check_name(rt, meta)
        for key in (*_SYSTEM_META, "resourceVersion", "selfLink"):
            if key != "generation" or builtin.has_generation(rt):
                meta.pop(key, None)  # (a kind without generation keeps the one it was sent)
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = now_rfc3339()
        if builtin.has_generation(rt):
            meta["generation"] = 1
        return name_causes

    def _write(self, rt: ResourceType, manager: str, subresource: str = "") -> managedfields.Write:
        return managedfields.Write(
            manager or "unknown", rt.group_version, subresource, "status" in rt.subresources
        )

    def _find_account(self, namespace: str, name: str) -> dict[str, Any] | None:
        entry = self.store.get(builtin.SERVICEACCOUNTS.group_resource, namespace, name)
        return entry.obj if entry is not None else None

    def _generated_name(self, rt: ResourceType, meta: dict[str, Any]) -> str:
        prefix = str(meta["generateName"])[:58]
        for _ in range(16):
            name = prefix + "".join(self._rand.choice(_GENERATE_ALPHABET) for _ in range(5))
            if self.store.get(rt.group_resource, meta.get("namespace", ""), name) is None:
                return name
        return name

    # --- update / patch -------------------------------------------------------------------------
    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str = "",
        field_validation: str = "",
        dry_run: bool = False,
        manager: str = INTERNAL_MANAGER,
        managed: list[dict[str, Any]] | None = None,
    ) -> Result:
        obj = self.check_body(rt, body)
        meta = obj["metadata"]
        if meta.get("name") and meta["name"] != name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL "
                f"({name})"
            )
        meta["name"] = name
        self._place_namespace(rt, namespace, meta)
        with self.store.lock:
            existing = self.store.get(rt.group_resource, meta.get("namespace", ""), name)
            if existing is None:
                if subresource or rt not in (builtin.LEASES, builtin.SERVICES):
                    raise not_found(rt, name)
                return self.create(rt, namespace, obj, field_validation, dry_run, manager, managed)
            self._check_update_preconditions(rt, existing.obj["metadata"], meta)
            return self._replace(
                rt, existing, obj, subresource, field_validation, dry_run, manager, managed
            )

    def _check_update_preconditions(
        self, rt: ResourceType, current: dict[str, Any], meta: dict[str, Any]
    ) -> None:
        """409 for a stale resourceVersion or another uid; 422 for a CR without a version."""
        name = current["name"]
        rv = meta.get("resourceVersion")
        if rv and rv != current["resourceVersion"]:
            raise stale(rt, name)
        if not rv and not rt.builtin:
            # custom resources do not allow unconditional updates
            cause = {
                "reason": "FieldValueInvalid",
                "message": "Invalid value: 0: must be specified for an update",
                "field": "metadata.resourceVersion",
            }
            raise invalid_resource(rt, name, [cause])
        uid = meta.get("uid")
        if uid and uid != current.get("uid"):
            ns = f"{current['namespace']}/" if current.get("namespace") else ""
            raise conflict(
                rt,
                name,
                f"StorageError: invalid object, Code: 4, Key: {storage_key(rt)}/{ns}{name}, "
                f"ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in "
                f"precondition: {uid}, UID in object meta: {current.get('uid')}",
            )

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        patch: Any,
        subresource: str = "",
        field_manager: str = "",
        field_validation: str = "",
        dry_run: bool = False,
        manager: str = INTERNAL_MANAGER,
        force: bool = False,
    ) -> Result:
        """PATCH; `field_manager` is the query parameter (apply needs it), `manager` the
        writer's name for managedFields otherwise (the fieldManager, else the user agent).
        `patch` is consumed: it is a request body decoded for this call, so a JSON patch's
        values are placed in the stored object without a copy."""
        from ascendjob_controller.localcluster import patch as patching

        ns = namespace if rt.namespaced else ""
        # A status patch that touches nothing else needs no second copy of the object (a
        # decode per kubelet status write: a tenth of the bed's CPU), and, for a built-in
        # kind, no first one beyond its status (custom resources are pruned and defaulted
        # whole on every write, so theirs stay whole copies).
        status_owned = subresource == "status" and only_status(content_type, patch)
        with self.store.lock:
            existing = self.store.get(rt.group_resource, ns, name)
            managed = None
            try:
                if content_type == APPLY_PATCH:
                    write = self._write(rt, field_manager, subresource)
                    new, managed = self._apply(rt, existing, patch, write, force)
                    if existing is None:
                        if subresource:
                            raise not_found(rt, name)
                        new.setdefault("metadata", {})["name"] = name
                        return self.create(
                            rt, namespace, new, field_validation, dry_run, managed=managed
                        )
                else:
                    if existing is None:
                        raise not_found(rt, name)
                    strict = field_validation == "Strict"
                    shown = go_print(patch) if strict and content_type == STRATEGIC_PATCH else None
                    if not rt.builtin:
                        # The patched object is decoded as a create's body is (`check_body`):
                        # only the patch's values are new, and they go in uncopied.
                        patch = go_numbers(patch)
                    new = self._patched(rt, existing, content_type, patch, status_owned)
                    if strict and isinstance(new, dict):
                        self.refuse_unknown_in_patch(rt, new, shown)
            except patching.PatchError as err:
                raise self.patch_error(rt, name, err, content_type) from err
            if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
                raise bad_request("patch result is not an object")
            old_rv = existing.obj["metadata"]["resourceVersion"]
            if new["metadata"].get("resourceVersion") not in (None, "", old_rv):
                raise stale(rt, name)
            new["metadata"]["name"] = name
            new.setdefault("apiVersion", rt.group_version)
            new.setdefault("kind", rt.kind)
            return self._replace(
                rt, existing, new, subresource, field_validation, dry_run, manager, managed,
                status_owned,
            )  # fmt: skip

    @staticmethod
    def _patched(
        rt: ResourceType, existing: Entry, content_type: str, patch: Any, status_only: bool
    ) -> Any:
        """A JSON, merge or strategic patch applied to a copy of the stored object.

        `status_only`: the patch writes nothing but status (`only_status`), so a built-in
        kind's copy shares all but its status with the stored object (`Entry.copy_status`).
        """
        from ascendjob_controller.localcluster import patch as patching

        current = existing.copy_status() if status_only and rt.builtin else existing.copy()
        if content_type == MERGE_PATCH:
            return patching.json_merge_patch(current, patch, owned=True)
        if content_type == JSON_PATCH:
            if not isinstance(patch, list):
                raise bad_request(
                    "error decoding patch: json: cannot unmarshal "
                    f"{json_type(patch)} into Go value of type []handlers.jsonPatchOp"
                )
            # The patch is the request's own decoded body: its values can go in uncopied.
            return patching.json_patch(current, patch, owned=True, fresh_values=True)
        if content_type == STRATEGIC_PATCH:
            if not rt.builtin:
                raise unsupported_media_type(content_type, [JSON_PATCH, MERGE_PATCH, APPLY_PATCH])
            if not isinstance(patch, dict):
                raise bad_request("strategic merge patch must be an object")
            return patching.strategic_merge_patch(current, patch, rt.kind, owned=True)
        # not a patch type at all: the handler's bare 415
        raise ApiError(415, "UnsupportedMediaType", "415: Unsupported Media Type", {})

    @staticmethod
    def patch_error(
        rt: ResourceType, name: str, err: Exception, content_type: str = ""
    ) -> ApiError:
        """422 for a patch that cannot be applied; a JSON patch's says no more than that."""
        if content_type == JSON_PATCH:
            message = "the server rejected our request due to an error in our request"
            return ApiError(422, "Invalid", message, {})
        return ApiError(422, "Invalid", str(err), {"name": name, "kind": rt.kind})

    def _apply(
        self,
        rt: ResourceType,
        existing: Entry | None,
        config: Any,
        write: managedfields.Write,
        force: bool,
    ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Server-side apply: the merged object and its managedFields (409 on conflicts)."""
        from ascendjob_controller.localcluster import patch as patching

        if not write.manager or write.manager == "unknown":
            cause = {
                "reason": "FieldValueRequired",
                "message": "Required value: is required for apply patch",
                "field": "fieldManager",
            }
            raise options_invalid("PatchOptions", cause)
        if not isinstance(config, dict):
            raise bad_request("apply patch must be an object")
        api_version, kind = str(config.get("apiVersion") or ""), str(config.get("kind") or "")
        if not api_version or not kind:
            group, _, version = api_version.rpartition("/")
            raise bad_request(f"invalid object type: {group}/{version}, Kind={kind}")
        current = existing.copy() if existing else None
        merged = patching.apply_merge(current, config, rt.builtin, rt.kind)
        return managedfields.record_apply(current, config, merged, schema_of(rt), write, force)

    def _replace(
        self,
        rt: ResourceType,
        existing: Entry,
        new: dict[str, Any],
        subresource: str,
        field_validation: str,
        dry_run: bool,
        manager: str = INTERNAL_MANAGER,
        managed: list[dict[str, Any]] | None = None,
        status_owned: bool = False,
    ) -> Result:
        """The shared tail of update and patch; the caller holds the store lock.

        `managed`: the managedFields an apply computed (None: record this write as an Update).
        `status_owned`: `new` is a fresh copy of the stored object that differs from it in its
        status alone (see `only_status`), so it can be the status write's object as it is.
        """
        old = existing.obj
        name = old["metadata"]["name"]
        pruned = (
            self.prune_builtin(rt, new, field_validation, status_owned) if managed is None else []
        )
        if subresource == "status" and status_owned:
            obj = new
        elif subresource == "status":
            obj = existing.copy()
            if "status" in new:
                obj["status"] = new["status"]
            else:
                obj.pop("status", None)
        elif subresource:
            raise not_found(rt, name)
        else:
            obj = new
            meta = obj["metadata"]
            for key in _SYSTEM_META:
                if key in old["metadata"]:
                    meta[key] = old["metadata"][key]
                else:
                    meta.pop(key, None)
            if "managedFields" not in meta and "managedFields" in old["metadata"]:
                meta["managedFields"] = old["metadata"]["managedFields"]
            if "status" in rt.subresources:
                if "status" in old:
                    obj["status"] = old["status"]
                else:
                    obj.pop("status", None)
            builtin.decode_defaults(rt, obj)
            self._keep_builtin_fields(rt, old, obj)
        obj["metadata"]["namespace"] = old["metadata"].get("namespace", "")
        if not rt.namespaced:
            obj["metadata"].pop("namespace", None)
        obj["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        builtin.omit_empty(rt, obj)
        # (pods are checked in _keep_builtin_fields, before their spec comparison)
        # A status write keeps the stored metadata's labels and annotations on the real server.
        meta_causes = metadata_causes(obj["metadata"]) if not subresource else []
        causes = []
        if rt.builtin:
            causes = meta_causes
            if rt is not builtin.PODS:
                causes = causes + validation.on_update(rt.kind, old, obj, subresource)
        if causes:
            raise invalid(rt, name, causes)
        obj["apiVersion"] = old.get("apiVersion", rt.group_version)
        obj["kind"] = rt.kind
        warnings = pruned + self._validate_custom(
            rt, obj, field_validation, old, first=meta_causes, subresource=subresource
        )
        if rt is builtin.CRDS and (causes := builtin.validate_crd(obj)):
            raise invalid(rt, name, causes)
        if builtin.has_generation(rt) and _spec_part(obj) != _spec_part(old):
            obj["metadata"]["generation"] = int(old["metadata"].get("generation", 1)) + 1
        _check_finalizers(rt, old, obj)
        if managed is None:
            write = self._write(rt, manager, subresource)
            managed = managedfields.record_update(old, obj, schema_of(rt), write)
        _set_managed(obj, managed)
        if _comparable(obj) == _comparable(old):
            return Result(existing, 200, warnings)
        if dry_run:
            return Result(Entry(obj, json.dumps(obj).encode()), 200, warnings)
        if _deleted_by_update(old["metadata"], obj["metadata"]):
            # The write that empties the finalizers of a deleting object deletes it: watchers
            # get the last stored state, the client its own object at the old version.
            self._remove(rt, old)
            return Result(Entry(obj, json.dumps(obj).encode()), 200, warnings)
        entry = self.store.write(rt.group_resource, obj, "MODIFIED")
        self._after_write(rt, entry.obj)
        return Result(entry, 200, warnings)

    def bind(self, namespace: str, name: str, body: Any) -> dict[str, Any]:
        """POST pods/binding: what a scheduler does to put a pod on a node."""
        rt = builtin.PODS
        if not isinstance(body, dict):
            raise bad_request("the body of the request is not a Binding object")
        target = body.get("target") or {}
        node = target.get("name") if isinstance(target, dict) else None
        if not node:
            raise invalid(
                rt,
                name,
                [
                    {
                        "reason": "FieldValueRequired",
                        "message": "Required value",
                        "field": "target.name",
                    }
                ],
            )
        with self.store.lock:
            existing = self.store.get(rt.group_resource, namespace, name)
            if existing is None:
                raise not_found(rt, name)
            current = (existing.obj.get("spec") or {}).get("nodeName")
            if current:
                raise ApiError(
                    409,
                    "Conflict",
                    f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is '
                    f'already assigned to node "{current}"',
                    {"name": name, "kind": "pods/binding"},
                )
            obj = existing.copy_status()  # the spec's top level is copied below, all it changes
            obj["spec"] = {**obj["spec"], "nodeName": node}
            # What the binding registry does besides: the pod is now PodScheduled.
            conditions = [
                c for c in (obj.setdefault("status", {}).get("conditions") or [])
                if c.get("type") != "PodScheduled"
            ]  # fmt: skip
            conditions.append(
                {
                    "type": "PodScheduled",
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": now_rfc3339(),
                }
            )
            obj["status"]["conditions"] = conditions
            self.store.write(rt.group_resource, obj, "MODIFIED")
        return {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Success",
            "code": 201,
        }

    # --- delete ---------------------------------------------------------------------------------
    def delete(self, rt: ResourceType, namespace: str, name: str, opts: DeleteOptions) -> Result:
        """DELETE; the decisions are deletion.plan's, see there."""
        deletion.check_options(opts)
        ns = namespace if rt.namespaced else ""
        with self.store.lock:
            existing = self.store.get(rt.group_resource, ns, name)
            if existing is None:
                raise not_found(rt, name)
            deletion.check_preconditions(rt, existing.obj["metadata"], opts)
            if rt is builtin.NAMESPACES:
                return self._delete_namespace(existing, opts)
            planned = deletion.plan(rt, existing.obj, opts)
            code = 202 if opts.orphan_dependents is False else 200
            if planned.pending:
                return Result(existing, 200, answer=deletion.answer(rt, existing.obj))
            entry = existing
            if planned.obj is not None and _comparable(planned.obj) != _comparable(existing.obj):
                if opts.dry_run:
                    entry = Entry(planned.obj, json.dumps(planned.obj).encode())
                else:
                    entry = self.store.write(rt.group_resource, planned.obj, "MODIFIED")
            if not planned.remove:
                return Result(entry, code)
            if opts.dry_run:
                return Result(entry, code, answer=deletion.answer(rt, entry.obj))
            removed = self._remove(rt, entry.obj)
            return Result(removed, code, answer=deletion.answer(rt, removed.obj))

    def _delete_namespace(self, existing: Entry, opts: DeleteOptions) -> Result:
        name = existing.obj["metadata"]["name"]
        if name in builtin.PROTECTED_NAMESPACES:
            raise forbidden(
                f'namespaces "{name}" is forbidden: this namespace may not be deleted',
                {"name": name, "kind": "namespaces"},
            )
        if opts.dry_run:
            return Result(existing)
        return self._mark_namespace(existing)

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str | None,
        label_selector: str,
        field_selector: str,
        opts: DeleteOptions,
    ) -> list[Entry]:
        listed = self.list_objects(rt, namespace, label_selector, field_selector)
        out = []
        for entry in listed.entries:
            meta = entry.obj["metadata"]
            try:
                self.delete(rt, meta.get("namespace", ""), meta["name"], opts)
                out.append(entry)  # the answer lists the objects as they were found
            except ApiError as err:
                if err.code != 404:
                    raise
        return out

    def _remove(self, rt: ResourceType, obj: dict[str, Any]) -> Entry:
        meta = obj["metadata"]
        removed = self.store.remove(rt.group_resource, meta.get("namespace", ""), meta["name"])
        assert removed is not None
        if rt is builtin.SERVICES:
            self._release_ip(obj)
        if rt is builtin.CRDS:
            self._drop_crd(obj)
        return removed

    def _mark_namespace(self, existing: Entry) -> Result:
        obj = existing.copy()
        if obj["metadata"].get("deletionTimestamp"):
            return Result(existing)
        obj["metadata"]["deletionTimestamp"] = now_rfc3339()
        obj["status"] = {"phase": "Terminating"}
        return Result(self.store.write(builtin.NAMESPACES.group_resource, obj, "MODIFIED"))

    # --- shared checks and kind hooks -------------------------------------------------------
    def check_body(self, rt: ResourceType, body: Any) -> dict[str, Any]:
        """A private copy of a create's or update's body, decoded as kube-apiserver decodes
        it: the 400s of its decoder (apiVersion and kind, ObjectMeta's and a pod's typed
        fields) and, for a custom resource, the 422 of a kind that is not the resource's."""
        if not isinstance(body, dict):
            raise bad_request(f"the body of the request is not a {rt.kind} object")
        # A private copy; also rejects non-JSON values early. orjson both ways: the standard
        # library's round trip was a sixth of a pod create's CPU.
        obj = fastjson.loads(fastjson.dumps(body))
        cannot = f'{rt.kind} in version "{rt.version}" cannot be handled as a {rt.kind}'
        if rt.builtin:
            _check_builtin_envelope(rt, obj, cannot)
        meta = obj.get("metadata")
        if meta is None:
            meta = obj["metadata"] = {}
        if not isinstance(meta, dict):
            raise bad_request(f"{cannot}: {object_meta_type_error(meta, rt)}")
        unmarshal = _unmarshal_error(rt, obj, meta)
        if unmarshal is not None:
            raise bad_request(f"{cannot}: {unmarshal}")
        if rt.builtin and rt.kind == "Event":
            event_fields.store_times(obj, rt.group_version)
        kind = obj.get("kind")
        if not rt.builtin and isinstance(kind, str) and kind and kind != rt.kind:
            name = str(meta.get("name") or "")
            cause = {
                "reason": "FieldValueInvalid",
                "message": f"Invalid value: {go_quote(kind)}: must be {rt.kind}",
                "field": "kind",
            }
            raise invalid(dataclasses.replace(rt, kind=kind), name, [cause])
        obj["apiVersion"] = rt.group_version
        obj["kind"] = rt.kind
        return obj if rt.builtin else go_numbers(obj)

    def _place_namespace(self, rt: ResourceType, namespace: str, meta: dict[str, Any]) -> None:
        if not rt.namespaced:
            meta.pop("namespace", None)
            return
        body_ns = meta.get("namespace")
        if body_ns and body_ns != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the "
                "request"
            )
        meta["namespace"] = namespace

    def _check_name(self, rt: ResourceType, meta: dict[str, Any]) -> list[dict[str, str]]:
        """The name rules each registry applies (subdomain, label, or RBAC's path segment) to
        the generateName (its trailing dash allowed) and the name, as ObjectMeta validation
        does. The causes are returned for the object's 422, which lists them first."""
        name = meta["name"]
        causes: list[dict[str, str]] = []
        prefix = meta.get("generateName")
        if isinstance(prefix, str) and prefix:
            masked = prefix[:-1] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix
            if message := name_problem(rt, masked):
                causes.append(validation.invalid_cause("metadata.generateName", prefix, message))
        if message := name_problem(rt, name):
            causes.append(validation.invalid_cause("metadata.name", name, message))
        if causes and not rt.builtin and not rt.schema:
            raise invalid(rt, name, [*causes, *metadata_causes(meta)])
        return causes

    def _require_namespace(self, rt: ResourceType, namespace: str, name: str = "") -> None:
        """404 for a missing namespace; 403 (NamespaceLifecycle) for a terminating one."""
        if not rt.namespaced:
            return
        entry = self.store.get(builtin.NAMESPACES.group_resource, "", namespace)
        if entry is None:
            raise namespace_not_found(namespace)
        if entry.obj["metadata"].get("deletionTimestamp"):
            details: dict[str, Any] = {"name": name}
            if rt.group:
                details["group"] = rt.group
            details["kind"] = rt.plural
            details["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise forbidden(
                f'{rt.group_resource} "{name}" is forbidden: unable to create new content in '
                f"namespace {namespace} because it is being terminated",
                details,
            )

    def _validate_custom(
        self,
        rt: ResourceType,
        obj: dict[str, Any],
        field_validation: str,
        old: dict[str, Any] | None = None,
        first: list[dict[str, str]] | None = None,
        subresource: str = "",
    ) -> list[str]:
        """Prune, default and validate a custom resource against its CRD schema; an update
        passes the stored object as `old`, so what it left unchanged is ratcheted. `first`
        are the metadata's causes, reported before the schema's in the same 422. A status
        write validates the status alone (`schema.validate_status`)."""
        if rt.builtin:
            return []
        if not rt.schema:
            if first:
                raise invalid(rt, obj["metadata"].get("name", ""), first)
            return []
        from ascendjob_controller.localcluster import schema as schemas

        meta = obj.pop("metadata")
        try:
            unknown = schemas.prune(rt.schema, obj)
            schemas.apply_defaults(rt.schema, obj)
            if subresource == "status":
                causes = schemas.validate_status(rt.schema, obj, old)
            else:
                causes = schemas.validate(rt.schema, obj, old)
        finally:
            obj["metadata"] = meta
        warnings = _unknown_fields_answer(rt, unknown, field_validation)
        causes = [*(first or ()), *(dict(c) for c in causes)]
        if causes:
            raise invalid(rt, meta.get("name", ""), causes)
        return warnings

    @staticmethod
    def refuse_unknown_in_patch(rt: ResourceType, new: dict[str, Any], shown: str | None) -> None:
        """Under Strict, the patcher's own 422 for a patch that leaves unknown fields, before
        anything is decoded or validated. It quotes `shown` (a strategic patch as Go prints
        it) or the patched object as JSON: in Go's struct order on the real server for a
        built-in kind, which is not modelled (keys are sorted here, as Go writes a map)."""
        if rt.builtin:
            unknown = builtin_fields.prune_unknown(rt.group_version, rt.kind, new, drop=False)
        elif rt.schema:
            from ascendjob_controller.localcluster import schema as schemas

            probe = fastjson.loads(fastjson.dumps(new))  # schema.prune only prunes
            probe.pop("metadata", None)
            unknown = schemas.prune(rt.schema, probe)
        else:
            return
        if unknown:
            raise strict_patch_invalid(shown if shown is not None else go_json(new), unknown)

    @staticmethod
    def prune_builtin(
        rt: ResourceType, obj: dict[str, Any], field_validation: str, only_status: bool = False
    ) -> list[str]:
        """Drop a built-in kind's unknown fields as its Go decoder does (`builtin_fields.py`):
        the Warnings to send, or the Strict 400. `only_status`: the rest of `obj` is the
        stored object, already pruned, so only its status is walked."""
        if not rt.builtin:
            return []
        if only_status:
            unknown = builtin_fields.prune_unknown(
                rt.group_version, rt.kind, {"status": obj.get("status")}
            )
        else:
            unknown = builtin_fields.prune_unknown(rt.group_version, rt.kind, obj)
        return _unknown_fields_answer(rt, unknown, field_validation)

    def _default_builtin(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if rt is builtin.PODS:
            builtin.default_pod(obj)
        elif rt is builtin.SERVICES:
            builtin.default_service(obj, self.allocator)
        elif rt is builtin.NAMESPACES:
            builtin.default_namespace(obj)
        elif rt is builtin.CRDS:
            obj["status"] = _crd_status(obj)

    def _keep_builtin_fields(
        self, rt: ResourceType, old: dict[str, Any], obj: dict[str, Any]
    ) -> None:
        """Fields a main-resource write may not drop (allocated IPs, CRD status) or change."""
        if rt is builtin.PODS:
            if isinstance(obj.get("spec"), dict):
                admission.default_tolerations(obj["spec"])
            if causes := validation.on_update("Pod", old, obj, ""):
                raise invalid(rt, old["metadata"]["name"], causes)
            old_spec, new_spec = old.get("spec") or {}, obj.get("spec")
            if not isinstance(new_spec, dict) or not builtin.pod_spec_change_allowed(
                old_spec, new_spec
            ):
                raise invalid(
                    rt,
                    old["metadata"]["name"],
                    [
                        {
                            "reason": "FieldValueForbidden",
                            "message": builtin.POD_UPDATE_FORBIDDEN,
                            "field": "spec",
                        }
                    ],
                )
            builtin.default_pod_spec(new_spec)
        elif rt is builtin.SERVICES:
            spec = obj.setdefault("spec", {})
            old_spec = old.get("spec") or {}
            for key in ("clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"):
                if key in old_spec and not spec.get(key):
                    spec[key] = old_spec[key]
        elif rt is builtin.CRDS:
            obj["status"] = _crd_status(obj)
            if old.get("status", {}).get("conditions"):
                obj["status"]["conditions"] = old["status"]["conditions"]
        elif rt is builtin.NAMESPACES:
            obj["spec"] = old.get("spec", {})
            obj.setdefault("metadata", {}).setdefault("labels", {})[
                "kubernetes.io/metadata.name"
            ] = old["metadata"]["name"]

    def _after_write(self, rt: ResourceType, obj: dict[str, Any]) -> None:
        if rt is builtin.CRDS:
            self._default_on_read(self.registry.set_crd(obj))
        elif rt is builtin.NAMESPACES:
            # What kube-controller-manager's serviceaccount controller does for every new
            # namespace; done at once here, so pods can be created right away.
            account = {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {
                    "name": "default",
                    "namespace": obj["metadata"]["name"],
                    "uid": str(uuid.uuid4()),
                    "creationTimestamp": now_rfc3339(),
                },
            }
            self.store.write(builtin.SERVICEACCOUNTS.group_resource, account, "ADDED")

    def _default_on_read(self, types: list[ResourceType]) -> None:
        """Stored custom resources get their (new) schema's defaults, as reads from etcd do."""
        from ascendjob_controller.localcluster import schema as schemas

        by_version = {t.group_version: t for t in types if t.schema}
        if not by_version:
            return

        def default(obj: dict[str, Any]) -> bool:
            rt = by_version.get(str(obj.get("apiVersion")))
            if rt is None or rt.schema is None:
                return False
            before = json.dumps(obj, sort_keys=True)
            meta = obj.pop("metadata")
            schemas.apply_defaults(rt.schema, obj)
            obj["metadata"] = meta
            return json.dumps(obj, sort_keys=True) != before

        self.store.refresh(types[0].group_resource, default)

    def _release_ip(self, obj: dict[str, Any]) -> None:
        ip = (obj.get("spec") or {}).get("clusterIP")
        if ip and ip != "None":
            self.allocator.release(ip)

    def _drop_crd(self, crd: dict[str, Any]) -> None:
        """Deleting a CRD deletes its custom resources and stops serving them."""
        spec = crd.get("spec") or {}
        resource = f"{(spec.get('names') or {}).get('plural', '')}.{spec.get('group', '')}"
        for entry in list(self.store.iter_all(resource)):
            meta = entry.obj["metadata"]
            self.store.remove(resource, meta.get("namespace", ""), meta["name"])
        self.registry.remove_crd(crd["metadata"]["name"])


def make_matcher(
    label_selector: str, field_selector: str, rt: ResourceType | None = None
) -> Callable[[dict[str, Any]], bool] | None:
    """A predicate for list/watch, or None when nothing is selected on (the fast path)."""
    if not label_selector and not field_selector:
        return None
    from ascendjob_controller.localcluster.selectors import (
        SelectorError,
        parse_field_selector,
        parse_label_selector,
    )

    try:
        labels = parse_label_selector(label_selector) if label_selector else None
        fields = parse_field_selector(field_selector) if field_selector else None
    except SelectorError as err:
        raise bad_request(str(err)) from err
    if fields is not None and rt is not None:
        allowed = builtin.ALWAYS_SELECTABLE | builtin.SELECTABLE_FIELDS.get(
            rt.group_resource, frozenset()
        )
        for name in fields.fields:
            if name not in allowed:
                if rt.group_resource in builtin.SELECTABLE_FIELDS:  # a kind's own converter
                    raise bad_request(f"field label not supported: {name}")
                raise bad_request(
                    f'"{name}" is not a known field selector: only "metadata.name", '
                    '"metadata.namespace"'
                )

    def match(obj: dict[str, Any]) -> bool:
        if labels is not None and not labels.matches(obj["metadata"].get("labels") or {}):
            return False
        return fields is None or fields.matches(obj)

    return match


def _stored_version(version: Any) -> bool:
    """Whether a create's resourceVersion is one etcd3's store refuses: it parses as a
    non-zero uint64 (`ObjectResourceVersion`); anything else ("abc", "0") is dropped."""
    return (
        isinstance(version, str)
        and _DIGITS.fullmatch(version) is not None
        and 0 < int(version) < 2**64
    )


_DIGITS = re.compile(r"[0-9]+")


def name_problem(rt: ResourceType, name: str) -> str:
    """Why `name` is not a valid name for this kind, or "" when it is (pure)."""
    if rt.group == "rbac.authorization.k8s.io":
        if name in (".", ".."):
            return f"may not be '{name}'"
        for bad in ("/", "%"):
            if bad in name:
                return f"may not contain '{bad}'"
        return ""
    if rt is builtin.SERVICES and "." in name:
        return "must not contain dots"
    if rt in (builtin.NAMESPACES, builtin.SERVICES):
        return validation.dns1123_label_error(name)
    if len(name) > 253:
        return "must be no more than 253 characters"
    if not _SUBDOMAIN_RE.match(name):
        return (
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character (e.g. "
            "'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    return ""

"""DELETE with kube-apiserver's semantics (generic registry Store.Delete and rest.BeforeDelete).

Pure decisions, so the verb in verbs.py only reads, writes and removes:
- `check_options` / `check_preconditions`: 422 for a bad propagationPolicy, 409 for a uid or
  resourceVersion precondition that does not hold (with the real messages);
- `plan`: what the delete does to the object. Pods are deleted gracefully: a pod bound to a
  node gets deletionTimestamp = now + grace period and stays until someone (a kubelet)
  deletes it again with grace 0; an unbound or finished pod is marked and removed at once.
  Other kinds are removed at once unless they have finalizers, in which case they are marked
  deleting. Foreground and Orphan propagation add their finalizers for the garbage collector.
  Setting a deletionTimestamp bumps metadata.generation where the kind keeps one;
- `answer`: what the response body is: the object for pods, services, service accounts and
  namespaces, a `Status` of kind Success naming the object for every other kind.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from ascendjob_controller.localcluster import builtin, fastjson, pods
from ascendjob_controller.localcluster.errors import ApiError, options_invalid
from ascendjob_controller.localcluster.resources import ResourceType
from ascendjob_controller.localcluster.timestamps import now_rfc3339

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"
POLICIES = ("Foreground", "Background", "Orphan")
# Registries with ReturnDeletedObject: a DELETE answers with the object, not a Status.
_RETURNS_OBJECT = frozenset({"pods", "services", "serviceaccounts", "namespaces"})


@dataclass(frozen=True)
class DeleteOptions:
    propagation: str | None = None
    grace_period: int | None = None
    uid: str | None = None
    resource_version: str | None = None
    dry_run: bool = False
    orphan_dependents: bool | None = None  # the deprecated flag; False makes the answer 202


@dataclass
class Plan:
    """What to do: `obj` is the object to write first (None: nothing to write)."""

    obj: dict[str, Any] | None
    remove: bool  # remove the object (after writing `obj`, if any)
    pending: bool = False  # already being deleted at least this fast: answer as-is


def check_options(opts: DeleteOptions) -> None:
    if opts.propagation is not None and opts.propagation not in POLICIES:
        supported = ", ".join(f'"{p}"' for p in (*POLICIES, "nil"))
        message = f'Unsupported value: "{opts.propagation}": supported values: {supported}'
        cause = {"reason": "FieldValueNotSupported", "message": message}
        raise options_invalid("DeleteOptions", {**cause, "field": "propagationPolicy"})


def check_preconditions(rt: ResourceType, meta: dict[str, Any], opts: DeleteOptions) -> None:
    """409 when a precondition names another uid or resourceVersion than the object's."""
    why = ""
    if opts.uid and opts.uid != meta.get("uid"):
        why = (
            f"the UID in the precondition ({opts.uid}) does not match the UID in record "
            f"({meta.get('uid')}). The object might have been deleted and then recreated"
        )
    elif opts.resource_version and opts.resource_version != meta.get("resourceVersion"):
        why = (
            f"the ResourceVersion in the precondition ({opts.resource_version}) does not match "
            f"the ResourceVersion in record ({meta.get('resourceVersion')}). The object might "
            "have been modified"
        )
    if why:
        qualified = f"{rt.kind}.{rt.group}" if rt.group else rt.kind
        details: dict[str, Any] = {"name": meta.get("name", "")}
        if rt.group:
            details["group"] = rt.group
        details["kind"] = rt.kind
        message = f'Operation cannot be fulfilled on {qualified} "{meta.get("name")}": {why}'
        raise ApiError(409, "Conflict", message, details)


def _gc_finalizers(finalizers: list[str], opts: DeleteOptions) -> list[str]:
    """The object's finalizers with the propagation policy's own (deletionFinalizers...)."""
    orphan = ORPHAN in finalizers
    foreground = FOREGROUND in finalizers
    if opts.orphan_dependents is not None:
        orphan, foreground = opts.orphan_dependents, False
    elif opts.propagation is not None:
        orphan, foreground = opts.propagation == "Orphan", opts.propagation == "Foreground"
    out = [f for f in finalizers if f not in (ORPHAN, FOREGROUND)]
    if orphan:
        out.append(ORPHAN)
    if foreground:
        out.append(FOREGROUND)
    return finalizers if set(out) == set(finalizers) else out


def _stamp(meta: dict[str, Any], seconds: int, rt: ResourceType, now: datetime) -> None:
    first = not meta.get("deletionTimestamp")
    meta["deletionTimestamp"] = now_rfc3339(now + timedelta(seconds=seconds))
    meta["deletionGracePeriodSeconds"] = seconds
    if first and builtin.has_generation(rt) and int(meta.get("generation") or 0) > 0:
        meta["generation"] = int(meta["generation"]) + 1


def _regrace(meta: dict[str, Any], requested: int | None, now: datetime) -> bool | None:
    """A graceful delete of a pod already terminating: True (shortened), None (pending)."""
    current = int(meta.get("deletionGracePeriodSeconds") or 0)
    if requested is None or requested >= current:
        return None
    old = _parse(meta["deletionTimestamp"]) - timedelta(seconds=current)
    when = old + timedelta(seconds=requested)
    period = requested
    if when < now:
        when, period = now, (requested if requested == 0 else 1)
    meta["deletionTimestamp"] = now_rfc3339(when)
    meta["deletionGracePeriodSeconds"] = period
    return True


def _parse(stamp: str) -> datetime:
    try:
        return datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return datetime.now(UTC)


def plan(rt: ResourceType, existing: dict[str, Any], opts: DeleteOptions) -> Plan:
    """What DELETE does to `existing` (a private copy is planned on; pure otherwise)."""
    # orjson both ways: the standard library's round trip was a quarter of a pod DELETE.
    obj = fastjson.loads(fastjson.dumps(existing))
    meta = obj["metadata"]
    now = datetime.now(UTC).replace(microsecond=0)
    graceful = False
    if rt is builtin.PODS:
        if meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds"):
            shortened = _regrace(meta, opts.grace_period, now)
            if shortened is None:
                return Plan(None, False, pending=True)
            graceful = True
        elif not meta.get("deletionTimestamp"):
            _stamp(meta, pods.grace_period(obj, opts.grace_period), rt, now)
            graceful = True
    finalizers = list(meta.get("finalizers") or [])
    new_finalizers = _gc_finalizers(finalizers, opts)
    if new_finalizers:
        meta["finalizers"] = new_finalizers
    else:
        meta.pop("finalizers", None)
    if graceful:
        grace = int(meta.get("deletionGracePeriodSeconds") or 0)
        return Plan(obj, remove=not new_finalizers and grace == 0)
    if new_finalizers:
        if not meta.get("deletionTimestamp"):
            _stamp(meta, 0, rt, now)
        return Plan(obj, remove=False)
    return Plan(None, remove=True)


def answer(rt: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    """The body of a DELETE that removed (or would remove) `obj`."""
    if rt.group_resource in _RETURNS_OBJECT:
        return obj
    meta = obj.get("metadata") or {}
    details: dict[str, Any] = {"name": meta.get("name", "")}
    if rt.group:
        details["group"] = rt.group
    details["kind"] = rt.plural
    details["uid"] = meta.get("uid", "")
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    }

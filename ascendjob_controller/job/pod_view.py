"""What the planner reads of a pod, as one comparable value.

A pod update that leaves this value unchanged cannot change any decision of `plan()` or the
rank table, so the controller does not enqueue the job for it (the cache still stores the new
object). Kubelet status writes that only move conditions, timestamps, `ready` flags or
`nodeName` (the binding) are the common case: each used to cost a no-op reconcile.

An update that does change it but is only a live pod's progress (`progress_only`) syncs its
job within `--pod-batch-period` instead of at once (controller.py, `workqueue.add_batched`).

Keep this in step with the readers: `plan.py`, `status.py`, `restart.py` and `ranktable.py`.
`tests/unit/job/test_pod_view.py` checks that a planner fed pods differing only outside this
view decides exactly the same.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Hashable
from typing import Any

import orjson

from ascendjob_controller.job.types import as_dict, dicts


def _container(status: dict[str, Any]) -> tuple[Any, ...]:
    state = as_dict(status.get("state"))
    terminated = as_dict(state.get("terminated"))
    last = as_dict(as_dict(status.get("lastState")).get("terminated"))
    return (
        status.get("name"),
        status.get("restartCount"),
        tuple(sorted(state)),  # waiting / running / terminated
        terminated.get("exitCode"),
        terminated.get("reason"),
        last.get("exitCode"),
        last.get("finishedAt"),
    )


def planner_view(pod: Any) -> dict[str, Any]:
    """Every pod field a decision depends on, as a value compared with `==`.

    Dict equality ignores key order, as the canonical JSON string this used to be did, and
    costs a fraction of encoding both sides on every pod update.
    """
    pod = as_dict(pod)
    meta = as_dict(pod.get("metadata"))
    status = as_dict(pod.get("status"))
    view = {
        "uid": meta.get("uid"),
        "labels": meta.get("labels"),
        "annotations": meta.get("annotations"),
        "owners": meta.get("ownerReferences"),
        "deleting": meta.get("deletionTimestamp"),
        "phase": status.get("phase"),
        "reason": status.get("reason"),
        "podIP": status.get("podIP"),
        "hostIP": status.get("hostIP"),
        "containers": [_container(c) for c in dicts(status.get("containerStatuses"))],
    }
    return view


#: Phases of a pod still on its way: the kubelet's progress through them can wait for a sync.
_LIVE_PHASES = frozenset({None, "Pending", "Running"})
#: The planner view's keys an update must leave alone to be mere progress.
_IDENTITY = ("uid", "labels", "owners", "reason")


def progress_only(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """True when a pod update, given as two `planner_view`s, is a live pod making progress.

    That is the kubelet's way up: bound, given its devices (the annotation), an IP, containers
    waiting then running, phase Pending then Running. Such an update can move the job's
    counts, its Running state and its rank table, never call for a create, a delete or a
    restart, so its sync may be batched (`workqueue.add_batched`), as the Kubernetes Job
    controller batches every pod event. Anything else is synced at once:
    - a pod deleting, or its owner, labels, identity or reason changing;
    - a phase outside Pending and Running (Succeeded, Failed, Unknown), or leaving one;
    - a container terminated, restarted, or with a new last termination.
    A failed pod's replacement therefore waits for no batch.
    """
    if old["deleting"] is not None or new["deleting"] is not None:
        return False
    if any(old[key] != new[key] for key in _IDENTITY):
        return False
    if old["phase"] not in _LIVE_PHASES or new["phase"] not in _LIVE_PHASES:
        return False
    before = {container[0]: container for container in old["containers"]}
    for name, restarts, states, _, _, last_exit, last_finished in new["containers"]:
        if "terminated" in states:
            return False
        was = before.get(name)
        history = (restarts or 0, last_exit, last_finished)
        if history != ((was[1] or 0, was[5], was[6]) if was is not None else (0, None, None)):
            return False
    return True


# --- the cache transform --------------------------------------------------------------------
_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_NPU_PREFIX = "huawei.com/"
_TERMINATED_KEPT = ("exitCode", "reason", "finishedAt")
_SHARED_LIMIT = 4096


class _Shared:
    """One object for every value-equal part of the cached pods (the spec's containers, the
    container statuses, annotations, owner references): 50,000 pods of a few templates
    otherwise hold 50,000 copies of each. Cached objects are never mutated (informer.py), so
    sharing is safe. The table is bounded: when full it is emptied, and pods compacted later
    share new copies (pods arrive sorted by name, so a job's pods still share theirs).
    Thread-safe under the GIL: a lost race only builds one more copy.
    """

    def __init__(self, limit: int = _SHARED_LIMIT) -> None:
        self._table: dict[Hashable, Any] = {}
        self._limit = limit

    def get(self, key: Hashable, value: Any) -> Any:
        found = self._table.get(key)
        if found is not None:
            return found
        if len(self._table) >= self._limit:
            self._table.clear()
        return self._table.setdefault(key, value)


_shared = _Shared()


def _intern(value: Any) -> Any:
    """Strings repeated across pods (keys, label values, phases, node names) stored once."""
    return sys.intern(value) if type(value) is str else value


def _strings(mapping: Any, drop: str = "") -> dict[str, Any]:
    """A string map (labels, annotations, NPU quantities) with its keys and values interned."""
    items = as_dict(mapping).items()
    return {sys.intern(k): _intern(v) for k, v in items if type(k) is str and k != drop}


def _hashable(value: Any) -> Hashable:
    """A key for `_Shared`: the value's compact JSON bytes, one C call (building nested tuples
    was a third of `compact_pod`'s time). Equal bytes mean equal JSON values but for `null`,
    which orjson also writes for NaN, and what orjson refuses (integers beyond 64 bits, keys
    that are not strings): those take the exact nested-tuple key."""
    try:
        key = orjson.dumps(value)
    except (TypeError, orjson.JSONEncodeError):
        return _nested_key(value)
    return _nested_key(value) if b"null" in key else key


def _nested_key(value: Any) -> Hashable:
    """Dicts and lists as nested tuples, scalars with their type (JSON values only)."""
    if isinstance(value, dict):
        return tuple((k, _nested_key(v)) for k, v in value.items())
    if isinstance(value, list):
        return ("[]", *(_nested_key(v) for v in value))
    return (type(value).__name__, value)


def _share(value: Any) -> Any:
    return _shared.get(_hashable(value), value)


def _compact_container(container: dict[str, Any]) -> dict[str, Any]:
    """A container as the planner reads it: its name and its NPU requests and limits."""
    kept: dict[str, Any] = {"name": _intern(container.get("name"))}
    resources = as_dict(container.get("resources"))
    for section in ("requests", "limits"):
        npus = {
            k: v for k, v in _strings(resources.get(section)).items() if k.startswith(_NPU_PREFIX)
        }
        if npus:
            kept.setdefault("resources", {})[section] = npus
    return kept


def _compact_state(state: Any) -> dict[str, Any]:
    """A container state as read: which of waiting/running/terminated, and of terminated the
    exit code, reason and finish time (`planner_view`, restart counting, the exit events)."""
    kept: dict[str, Any] = {}
    for kind, detail in as_dict(state).items():
        if kind == "terminated":
            detail = as_dict(detail)
            kept["terminated"] = {k: _intern(detail[k]) for k in _TERMINATED_KEPT if k in detail}
        else:
            kept[sys.intern(kind)] = {}  # waiting / running: only the kind is read
    return kept


def _compact_container_status(status: dict[str, Any]) -> dict[str, Any]:
    kept: dict[str, Any] = {"name": _intern(status.get("name"))}
    if "restartCount" in status:
        kept["restartCount"] = status["restartCount"]
    if "state" in status:
        kept["state"] = _compact_state(status["state"])
    last = _compact_state(status.get("lastState"))
    if last:
        kept["lastState"] = last
    return kept


def _compact_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """Identity, resourceVersion, labels, annotations, owners and the deletion mark."""
    kept: dict[str, Any] = {
        k: meta[k] for k in ("name", "uid", "resourceVersion", "deletionTimestamp") if k in meta
    }
    if "namespace" in meta:
        kept["namespace"] = _intern(meta["namespace"])
    if "labels" in meta:
        kept["labels"] = _strings(meta["labels"])
    if "annotations" in meta:
        kept["annotations"] = _share(_strings(meta["annotations"], drop=_LAST_APPLIED))
    if "ownerReferences" in meta:
        owners = [
            {sys.intern(k): _intern(v) for k, v in ref.items()}
            for ref in dicts(meta["ownerReferences"])
        ]
        kept["ownerReferences"] = _share(owners)
    return kept


def compact_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the controller caches it (the pod informer's transform, like client-go's
    SetTransform): only what `plan()`, the rank table, adoption and the event handlers read,
    with repeated strings interned and value-equal parts shared between pods.

    A Running pod of the sample template shrinks from ~29 KB of decoded JSON to about 1.5 KB.
    The tests beside `planner_view` check that a planner fed compact pods decides exactly as
    one fed the full ones. Shared parts make the result read-only, as every cached object is.
    """
    if not isinstance(pod, dict):
        return pod
    spec = as_dict(pod.get("spec"))
    compact_spec: dict[str, Any] = {
        "containers": _share([_compact_container(c) for c in dicts(spec.get("containers"))])
    }
    if "nodeName" in spec:
        compact_spec["nodeName"] = _intern(spec["nodeName"])
    status = as_dict(pod.get("status"))
    compact_status: dict[str, Any] = {
        k: _intern(status[k]) for k in ("phase", "reason", "hostIP") if k in status
    }
    if "podIP" in status:
        compact_status["podIP"] = status["podIP"]
    if "containerStatuses" in status:
        compact_status["containerStatuses"] = _share(
            [_compact_container_status(c) for c in dicts(status["containerStatuses"])]
        )
    compact: dict[str, Any] = {
        "metadata": _compact_meta(as_dict(pod.get("metadata"))),
        "spec": compact_spec,
        "status": compact_status,
    }
    for key in ("apiVersion", "kind"):
        if key in pod:
            compact[key] = _intern(pod[key])
    return compact


# --- decoding a LIST page of pods: only what compact_pod reads ---------------------------------
# A pod as the API server sends it is ~10 KB of JSON, half of it managedFields; decoding builds
# every one of its objects (a few hundred small dicts) only for compact_pod to drop them, and
# that is most of an initial list's time. msgspec, given the shape below, skips every other
# field while scanning, without building it. Every field compact_pod reads is declared (as
# Any where it keeps the value as sent), so compact_pod gives the same result on the decoded
# pod as on the full one; anything that does not fit the shape (a malformed object) makes the
# page fall back to json.loads. Without msgspec installed, pages are decoded by json.loads.
try:
    import msgspec
except ImportError:  # optional: the full decode gives the same cache, only slower
    msgspec = None  # type: ignore[assignment]

_TOLERANT = {"omit_defaults": True, "forbid_unknown_fields": False}
_pod_list_decoder: Any = None
if msgspec is not None:
    _Unset = msgspec.UnsetType
    UNSET = msgspec.UNSET

    class _Meta(msgspec.Struct, **_TOLERANT):
        name: Any = UNSET
        namespace: Any = UNSET
        uid: Any = UNSET
        resourceVersion: Any = UNSET
        labels: Any = UNSET
        annotations: Any = UNSET
        ownerReferences: Any = UNSET
        deletionTimestamp: Any = UNSET

    class _Resources(msgspec.Struct, **_TOLERANT):
        requests: Any = UNSET
        limits: Any = UNSET

    class _Container(msgspec.Struct, **_TOLERANT):
        name: Any = UNSET
        resources: _Resources | _Unset = UNSET

    class _Spec(msgspec.Struct, **_TOLERANT):
        containers: list[_Container] | _Unset = UNSET
        nodeName: Any = UNSET

    class _ContainerStatus(msgspec.Struct, **_TOLERANT):
        name: Any = UNSET
        restartCount: Any = UNSET
        state: Any = UNSET
        lastState: Any = UNSET

    class _Status(msgspec.Struct, **_TOLERANT):
        phase: Any = UNSET
        reason: Any = UNSET
        podIP: Any = UNSET
        hostIP: Any = UNSET
        containerStatuses: list[_ContainerStatus] | _Unset = UNSET

    class _Pod(msgspec.Struct, **_TOLERANT):
        apiVersion: Any = UNSET
        kind: Any = UNSET
        metadata: _Meta | _Unset = UNSET
        spec: _Spec | _Unset = UNSET
        status: _Status | _Unset = UNSET

    class _PodList(msgspec.Struct, **_TOLERANT):
        apiVersion: Any = UNSET
        kind: Any = UNSET
        metadata: Any = UNSET
        items: list[_Pod] | _Unset = UNSET

    _pod_list_decoder = msgspec.json.Decoder(_PodList)

    class _EventHead(msgspec.Struct, **_TOLERANT):
        type: Any = UNSET
        object: msgspec.Raw = msgspec.Raw()

    _event_head_decoder = msgspec.json.Decoder(_EventHead)
    _pod_decoder = msgspec.json.Decoder(_Pod)

#: The watch events whose object is a pod; ERROR carries a Status, BOOKMARK a stub.
_POD_EVENTS = frozenset(("ADDED", "MODIFIED", "DELETED"))


def decode_pod_list(data: bytes) -> dict[str, Any]:
    """A PodList page's body decoded with only what `compact_pod` reads of each pod (the pod
    informer's list decoder); the list's own metadata (resourceVersion, continue) in full."""
    if _pod_list_decoder is not None:
        try:
            page = _pod_list_decoder.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            pass  # not the shape we expect: decode it all, compact_pod is total
        else:
            decoded: dict[str, Any] = msgspec.to_builtins(page)
            return decoded
    loaded: dict[str, Any] = json.loads(data)
    return loaded


def decode_pod_event(line: bytes) -> dict[str, Any]:
    """One watch event line of the pod informer, its pod decoded as `decode_pod_list` decodes
    a page's (only what `compact_pod` reads: a whole pod's decode was most of the
    controller's JSON time); any other event (ERROR, BOOKMARK) or shape decoded whole."""
    if msgspec is not None:
        try:
            head = _event_head_decoder.decode(line)
            if isinstance(head.type, str) and head.type in _POD_EVENTS:
                pod = msgspec.to_builtins(_pod_decoder.decode(head.object))
                return {"type": head.type, "object": pod}
        except (msgspec.ValidationError, msgspec.DecodeError):
            pass
    loaded: dict[str, Any] = json.loads(line)
    return loaded

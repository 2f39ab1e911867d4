"""What the planner reads of a pod, as one comparable value.

A pod update that leaves this value unchanged cannot change any decision of `plan()` or the
rank table, so the controller does not enqueue the job for it (the cache still stores the new
object). Kubelet status writes that only move conditions, timestamps, `ready` flags or
`nodeName` (the binding) are the common case: each used to cost a no-op reconcile.

Keep this in step with the readers: `plan.py`, `status.py`, `restart.py` and `ranktable.py`.
`tests/unit/job/test_pod_view.py` checks that a planner fed pods differing only outside this
view decides exactly the same.
"""

from __future__ import annotations

import json
from typing import Any

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


def planner_view(pod: Any) -> str:
    """A canonical string of every pod field a decision depends on."""
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
    return json.dumps(view, sort_keys=True, default=str)


_META_KEPT = (
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "labels",
    "annotations",
    "ownerReferences",
    "deletionTimestamp",
    "creationTimestamp",
)
_STATUS_KEPT = ("phase", "reason", "podIP", "hostIP")
_CONTAINER_STATUS_KEPT = ("name", "restartCount", "state", "lastState")
_NPU_PREFIX = "huawei.com/"


def _compact_container(container: dict[str, Any]) -> dict[str, Any]:
    """A container as the planner reads it: its name and its NPU requests and limits."""
    kept: dict[str, Any] = {"name": container.get("name")}
    resources = as_dict(container.get("resources"))
    for section in ("requests", "limits"):
        npus = {
            k: v for k, v in as_dict(resources.get(section)).items() if k.startswith(_NPU_PREFIX)
        }
        if npus:
            kept.setdefault("resources", {})[section] = npus
    return kept


def compact_pod(pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the controller caches it (the pod informer's transform, like client-go's
    SetTransform): only what `plan()`, the rank table, adoption and the event handlers read.

    A Running pod of the sample template shrinks from ~20 KiB of decoded JSON to well under
    2 KiB. The test beside `planner_view` checks that a planner fed compact pods decides
    exactly as one fed the full ones.
    """
    if not isinstance(pod, dict):
        return pod
    meta = as_dict(pod.get("metadata"))
    annotations = as_dict(meta.get("annotations"))
    compact_meta = {k: meta[k] for k in _META_KEPT if k in meta}
    if "kubectl.kubernetes.io/last-applied-configuration" in annotations:
        compact_meta["annotations"] = {
            k: v
            for k, v in annotations.items()
            if k != "kubectl.kubernetes.io/last-applied-configuration"
        }
    spec = as_dict(pod.get("spec"))
    compact_spec: dict[str, Any] = {
        "containers": [_compact_container(c) for c in dicts(spec.get("containers"))]
    }
    if "nodeName" in spec:
        compact_spec["nodeName"] = spec["nodeName"]
    status = as_dict(pod.get("status"))
    compact_status = {k: status[k] for k in _STATUS_KEPT if k in status}
    if "containerStatuses" in status:
        compact_status["containerStatuses"] = [
            {k: c[k] for k in _CONTAINER_STATUS_KEPT if k in c}
            for c in dicts(status.get("containerStatuses"))
        ]
    compact: dict[str, Any] = {
        "metadata": compact_meta,
        "spec": compact_spec,
        "status": compact_status,
    }
    for key in ("apiVersion", "kind"):
        if key in pod:
            compact[key] = pod[key]
    return compact

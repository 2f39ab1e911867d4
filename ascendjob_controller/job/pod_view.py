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

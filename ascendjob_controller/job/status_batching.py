"""When a status write that only moves replica counts may wait: a pure rule.

Most pod updates of a running job change nothing but `replicaStatuses` counts (a Master's
`active 1 -> succeeded 1` while its Worker still runs), and the next update often follows
within milliseconds (the Worker finishing too). Writing each one costs a request and a watch
event to every watcher of AscendJobs. The Kubernetes Job controller batches the same way: it
syncs a job at most once per `syncJobBatchPeriod` (1 s) for pod updates.

The rule: a plan whose status changes only counts holds that write back for `period` seconds
from the moment such a write was first held; then the write goes out. What must be stored
before or with its action is written at once and carries the held counts along: a state or
condition change, a restart counted (and the delete that waits for it), an Event (announced
only once its status is stored), the job's own deletion. Counts are at most `period` seconds
stale.

Creates, deletes, adoptions and PodGroup patches read nothing of the status, so they no longer
push held counts out. A failed pod's replacement did: its reconcile wrote `failed: 1 -> 0` right
after the create, and on the local cluster that write competed with the create's watch events
(hack/bench_latency.py; docs/benchmarks.md, "Fifth round").

Why from the first hold and not from our last write: with many jobs at once, a job's pod
updates come seconds apart, so "within a second of the last write" was rarely true, while the
transition that follows a counts change (Running once every pod runs) usually comes within one.
"""

from __future__ import annotations

from typing import Any

from .plan import Plan
from .restart import STATUS_CONTAINER_COUNTS, STATUS_RECREATED
from .types import as_dict

#: The status fields a counts-only write may change (lastReconcileTime moves with every write).
COUNT_FIELDS = frozenset({"replicaStatuses", "lastReconcileTime"})
#: The restart ledger's bookkeeping (job/restart.py), which a counts-only write may prune: an
#: entry for a pod that is gone guards nothing (a uid never comes back), so dropping it can
#: wait. Adding one is a restart counted, never held.
PRUNABLE_FIELDS = frozenset({STATUS_RECREATED, STATUS_CONTAINER_COUNTS})


def only_counts_change(old: Any, new: dict[str, Any] | None) -> bool:
    """True when the whole status `new` differs from `old` in COUNT_FIELDS alone, or by
    entries pruned from PRUNABLE_FIELDS."""
    if new is None:
        return False
    before = as_dict(old)
    for key in (set(before) | set(new)) - COUNT_FIELDS:
        was, now = before.get(key), new.get(key)
        if was == now or (key in PRUNABLE_FIELDS and _pruned(was, now)):
            continue
        return False
    return True


def _pruned(was: Any, now: Any) -> bool:
    """`now` is `was` less some entries (or gone): a list of fewer items, a smaller map."""
    if isinstance(was, list) and (now is None or isinstance(now, list)):
        return all(item in was for item in now or [])
    if isinstance(was, dict) and (now is None or isinstance(now, dict)):
        return all(k in was and was[k] == v for k, v in (now or {}).items())
    return False


def _acts_otherwise(plan: Plan) -> bool:
    """Whether the plan does something that needs its status stored first (or with it)."""
    return bool(
        plan.deletes_after_status
        or plan.events
        or plan.delete_job
        or plan.restarted
        or plan.state != plan.previous_state
    )


def hold_status_for(
    plan: Plan, old_status: Any, held_for: float | None, period: float
) -> float | None:
    """Seconds to hold this plan's status write back, or None to write it now.

    `held_for` is how long a counts-only write of this job has been held already (None when
    none is: this one would be the first).
    """
    if period <= 0 or plan.status is None or _acts_otherwise(plan):
        return None
    if not only_counts_change(old_status, plan.status):
        return None
    if held_for is None:
        return period
    return None if held_for >= period else period - held_for


__all__ = ["COUNT_FIELDS", "PRUNABLE_FIELDS", "hold_status_for", "only_counts_change"]

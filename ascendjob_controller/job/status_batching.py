"""When a status write that only moves replica counts may wait: a pure rule.

Most pod updates of a running job change nothing but `replicaStatuses` counts (a Master's
`active 1 -> succeeded 1` while its Worker still runs), and the next update often follows
within milliseconds (the Worker finishing too). Writing each one costs a request and a watch
event to every watcher of AscendJobs. The Kubernetes Job controller batches the same way: it
syncs a job at most once per `syncJobBatchPeriod` (1 s) for pod updates.

The rule: a plan whose only effect is new counts holds its write back for `period` seconds
from the moment such a write was first held; then the write goes out. Anything else is written
at once and carries the held counts along: a state or condition change, a restart counted, a
create, delete, adoption, Event or PodGroup patch. Counts are at most `period` seconds stale.

Why from the first hold and not from our last write: with many jobs at once, a job's pod
updates come seconds apart, so "within a second of the last write" was rarely true, while the
transition that follows a counts change (Running once every pod runs) usually comes within one.
"""

from __future__ import annotations

from typing import Any

from .plan import Plan
from .types import as_dict

#: The status fields a counts-only write may change (lastReconcileTime moves with every write).
COUNT_FIELDS = frozenset({"replicaStatuses", "lastReconcileTime"})


def only_counts_change(old: Any, new: dict[str, Any] | None) -> bool:
    """True when the whole status `new` differs from `old` in COUNT_FIELDS alone."""
    if new is None:
        return False
    before = as_dict(old)
    keys = set(before) | set(new)
    return all(before.get(k) == new.get(k) for k in keys - COUNT_FIELDS)


def _acts_otherwise(plan: Plan) -> bool:
    return bool(
        plan.creates
        or plan.deletes
        or plan.force_deletes
        or plan.deletes_after_status
        or plan.adopts
        or plan.events
        or plan.podgroup_patch is not None
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


__all__ = ["COUNT_FIELDS", "hold_status_for", "only_counts_change"]

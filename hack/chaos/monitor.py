"""An exact observer of the run: every pod, job and lease write of the chaos namespace, in order.

On the local backend the monitor is a `Store` listener (`__call__`): the store calls it under
its lock for every write, in revision order, before any watcher hears of it, so nothing is
missed and nothing is faulted. A watch from this process would instead be cut, expired and
failed by the very faults under test, and a relist after a 410 hides whatever happened in
between (a duplicate pod that came and went). On the real backend, which has no such hook,
backends.py feeds `observe()` from three direct watches of kube-apiserver (no fault proxy on
their path), each resuming from its last resourceVersion; a relist there means events were
missed, and `gap()` records it as a failure of the run, never a silent pass.

Each watch delivers its own resource in order, but the three are not ordered against each
other. The one check that spans two resources (no pod created for a finished job) therefore
compares resourceVersions instead of arrival order: on both backends they are the store's
(etcd's) global revision numbers. Every other check reads one resource only.

What counts as a live pod: every pod object from its creation until it is removed from storage.
A pod with a deletionTimestamp still counts (its containers may still run until the kubelet
confirms), and so does a Succeeded or Failed one (it is still the job's pod). That is the
strictest reading of "never two pods for one replica index": if it holds, every looser one
(only Running pods, only pods not being deleted) holds too.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ascendjob_controller.job.types import LABEL_JOB_NAME, LABEL_REPLICA_INDEX, LABEL_REPLICA_TYPE
from hack.chaos.jobs import NAMESPACE

PODS = "pods"
JOBS = "ascendjobs.mindxdl.gitee.com"
LEASES = "leases.coordination.k8s.io"
TERMINAL = ("Succeeded", "Failed")
IndexKey = tuple[str, str, str]  # (job, replica type, replica index)


@dataclass
class JobTrace:
    """What the monitor saw of one job."""

    created_at: float = 0.0
    state: str | None = None
    reason: str | None = None
    restart_count: int = 0
    terminal_at: float | None = None
    first_pod_at: float | None = None
    pods_created: int = 0
    max_live: int = 0
    terminal_rv: int | None = None  # revision of the write that first made the job finished
    last_pod_rv: int = 0  # revision of its newest pod's creation


@dataclass
class Monitor:
    """Per job and replica index live pods, job states, and lease holders, as they happen."""

    lease_name: str
    replicas: dict[str, int] = field(default_factory=dict)  # job -> allowed pods at once
    jobs: dict[str, JobTrace] = field(default_factory=dict)
    violations: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    holders: list[tuple[float, str]] = field(default_factory=list)  # (when, new holder)
    _live: dict[IndexKey, set[str]] = field(default_factory=dict)
    _live_by_job: dict[str, set[str]] = field(default_factory=dict)
    _pod_key: dict[str, IndexKey] = field(default_factory=dict)  # uid -> index key
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _done: threading.Condition = field(init=False)
    _terminal: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self._done = threading.Condition(self._lock)

    # --- the listener ---------------------------------------------------------------------
    def __call__(self, event: Any) -> None:
        """Store listener (local backend): every write of the store, in revision order."""
        self.observe(event.resource, event.type, event.entry.obj, event.rv, event.namespace)

    def observe(
        self, resource: str, kind: str, obj: dict[str, Any], rv: int, namespace: str = NAMESPACE
    ) -> None:
        """One write (ADDED, MODIFIED, DELETED) of `resource` at revision `rv`; each resource's
        writes must come in order. Records, never raises: on the local backend this runs on
        the writer's thread."""
        try:
            if namespace != NAMESPACE:
                return
            if resource == PODS:
                self._on_pod(kind, obj, rv)
            elif resource == JOBS:
                self._on_job(kind, obj, rv)
            elif resource == LEASES:
                self._on_lease(obj)
        except Exception as err:  # the writer's thread must not see it
            self.errors.append(f"monitor: {err!r}")

    def gap(self, what: str) -> None:
        """Some writes were not seen (a watch had to relist): the run cannot be judged exact."""
        with self._lock:
            self.errors.append(f"monitor gap: {what}")

    def _on_pod(self, kind: str, pod: dict[str, Any], rv: int) -> None:
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        with self._lock:
            if kind == "ADDED":
                self._pod_added(uid, meta, rv)
            elif kind == "DELETED":
                self._pod_removed(uid)

    def _pod_added(self, uid: str, meta: dict[str, Any], rv: int) -> None:
        labels = meta.get("labels") or {}
        job = str(labels.get(LABEL_JOB_NAME) or "")
        key = (job, str(labels.get(LABEL_REPLICA_TYPE)), str(labels.get(LABEL_REPLICA_INDEX)))
        trace = self.jobs.setdefault(job, JobTrace())
        now = time.monotonic()
        trace.pods_created += 1
        if trace.first_pod_at is None:
            trace.first_pod_at = now
        trace.last_pod_rv = max(trace.last_pod_rv, rv)
        if trace.terminal_rv is not None and rv > trace.terminal_rv:
            self.violations.append(f"{job}: pod {meta.get('name')} created after {trace.state}")
        self._pod_key[uid] = key
        same_index = self._live.setdefault(key, set())
        same_index.add(uid)
        if len(same_index) > 1:
            self.violations.append(
                f"{job}: {len(same_index)} live pods for {key[1]} index {key[2]} "
                f"(pod {meta.get('name')} created while another existed)"
            )
        of_job = self._live_by_job.setdefault(job, set())
        of_job.add(uid)
        trace.max_live = max(trace.max_live, len(of_job))
        allowed = self.replicas.get(job)
        if allowed is not None and len(of_job) > allowed:
            self.violations.append(f"{job}: {len(of_job)} live pods, {allowed} replicas")

    def _pod_removed(self, uid: str) -> None:
        key = self._pod_key.pop(uid, None)
        if key is None:
            return
        self._live.get(key, set()).discard(uid)
        self._live_by_job.get(key[0], set()).discard(uid)

    def _on_job(self, kind: str, job: dict[str, Any], rv: int) -> None:
        name = str((job.get("metadata") or {}).get("name") or "")
        status = job.get("status") or {}
        conditions = status.get("conditions") or []
        last = conditions[-1] if conditions else {}
        with self._lock:
            trace = self.jobs.setdefault(name, JobTrace())
            if kind == "ADDED":
                trace.created_at = time.monotonic()
            self._job_status(name, trace, last, status.get("restartCount"), rv)

    def _job_status(
        self, name: str, trace: JobTrace, last: dict[str, Any], restarts: Any, rv: int
    ) -> None:
        """Note the new state; a finished job that changes, or a count that drops, is wrong."""
        state, reason = last.get("type"), last.get("reason")
        count = restarts if isinstance(restarts, int) else 0
        if trace.state in TERMINAL and (state, reason) != (trace.state, trace.reason):
            self.violations.append(f"{name}: {trace.state} changed to {state} ({reason})")
        if count < trace.restart_count:
            self.violations.append(f"{name}: restartCount fell {trace.restart_count} -> {count}")
        trace.state, trace.reason, trace.restart_count = state, reason, count
        if state in TERMINAL and trace.terminal_at is None:
            trace.terminal_at = time.monotonic()
            trace.terminal_rv = rv
            if trace.last_pod_rv > rv:  # its pod watch ran ahead of the job watch
                self.violations.append(f"{name}: a pod was created after it was {state}")
            self._terminal[name] += 1
            self._done.notify_all()

    def _on_lease(self, lease: dict[str, Any]) -> None:
        if (lease.get("metadata") or {}).get("name") != self.lease_name:
            return
        holder = str((lease.get("spec") or {}).get("holderIdentity") or "")
        with self._lock:
            if not self.holders or self.holders[-1][1] != holder:
                self.holders.append((time.monotonic(), holder))

    # --- queries (driver thread) ------------------------------------------------------------
    def expect(self, job: str, replicas: int) -> None:
        """Register a job before it is created, so its pods are checked against `replicas`."""
        with self._lock:
            self.replicas[job] = replicas

    def holder(self) -> str:
        with self._lock:
            return self.holders[-1][1] if self.holders else ""

    def holder_change_after(self, since: float, old: str) -> float | None:
        """When the lease first named a holder other than `old` (and not empty) after `since`."""
        with self._lock:
            for when, holder in self.holders:
                if when >= since and holder and holder != old:
                    return when
        return None

    def terminal_count(self) -> int:
        with self._lock:
            return len(self._terminal)

    def wait_terminal(self, count: int, timeout: float) -> bool:
        """Wait until `count` jobs have reached a terminal state at least once."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while len(self._terminal) < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._done.wait(min(left, 1.0))
            return True

    def first_pod_at(self, job: str) -> float | None:
        with self._lock:
            trace = self.jobs.get(job)
            return trace.first_pod_at if trace else None

    def live_pods(self, job: str) -> int:
        with self._lock:
            return len(self._live_by_job.get(job, ()))

    def snapshot(self) -> dict[str, JobTrace]:
        """A copy of the traces, for the checks at the end."""
        with self._lock:
            return {name: JobTrace(**vars(trace)) for name, trace in self.jobs.items()}

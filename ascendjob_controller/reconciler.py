"""Executes the AscendJob plan: read the caches, call `job.plan.plan`, carry out what it says.

Every decision lives in the pure `job/` package; this module only does I/O, in this order:
adoptions, creates (Service and PodGroup come first in the plan), deletes, the status write,
the deletes of failed pods whose restart that status records (only once it is stored), the
job's events (likewise, so a 409 and re-plan announce a transition once), and finally a TTL
deletion of the job itself. When an answer shows what the caches will show only a watch
event later (a created Service's ClusterIP, a pod its delete removed at once), the job is
planned again in the same reconcile (`_follow_up`): a failed pod's replacement is created
one status write, one delete and one create after the failure is seen. Reads come from the
informer caches only; the one read from the API server is none at all in steady state.

Expectations guard against a stale cache: before a create or delete we record the child we
expect to see, the pod/service informers mark it observed, and until every expectation of a
job is met (or has expired) the job is not re-planned, so a lagging cache can never make us
create the same pod twice. Deterministic child names are the second guard: a create of an
existing name gets 409 AlreadyExists rather than a duplicate.

A create the API server refuses as invalid (422) or cannot decode (400) cannot succeed on a
retry: it is remembered (`refusals.py`) and the retry's plan fails the job with the server's
message.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import structlog

from ascendjob_controller import metrics
from ascendjob_controller.job import plan as planning
from ascendjob_controller.job import ranktable
from ascendjob_controller.job.child_events import (
    CREATE,
    DELETE,
    FORCE_DELETE,
    ChildAction,
    child_events,
)
from ascendjob_controller.job.desired import owner_reference
from ascendjob_controller.job.ranktable_targets import RankTableTargets, targets_of
from ascendjob_controller.job.status_batching import hold_status_for
from ascendjob_controller.job.types import (
    CREATED,
    FAILED,
    FRAMEWORK_LABEL,
    JOB_NAME_LABEL,
    RESTARTING,
    RUNNING,
    SUCCEEDED,
    TERMINAL_STATES,
    as_dict,
    controller_ref,
    parse_job,
    parse_time,
)
from ascendjob_controller.job.validation import Problem
from ascendjob_controller.kube.bounded import map_bounded
from ascendjob_controller.kube.client import (
    ASCENDJOBS,
    PODGROUPS,
    PODS,
    SERVICES,
    KubeClient,
    Resource,
    is_already_exists,
    is_bad_request,
    is_conflict,
    is_invalid,
    is_not_found,
)
from ascendjob_controller.kube.events import EventRecorder
from ascendjob_controller.kube.expectations import Expectations
from ascendjob_controller.kube.informer import Informer, index_by_label, object_key
from ascendjob_controller.kube.mergepatch import merge_patch
from ascendjob_controller.kube.runner import Result
from ascendjob_controller.logging import bind_job
from ascendjob_controller.ranktable_writer import RankTableWriter, TooLarge
from ascendjob_controller.refusals import Refusals, refusal

log = structlog.get_logger("ascendjob_controller.reconciler")

ALL_STATES = (CREATED, RUNNING, RESTARTING, SUCCEEDED, FAILED)

JOB_INDEX = "job"  # pods/services indexed by "<namespace>/<job-name label>"
#: One function object for every informer: a store refuses a different indexer under a name.
index_by_job = index_by_label(JOB_NAME_LABEL)

_RESOURCE_BY_KIND: dict[str, Resource] = {"Pod": PODS, "Service": SERVICES, "PodGroup": PODGROUPS}

#: While the cache still shows the job we wrote a status over, look again this soon (a
#: backstop: the watch event of our own write normally enqueues the key well before).
STALE_JOB_RECHECK_SECONDS = 1.0
#: Create requests of one reconcile in flight at once, at most (and the create pool's size).
MAX_PARALLEL_CREATES = 16
#: After this long, plan from the cache anyway: a 409 and a re-plan is the worst outcome.
STALE_JOB_GIVE_UP_SECONDS = 30.0
#: Plans after the first in one reconcile, at most: one with the Service a create returned,
#: one without the pods a delete removed (see `_follow_up`).
MAX_FOLLOW_UP_PLANS = 2


@dataclass
class _Outcome:
    """What one reconcile did, across its (at most two) plans."""

    failures: list[str] = field(default_factory=list)
    services: list[dict[str, Any]] = field(default_factory=list)  # created by the last plan
    #: uids of pods the last plan deleted and the server removed at once (no grace period).
    removed_pods: list[str] = field(default_factory=list)
    job: dict[str, Any] | None = None  # the job as our status write returned it
    #: The children the last plan created or deleted, announced together when it is done.
    actions: list[ChildAction] = field(default_factory=list)
    #: The reconcile's Events, handed to the recorder once it has made all its requests.
    events: list[tuple[dict[str, Any], planning.EventSpec]] = field(default_factory=list)
    #: Creates the API server refused as invalid (422) or undecodable (400): the next plan
    #: fails the job.
    refused: list[Problem] = field(default_factory=list)
    creates: int = 0
    deletes: int = 0
    status_written: bool = False
    acted: bool = False

    def note(self, plan: planning.Plan) -> None:
        self.creates += len(plan.creates)
        self.deletes += len(plan.deletes) + len(plan.force_deletes)
        self.deletes += len(plan.deletes_after_status)
        self.status_written = self.status_written or plan.status is not None
        self.acted = self.acted or bool(
            plan.creates
            or plan.deletes
            or plan.force_deletes
            or plan.deletes_after_status
            or plan.adopts
            or plan.status is not None
            or plan.podgroup_patch is not None
        )


class ReconcileError(Exception):
    """Some writes of a reconcile failed; the key is retried with back-off."""


def owning_job_key(obj: dict[str, Any]) -> str | None:
    """The job key of a child: its AscendJob controller, else (orphans) its job-name label.

    Total: a child with malformed metadata maps to no job rather than raising in a handler.
    """
    meta = as_dict(obj.get("metadata")) if isinstance(obj, dict) else {}
    namespace = meta.get("namespace")
    if not isinstance(namespace, str):
        return None
    ref = controller_ref(obj)
    if ref is not None:
        if ref.get("kind") != ASCENDJOBS.kind or not str(ref.get("apiVersion", "")).startswith(
            ASCENDJOBS.group + "/"
        ):
            return None
        name = ref.get("name")
        return f"{namespace}/{name}" if isinstance(name, str) and name else None
    job_name = as_dict(meta.get("labels")).get(JOB_NAME_LABEL)
    return f"{namespace}/{job_name}" if isinstance(job_name, str) and job_name else None


@dataclass
class JobStates:
    """The `ascendjob_jobs{state}` gauge, kept as a map key -> state so deletes stay exact.

    Counts move by one per change (O(1) per reconcile, not a recount of every job), and only
    the gauges of the two states involved are touched.
    """

    _states: dict[str, str]
    _counts: dict[str, int]
    _lock: threading.Lock

    @classmethod
    def new(cls) -> JobStates:
        for name in ALL_STATES:
            metrics.JOBS.labels(state=name)  # every state exported from the start, at 0
        return cls({}, {}, threading.Lock())

    def set(self, key: str, state: str | None) -> None:
        with self._lock:
            old = self._states.pop(key, None) if state is None else self._states.get(key)
            if old == state:
                return
            if state is not None:
                self._states[key] = state
            for name, delta in ((old, -1), (state, 1)):
                if name is not None:
                    self._counts[name] = self._counts.get(name, 0) + delta
                    metrics.JOBS.labels(state=name).set(self._counts[name])

    def counts(self) -> dict[str, int]:
        """Jobs per state, for tests and the benchmarks."""
        with self._lock:
            return {name: n for name, n in self._counts.items() if n}


class JobStateStarts:
    """`ascendjob_job_state_start_time_seconds{namespace,name,state,reason}`: since when each
    unfinished job is in its state, for the "stuck in Restarting/Created" alerts.

    The value is the stored condition's lastTransitionTime, so a new leader exports the same
    series as the old one; a finished or deleted job's series is removed.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._labels: dict[str, tuple[str, str, str, str]] = {}

    def set(self, key: str, status: Any) -> None:
        namespace, _, name = key.partition("/")
        conditions = as_dict(status).get("conditions")
        last = as_dict(conditions[-1]) if isinstance(conditions, list) and conditions else {}
        state, reason = last.get("type"), last.get("reason")
        since = parse_time(last.get("lastTransitionTime"))
        labels: tuple[str, str, str, str] | None = None
        if isinstance(state, str) and state not in TERMINAL_STATES and since is not None:
            labels = (namespace, name, state, reason if isinstance(reason, str) else "")
        with self._lock:
            old = self._labels.pop(key, None)
            if old is not None and old != labels:
                metrics.JOB_STATE_START_TIME.remove(*old)
            if labels is not None and since is not None:
                metrics.JOB_STATE_START_TIME.labels(*labels).set(since.timestamp())
                self._labels[key] = labels


class OwnStatusWrites:
    """Jobs whose cached copy is still the one our last status write replaced.

    The watch event of our own write arrives a moment after the write; a pod event in that
    gap would re-plan from the older job, and its status write is then a certain 409 (the
    resourceVersion moved on) plus a back-off and a wasted request: under a burst of pod
    updates, every status write would be followed by one. So until the cache shows a
    different resourceVersion than the one we wrote over, the job is not re-planned; the
    event that updates the cache enqueues it again.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._pending: dict[str, tuple[str, float]] = {}

    def wrote(self, key: str, over_rv: str, new_rv: str | None) -> None:
        if new_rv is None or new_rv == over_rv:
            return  # the server did not move the object on: nothing to wait for
        with self._lock:
            self._pending[key] = (over_rv, self._clock())

    def stale(self, key: str, cached_rv: str | None) -> bool:
        """True while the cache holds the job our last write replaced (and not for too long)."""
        with self._lock:
            entry = self._pending.get(key)
            if entry is None:
                return False
            over_rv, at = entry
            if cached_rv != over_rv or self._clock() - at > STALE_JOB_GIVE_UP_SECONDS:
                del self._pending[key]
                return False
            return True

    def forget(self, key: str) -> None:
        with self._lock:
            self._pending.pop(key, None)


class JobReconciler:
    """`reconcile(key) -> Result`, the controller-runtime shape, for AscendJobs."""

    def __init__(
        self,
        client: KubeClient,
        jobs: Informer,
        pods: Informer,
        services: Informer,
        podgroups: Informer | None,
        expectations: Expectations,
        recorder: EventRecorder,
        options: planning.PlanOptions | None = None,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        ranktables: RankTableWriter | None = None,
    ) -> None:
        self._client = client
        self._ranktables = ranktables
        self._jobs = jobs
        self._pods = pods
        self._services = services
        self._podgroups = podgroups
        self._expectations = expectations
        self._recorder = recorder
        self._options = options or planning.PlanOptions()
        self._now = now
        self.job_states = JobStates.new()
        self.state_starts = JobStateStarts()
        self._own_writes = OwnStatusWrites()
        self._refusals = Refusals()
        # Jobs whose last reconcile was held back, waiting for an event (`awaited`).
        self._awaited: set[str] = set()
        self._awaited_lock = threading.Lock()
        #: Since when each job's counts-only status write is held (monotonic), for
        #: `hold_status_for`; dropped once a status write goes out or nothing is left to write.
        self._counts_held_since: dict[str, float] = {}
        self._create_pool = ThreadPoolExecutor(MAX_PARALLEL_CREATES, "create-pods")

    def close(self) -> None:
        """Release the pod-creation threads (after the workers have stopped)."""
        self._create_pool.shutdown(wait=False)

    # -- the reconcile loop -------------------------------------------------------------------

    def reconcile(self, key: str) -> Result:
        started = time.monotonic()
        job = self._jobs.store.get(key)
        namespace, _, name = key.partition("/")
        if job is None:
            return self._job_gone(key, log.bind(namespace=namespace, name=name))
        bound = bind_job(log, job)
        held = self._held_back(key, job, bound)
        if held is not None:
            return held

        outcome = _Outcome()
        try:
            children = self._children(job)
            plan = self._plan(key, job, children, bound)
            self._execute(job, plan, bound, outcome)
            for _ in range(MAX_FOLLOW_UP_PLANS):
                follow = _follow_up(children, plan, outcome)
                if follow is None:
                    break
                children, current = follow, outcome.job or job
                plan = self._plan(key, current, children, bound)
                self._execute(current, plan, bound, outcome)
            failures = outcome.failures
            failures += self._sync_ranktable(outcome.job or job, plan, children["Pod"], bound)
        finally:
            # Only now: the Event sender's requests would compete with this reconcile's, on
            # both sides of the connection (a failed pod's replacement waited behind five).
            for target, event in outcome.events:
                self._emit(target, event)
        self._note_refusals(key, job, plan, outcome)
        self.job_states.set(key, plan.state)
        self.state_starts.set(key, (outcome.job or job).get("status"))  # as stored
        self._log_reconciled(plan, outcome, bound, started)
        if failures:
            raise ReconcileError("; ".join(failures))
        return Result(requeue_after=plan.requeue_after)

    def _hold_counts(
        self, key: str, job: dict[str, Any], plan: planning.Plan, bound: Any
    ) -> planning.Plan:
        """The plan without its status write while that write may wait, back when it may not."""
        now = time.monotonic()
        since = self._counts_held_since.get(key)
        held_for = None if since is None else now - since
        held = hold_status_for(
            plan, job.get("status"), held_for, self._options.status_batch_seconds
        )
        if held is None:
            self._counts_held_since.pop(key, None)
            return plan
        if since is None:
            self._counts_held_since[key] = now
        bound.debug("status_counts_held", write_in=round(held, 3))
        requeue = _sooner(plan.requeue_after, held)
        return dataclasses.replace(plan, status=None, requeue_after=requeue)

    def _note_refusals(
        self, key: str, job: dict[str, Any], plan: planning.Plan, outcome: _Outcome
    ) -> None:
        """Remember a create refused as invalid for the retry's plan (the reconcile fails, so
        the retry comes after the queue's first back-off); forget it once a plan starts from
        a finished job, which the echo of the failing status write brings."""
        if plan.previous_state in TERMINAL_STATES:
            self._refusals.forget(key)
        elif outcome.refused:
            self._refusals.note(key, job, outcome.refused[0])

    def awaited(self, key: str) -> bool:
        """True, once, when a reconcile of `key` was held back (`_held_back`) since the last call.

        That reconcile waits for an event: the echo of our own status write, or a child we
        created or deleted showing in the cache. The controller syncs the job's next event at
        once then, even one it would otherwise batch. An event that arrives while the reconcile
        is still deciding to hold back may wait for the batch: the period bounds that delay.
        """
        with self._awaited_lock:
            if key not in self._awaited:
                return False
            self._awaited.discard(key)
            return True

    def _forget(self, key: str) -> None:
        """Drop what is kept per job: expectations, write and hold records, its gauges."""
        self._expectations.forget(key)
        self._own_writes.forget(key)
        self._refusals.forget(key)
        with self._awaited_lock:
            self._awaited.discard(key)
        self._counts_held_since.pop(key, None)
        self.job_states.set(key, None)
        self.state_starts.set(key, None)

    def _job_gone(self, key: str, bound: Any) -> Result:
        self._forget(key)
        if self._ranktables is not None:
            self._ranktables.forget(key)
        bound.debug("job_gone")
        return Result()

    def _held_back(self, key: str, job: dict[str, Any], bound: Any) -> Result | None:
        """A Result when the job must not be planned yet (a stale cache), else None; the job is
        then `awaited` until its next event."""
        if not self._expectations.satisfied(key):
            expires_in = self._expectations.expires_in(key)
            bound.debug("expectations_pending", expires_in=expires_in)
            # Nothing else may ever enqueue the job: come back when the record expires.
            held = Result(requeue_after=None if expires_in is None else expires_in + 0.01)
        elif self._own_writes.stale(key, job["metadata"].get("resourceVersion")):
            bound.debug("cache_behind_own_status_write")
            held = Result(requeue_after=STALE_JOB_RECHECK_SECONDS)
        else:
            return None
        with self._awaited_lock:
            self._awaited.add(key)
        return held

    def _plan(
        self, key: str, job: dict[str, Any], children: dict[str, list[dict[str, Any]]], bound: Any
    ) -> planning.Plan:
        """The plan for `job`, its status write held back while it may wait (_hold_counts):
        the first plan of a reconcile and each follow-up alike."""
        try:
            made = planning.plan(
                job,
                children["Pod"],
                children["Service"],
                self._podgroup_of(job),
                self._now(),
                self._options,
                refused=self._refusals.of(key, job),
            )
        except Exception as err:
            # plan() is meant to be total (a property test feeds it malformed input); if some
            # input still breaks it, say so on the job and retry with back-off, while the
            # other jobs carry on.
            bound.exception("plan_failed")
            self._emit(
                job,
                planning.EventSpec(
                    "Warning", "ReconcileError", f"cannot plan this job: {type(err).__name__}"
                ),
            )
            raise
        return self._hold_counts(key, job, made, bound)

    @staticmethod
    def _log_reconciled(plan: planning.Plan, outcome: _Outcome, bound: Any, started: float) -> None:
        changed = bool(outcome.acted or outcome.failures or plan.delete_job)
        # Info for what changed, debug for the no-ops (most pod updates change nothing).
        (bound.info if changed else bound.debug)(
            "reconciled",
            state=plan.state,
            creates=outcome.creates,
            deletes=outcome.deletes,
            status_written=outcome.status_written,
            requeue_after=plan.requeue_after,
            duration_ms=round((time.monotonic() - started) * 1000, 2),
        )

    # -- reading the caches ----------------------------------------------------------------------

    def _children(self, job: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """Every cached child carrying the job's name label, whoever controls it.

        The plan sorts them into ours, orphans to adopt and foreign ones it must leave alone
        (and whose names it must not try to create).
        """
        meta = job["metadata"]
        index_value = f"{meta['namespace']}/{meta['name']}"
        return {
            "Pod": self._pods.store.by_index(JOB_INDEX, index_value),
            "Service": self._services.store.by_index(JOB_INDEX, index_value),
        }

    def _podgroup_of(self, job: dict[str, Any]) -> dict[str, Any] | None:
        if self._podgroups is None:
            return None
        namespace, name = _podgroup_key(job)
        return self._podgroups.store.get(f"{namespace}/{name}")

    # -- carrying out the plan ---------------------------------------------------------------

    def _execute(
        self,
        job: dict[str, Any],
        plan: planning.Plan,
        bound: Any,
        outcome: _Outcome,
    ) -> None:
        """Make one plan's requests, recording what they did in `outcome`."""
        key = object_key(job)
        labels = self._metric_labels(job)
        outcome.services, outcome.removed_pods, outcome.actions = [], [], []
        failures = outcome.failures
        outcome.note(plan)

        for ref in plan.adopts:
            failures.extend(self._adopt(job, ref, bound))

        failures.extend(self._execute_creates(job, plan, labels, bound, outcome))

        deletes = [(ref, False) for ref in plan.deletes]
        deletes += [(ref, True) for ref in plan.force_deletes]
        if deletes:
            self._expectations.expect_deletions(key, [_ref_key(ref) for ref, _ in deletes])
        for ref, force in deletes:
            failures.extend(self._delete_child(job, ref, labels, bound, outcome, force=force))

        if plan.podgroup_patch is not None:
            failures.extend(self._patch_podgroup(job, plan.podgroup_patch, bound))

        # A transition is announced (events, restart counter) only once its status is stored:
        # after a 409 the re-plan makes the same transition again and announces it then.
        stored = True
        if plan.status is not None:
            status_failures = self._write_status(job, plan, labels, bound, outcome)
            failures.extend(status_failures)
            stored = not status_failures
        if stored and plan.deletes_after_status:
            # Record, then act: the restart is stored, so the failed pod may go now.
            refs = plan.deletes_after_status
            self._expectations.expect_deletions(key, [_ref_key(r) for r in refs])
            for ref in refs:
                failures.extend(self._delete_child(job, ref, labels, bound, outcome))
        if stored and plan.restarted:
            metrics.JOBS_RESTARTED.labels(**labels).inc(plan.restarted)
        self._announce(job, plan, outcome, stored)

        if plan.delete_job and not failures:
            failures.extend(self._delete_job(job, bound))

    def _execute_creates(
        self,
        job: dict[str, Any],
        plan: planning.Plan,
        labels: dict[str, str],
        bound: Any,
        outcome: _Outcome,
    ) -> list[str]:
        """The plan's creates behind expectations: Services and PodGroups, then the pods."""
        failures: list[str] = []
        key = object_key(job)
        creates = list(plan.creates)
        if any(body.get("kind") == "Pod" for body in creates):
            # The pods mount the rank-table ConfigMap: it must exist before them, or they
            # hang in ContainerCreating on a missing volume.
            missing = self._ensure_ranktable_configmap(job, bound)
            if missing:
                failures.extend(missing)
                creates = [body for body in creates if body.get("kind") != "Pod"]
        if creates:
            self._expectations.expect_creations(key, [_body_key(body) for body in creates])
        # Services and PodGroups first (the plan orders them so), one at a time; then the pods.
        for body in [b for b in creates if b.get("kind") != "Pod"]:
            failures.extend(self._create(job, body, labels, bound, outcome))
        pods = [b for b in creates if b.get("kind") == "Pod"]
        failures.extend(self._create_pods(job, pods, labels, bound, outcome))
        return failures

    def _announce(
        self, job: dict[str, Any], plan: planning.Plan, outcome: _Outcome, stored: bool
    ) -> None:
        """What the children went through, and the transition if its status is stored."""
        terminal = stored and plan.status is not None and plan.state in (SUCCEEDED, FAILED)
        terminal = terminal and plan.previous_state != plan.state
        announced = plan.events if stored else ()
        for event in child_events(outcome.actions, announced, terminal=terminal):
            outcome.events.append((job, event))

    def _create_pods(
        self,
        job: dict[str, Any],
        bodies: list[dict[str, Any]],
        labels: dict[str, str],
        bound: Any,
        outcome: _Outcome,
    ) -> list[str]:
        """Create pods in slow-start batches of 1, 2, 4, ... pods, MAX_PARALLEL_CREATES at a time.

        A 1,000-worker job would otherwise take 1,000 sequential round trips. As in the
        Kubernetes Job controller, a batch with a failure stops the rest: when the API server
        refuses every pod (quota, admission) we learn it from one request, not a thousand.
        Skipped pods are taken off the expectations; the retry with back-off re-plans them.

        The batches keep doubling past the pool's size, as the Job controller's do, and within
        a batch a new create starts as soon as one of the 16 in flight returns. Batches capped
        at the pool's size waited for their slowest request every 16 pods: 66 waits for a
        1,000-worker job instead of 10.
        """
        failures: list[str] = []
        start = 0
        for size in slow_start_batches(len(bodies)):
            if failures:
                break
            batch = bodies[start : start + size]
            if len(batch) == 1:
                results = [self._create(job, batch[0], labels, bound, outcome)]
            else:
                results = map_bounded(
                    self._create_pool,
                    lambda b: self._create(job, b, labels, bound, outcome),
                    batch,
                    MAX_PARALLEL_CREATES,
                )
            failures.extend(f for result in results for f in result)
            start += len(batch)
        key = object_key(job)
        for body in bodies[start:]:
            self._expectations.creation_failed(key, _body_key(body))
        return failures

    def _create(
        self,
        job: dict[str, Any],
        body: dict[str, Any],
        labels: dict[str, str],
        bound: Any,
        outcome: _Outcome,
    ) -> list[str]:
        key, ckey = object_key(job), object_key(body)
        kind = body.get("kind", "")
        resource = _RESOURCE_BY_KIND[kind]
        try:
            # A Service's answer carries its ClusterIP for the pods; a pod's is never read.
            created = self._client.create(
                resource, body["metadata"]["namespace"], body, decode=kind != "Pod"
            )
        except Exception as err:
            self._expectations.creation_failed(key, _body_key(body))
            if is_already_exists(err):
                bound.info("child_exists", kind=kind, child=ckey)
                return []
            if is_invalid(err) or is_bad_request(err):
                outcome.refused.append(refusal(kind, ckey, _api_message(err)))
            bound.warning("create_failed", kind=kind, child=ckey, error=str(err))
            # FailedCreatePod, FailedCreateService (Kubeflow's reasons), FailedCreatePodGroup:
            # without an Event a refused Service left the job Created with nothing to say why.
            self._recorder.event(
                job,
                "Warning",
                f"FailedCreate{kind}",
                f"Error creating {kind.lower()} {ckey}: {_api_message(err)}",
            )
            return [f"create {kind} {ckey}: {err}"]
        bound.info("child_created", kind=kind, child=ckey)
        if kind == "Service" and isinstance(created, dict):
            outcome.services.append(created)
        if kind == "Pod":
            metrics.PODS_CREATED.labels(**labels).inc()
        # list.append is atomic: the pool's threads may record side by side.
        outcome.actions.append(ChildAction(CREATE, kind, str(body["metadata"]["name"])))
        return []

    def _delete_child(
        self,
        job: dict[str, Any],
        ref: planning.ChildRef,
        labels: dict[str, str],
        bound: Any,
        outcome: _Outcome,
        *,
        force: bool = False,
    ) -> list[str]:
        key, ckey = object_key(job), f"{ref.namespace}/{ref.name}"
        resource = _RESOURCE_BY_KIND[ref.kind]
        try:
            answer = self._client.delete(
                resource,
                ref.namespace,
                ref.name,
                preconditions={"uid": ref.uid} if ref.uid else None,
                grace_period_seconds=0 if force else None,
                decode=ref.kind == "Pod",  # only a pod's answer is read (_removed_at_once)
            )
        except Exception as err:
            self._expectations.deletion_failed(key, _ref_key(ref))
            if is_not_found(err):
                if ref.kind == "Pod" and ref.uid:
                    outcome.removed_pods.append(ref.uid)
                return []
            bound.warning("delete_failed", kind=ref.kind, child=ckey, error=str(err))
            return [f"delete {ref.kind} {ckey}: {err}"]
        bound.info("child_deleted", kind=ref.kind, child=ckey, force=force)
        if ref.kind == "Pod":
            metrics.PODS_DELETED.labels(**labels).inc()
            if ref.uid and _removed_at_once(answer):
                outcome.removed_pods.append(ref.uid)
        outcome.actions.append(ChildAction(FORCE_DELETE if force else DELETE, ref.kind, ref.name))
        return []

    # -- the rank table ----------------------------------------------------------------------

    def _ranktable_targets(self, job: dict[str, Any]) -> RankTableTargets | None:
        if self._ranktables is None:
            return None
        found = targets_of(job)
        return found if found.any else None

    def _ensure_ranktable_configmap(self, job: dict[str, Any], bound: Any) -> list[str]:
        found = self._ranktable_targets(job)
        if found is None:
            return []
        assert self._ranktables is not None
        return self._report_ranktable(job, self._ranktables.ensure_configmap(job, found), bound)

    def _sync_ranktable(
        self, job: dict[str, Any], plan: planning.Plan, pods: list[dict[str, Any]], bound: Any
    ) -> list[str]:
        """Publish the table computed from the job's own pods, while the job is live."""
        found = self._ranktable_targets(job)
        if (
            found is None
            or plan.state in (SUCCEEDED, FAILED)
            or job["metadata"].get("deletionTimestamp")
        ):
            return []
        assert self._ranktables is not None
        uid = job["metadata"].get("uid")
        own = [p for p in pods if (controller_ref(p) or {}).get("uid") == uid]
        content = ranktable.rank_table_text(job, own)
        return self._report_ranktable(job, self._ranktables.publish(job, found, content), bound)

    def _report_ranktable(self, job: dict[str, Any], failures: list[str], bound: Any) -> list[str]:
        """Warning Events for failed writes; those worth retrying fail the reconcile."""
        retry = []
        for failure in failures:
            if isinstance(failure, TooLarge):  # retrying cannot help: say so once, go on
                self._recorder.event(job, "Warning", "RankTableTooLarge", failure)
                continue
            bound.warning("ranktable_write_failed", error=failure)
            self._recorder.event(job, "Warning", "RankTableWriteFailed", failure)
            retry.append(f"rank table: {failure}")
        return retry

    def _emit(self, job: dict[str, Any], event: planning.EventSpec) -> None:
        self._recorder.event(job, event.type, event.reason, event.message)

    def _adopt(self, job: dict[str, Any], ref: planning.ChildRef, bound: Any) -> list[str]:
        owner = owner_reference(parse_job(job))
        # A JSON patch guarded by uid and resourceVersion: adopt exactly the object we saw
        # (never a successor, never one someone else has just claimed), keeping the owner
        # references it already has (non-controller ones are legitimate and not ours to drop).
        cached = self._cached_child(ref)
        meta = (cached or {}).get("metadata") or {}
        existing = [r for r in meta.get("ownerReferences") or [] if r.get("uid") != owner["uid"]]
        ops: list[dict[str, Any]] = []
        if ref.uid:
            ops.append({"op": "test", "path": "/metadata/uid", "value": ref.uid})
        if meta.get("resourceVersion"):
            rv = meta["resourceVersion"]
            ops.append({"op": "test", "path": "/metadata/resourceVersion", "value": rv})
        ops.append({"op": "add", "path": "/metadata/ownerReferences", "value": [*existing, owner]})
        try:
            self._client.patch(
                _RESOURCE_BY_KIND[ref.kind], ref.namespace, ref.name, ops, patch_type="json"
            )
        except Exception as err:
            if is_not_found(err):
                return []
            bound.warning("adopt_failed", kind=ref.kind, child=ref.name, error=str(err))
            return [f"adopt {ref.kind} {ref.name}: {err}"]
        bound.info("child_adopted", kind=ref.kind, child=ref.name)
        return []

    def _cached_child(self, ref: planning.ChildRef) -> dict[str, Any] | None:
        by_kind = {"Pod": self._pods, "Service": self._services, "PodGroup": self._podgroups}
        informer = by_kind.get(ref.kind)
        return informer.store.get(f"{ref.namespace}/{ref.name}") if informer else None

    def _write_status(
        self,
        job: dict[str, Any],
        plan: planning.Plan,
        labels: dict[str, str],
        bound: Any,
        outcome: _Outcome | None = None,
    ) -> list[str]:
        meta = job["metadata"]
        # Only what changed, and never the spec back; the resourceVersion precondition keeps
        # optimistic concurrency: a newer job than our cache's gets 409, never overwritten.
        body = {
            "metadata": {"resourceVersion": meta["resourceVersion"]},
            "status": merge_patch(job.get("status") or {}, plan.status),
        }
        try:
            written = self._client.patch(
                ASCENDJOBS,
                meta["namespace"],
                meta["name"],
                body,
                patch_type="merge",
                subresource="status",
            )
        except Exception as err:
            if is_not_found(err):
                return []
            if is_conflict(err):
                # The informer will deliver the newer job; re-plan from it after a short back-off.
                bound.info("status_conflict")
            else:
                bound.warning("status_write_failed", error=str(err))
            return [f"status: {err}"]
        self._own_writes.wrote(
            object_key(job),
            job["metadata"]["resourceVersion"],
            (written or {}).get("metadata", {}).get("resourceVersion"),
        )
        self._count_transitions(plan, labels)
        if outcome is not None and isinstance(written, dict) and written.get("metadata"):
            outcome.job = written
        return []

    @staticmethod
    def _count_transitions(plan: planning.Plan, labels: dict[str, str]) -> None:
        """Job counters move once per transition, after the status that records it is stored."""
        if plan.state == plan.previous_state:
            return
        if plan.previous_state is None:
            metrics.JOBS_CREATED.labels(**labels).inc()
        if plan.state == SUCCEEDED:
            metrics.JOBS_SUCCESSFUL.labels(**labels).inc()
        elif plan.state == FAILED:
            metrics.JOBS_FAILED.labels(**labels).inc()

    def _patch_podgroup(self, job: dict[str, Any], body: dict[str, Any], bound: Any) -> list[str]:
        """Bring the PodGroup's gang size in line with a scaled job (a JSON merge patch)."""
        namespace, name = _podgroup_key(job)
        try:
            self._client.patch(PODGROUPS, namespace, name, body, patch_type="merge")
        except Exception as err:
            if is_not_found(err):  # gone meanwhile; the next plan creates it afresh
                return []
            return [f"patch podgroup {name}: {_api_message(err)}"]
        bound.info("podgroup_patched", podgroup=name, spec=body.get("spec"))
        return []

    def _delete_job(self, job: dict[str, Any], bound: Any) -> list[str]:
        meta = job["metadata"]
        try:
            self._client.delete(
                ASCENDJOBS,
                meta["namespace"],
                meta["name"],
                propagation_policy="Background",
                preconditions={"uid": meta["uid"]},
                decode=False,
            )
        except Exception as err:
            if is_not_found(err):
                return []
            return [f"delete job (TTL): {err}"]
        bound.info("job_deleted_ttl")
        return []

    def job_deleted(self, job: dict[str, Any]) -> None:
        """Bookkeeping when a job disappears: its expectations and its place in the gauge."""
        self._forget(object_key(job))
        metrics.JOBS_DELETED.labels(**self._metric_labels(job)).inc()

    @staticmethod
    def _metric_labels(job: dict[str, Any]) -> dict[str, str]:
        """Total: malformed metadata gives empty label values, never an exception loop."""
        meta = as_dict(job.get("metadata"))
        framework = as_dict(meta.get("labels")).get(FRAMEWORK_LABEL, "")
        namespace = meta.get("namespace", "")
        return {
            "namespace": namespace if isinstance(namespace, str) else "",
            "framework": framework.lower() if isinstance(framework, str) else "",
        }


def _follow_up(
    children: dict[str, list[dict[str, Any]]], plan: planning.Plan, outcome: _Outcome
) -> dict[str, list[dict[str, Any]]] | None:
    """The children to plan again with, when the answers to this plan's writes showed what
    the caches will show only a watch event later; None when there is nothing to gain.

    - A Service created: its ClusterIP came back in the response, so the pods (whose
      environment holds it) are created now instead of one watch round trip later.
    - A pod removed at once by its delete (a Failed pod has no grace period): its name is
      free, so a replacement is created now rather than after the DELETED event. Only while
      the job is active, and only from a job that holds our last status write (the restart
      it recorded): planning from an older one would count the restart again.
    Expectations still hold the job back from the caches until every create and delete of
    this reconcile has been observed.
    """
    if outcome.failures or (plan.status is not None and outcome.job is None):
        return None
    removed = set(outcome.removed_pods) if plan.state not in TERMINAL_STATES else set()
    if not outcome.services and not removed:
        return None
    pods = [p for p in children["Pod"] if p["metadata"].get("uid") not in removed]
    return {**children, "Service": children["Service"] + outcome.services, "Pod": pods}


def slow_start_batches(count: int) -> list[int]:
    """Batch sizes for `count` creates: 1, 2, 4, ... doubling, the last one what is left."""
    sizes: list[int] = []
    size = 1
    while count > 0:
        sizes.append(min(size, count))
        count -= sizes[-1]
        size *= 2
    return sizes


def expectation_key(kind: str, child_key: str) -> str:
    """The expectation of one child: its kind too, since a job's Service and its first pod
    share a name (`<job>-master-0`). Keyed by name alone, the pod's ADDED event satisfied the
    Service's expectation, and a reconcile before the Service reached the cache created the
    Service again (a 409, seen once under load)."""
    return f"{kind}/{child_key}"


def _body_key(body: dict[str, Any]) -> str:
    return expectation_key(str(body.get("kind", "")), object_key(body))


def _ref_key(ref: planning.ChildRef) -> str:
    return expectation_key(ref.kind, f"{ref.namespace}/{ref.name}")


def _sooner(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _removed_at_once(answer: Any) -> bool:
    """Whether a DELETE's answer says the object is already gone from the server.

    kube-apiserver answers with the object as it was deleted: removed when it has no
    finalizers and no grace period left (a terminal or unscheduled pod, a Service), still
    there (Terminating) with a grace period. A `Status` of Success, or no answer at all (a
    retried delete that found it gone), is removed too.
    """
    if answer is None:
        return True
    if not isinstance(answer, dict):
        return False
    if answer.get("kind") == "Status":
        return answer.get("status") == "Success"
    meta = as_dict(answer.get("metadata"))
    if meta.get("finalizers"):
        return False
    return not meta.get("deletionTimestamp") or meta.get("deletionGracePeriodSeconds") == 0


def _podgroup_key(job: dict[str, Any]) -> tuple[str, str]:
    """(namespace, name) of the job's PodGroup: desired.podgroup_name's `<job>-<uid>`, from the
    raw metadata, since this runs before validation and parse_job needs a valid job."""
    meta = job["metadata"]
    return meta["namespace"], f"{meta['name']}-{meta.get('uid')}"


def _api_message(err: BaseException) -> str:
    return str(getattr(err, "message", "") or err)

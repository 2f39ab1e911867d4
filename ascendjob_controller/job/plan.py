"""plan(): everything the reconciler must do for one job, as a pure function.

The reconciler reads the informer caches, calls `plan`, and executes the result; all decisions
live here so they can be tested as tables of (job, children, now) -> Plan.

Inputs are the raw JSON dicts of the caches: the job, the pods and services that are either
controlled by this job (controller ownerReference uid) or orphans carrying our job-name label,
and the PodGroup named `<job>-<uid>` if any. They are never mutated.

How the reconciler executes a Plan:
  - adopts: add our controller ownerReference (`desired.owner_reference`) to each orphan;
  - creates in the given order (Service and PodGroup before pods), deletes (with the uid as a
    precondition), force_deletes (grace period 0), deletes_after_status once the status is
    stored (below), each through expectations, announcing what succeeded with
    `child_events.child_events` (one Event per reason per plan) and each failed pod create
    with FailedCreatePod;
  - status through the status subresource with the resourceVersion of the job planned from;
    on 409 re-read and re-plan, never overwrite;
  - events: job-level transitions, already de-duplicated (each is planned once, on the
    reconcile that makes the transition); a terminal one also names the cleanup deletes;
  - delete_job: delete the AscendJob (propagation Background) when its TTL expired;
  - requeue_after: come back within this long, for the next deadline (the runner's
    `Result.requeue_after`; a reconcile that starts sooner works it out again).

Record, then act (restart counting is exact whatever the execution order): a newly failed
pod that its policy recreates is *counted* in the plan that first sees it (status gets
`restartCount + 1` and the pod uid in `recreatedPods`), and its delete is in
`deletes_after_status`, which the reconciler carries out only once that status is stored. If
the status write fails, nothing was deleted and the re-plan counts again from the same base;
if the delete fails (or the controller stops in between), the uid is already recorded, and
every later plan that sees the pod deletes it (`deletes`) without counting it again. A Failed
pod has no grace period, so the delete's answer normally shows it removed; the reconciler
then re-plans at once, from the job its status write returned and without that pod, and the
replacement is created in the same reconcile: one watch event (the failure) from a failed pod
to its replacement, not three.

Decisions documented here because the design leaves them open:
- A job being deleted gets an empty plan: garbage collection removes the children.
- Pods with a deletionTimestamp are going away: they never count as running, and their name is
  not reused until they are gone (a create would conflict).
- A pod deleted by someone else while the job runs is recreated without counting a restart, and
  the job stays Running meanwhile (row 8 of status.py). A Failed pod is handled by its restart
  policy even if someone else is already deleting it.
- Pods are created only when the leader Service has a ClusterIP (it goes into their
  environment; the reconciler re-plans with the Service its create returned, so this costs no
  extra reconcile) and, with gang scheduling, when the PodGroup's phase is past Pending.
- On finish: cleanPodPolicy Running deletes Pending/Running pods, All deletes every pod; with
  either, the leader Service goes too (nothing can reach a finished job). The PodGroup is
  always deleted on finish, so Volcano stops reserving resources for it. A spec edited into
  an invalid one is a finish too (Failed, JobValidFailed); with no parsed view, only children
  carrying our controller reference are deleted.
- A child the API server refuses as invalid (422) or cannot decode (400) fails the job the
  same way (`refused`): the template is the user's, and retrying the same create can only be
  refused again.
- Pods stuck Terminating (deletionTimestamp plus `lost_node_grace_seconds` in the past, on a node
  not in `live_nodes` when that set is given) are force-deleted: their kubelet is gone and will
  never confirm, which would otherwise hold a restart forever (design section 8).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from ascendjob_controller.job.desired import (
    desired_pod,
    desired_pod_names,
    desired_podgroup,
    desired_service,
    gang_enabled,
    podgroup_name,
    service_name,
)
from ascendjob_controller.job.env import parse_job_with_meta
from ascendjob_controller.job.quantity import parse_quantity
from ascendjob_controller.job.restart import (
    FailureAction,
    RestartLedger,
    backoff_exceeded,
    exit_code,
    last_exit_code,
    mindcluster_restart_events,
    on_pod_failure,
    training_status,
)
from ascendjob_controller.job.status import (
    Observation,
    Verdict,
    current_state,
    decide,
    is_finished,
    next_status,
    replica_statuses,
    same_status,
)
from ascendjob_controller.job.types import (
    CLEAN_ALL,
    CLEAN_NONE,
    CLEAN_RUNNING,
    DEFAULT_OPERATOR_NAME,
    FAILED,
    LABEL_JOB_NAME,
    REASON_BACKOFF,
    REASON_DEADLINE,
    REASON_FAILED,
    REASON_PODGROUP_NOT_INITIALIZED,
    REASON_PODGROUP_PENDING,
    REASON_SUCCEEDED,
    REASON_VALID_FAILED,
    RESTARTING,
    TERMINAL_STATES,
    JobView,
    after,
    as_dict,
    as_int,
    controller_ref,
    dicts,
    dig,
    parse_time,
)
from ascendjob_controller.job.validation import Problem, validate

NORMAL = "Normal"
WARNING = "Warning"
EVENT_EXITED = "ExitedWithCode"
EVENT_RESTARTING = "JobRestarting"
EVENT_FORCE_DELETE = "ForceDeletePod"
PENDING_PHASES = frozenset({"", "Pending"})


@dataclass(frozen=True)
class PlanOptions:
    """Controller-wide settings that shape a plan."""

    gang_scheduling_enabled: bool = True
    operator_name: str = DEFAULT_OPERATOR_NAME
    lost_node_grace_seconds: float = 300.0
    #: A status write that only moves replica counts is held this long (`status_batching`),
    #: and a transition meanwhile carries it; 0 writes every change at once.
    status_batch_seconds: float = 1.0
    #: Names of the nodes that exist, when the caller watches nodes; None means unknown, and
    #: then a pod stuck Terminating past the grace period is force-deleted on time alone.
    live_nodes: frozenset[str] | None = None


@dataclass(frozen=True)
class ChildRef:
    kind: str  # "Pod" | "Service" | "PodGroup"
    namespace: str
    name: str
    uid: str | None


@dataclass(frozen=True)
class EventSpec:
    type: str  # "Normal" | "Warning"
    reason: str
    message: str


@dataclass(frozen=True)
class Plan:
    """What to do; see the module docstring for the order of execution."""

    creates: tuple[dict[str, Any], ...] = ()
    deletes: tuple[ChildRef, ...] = ()
    adopts: tuple[ChildRef, ...] = ()
    status: dict[str, Any] | None = None
    events: tuple[EventSpec, ...] = ()
    requeue_after: float | None = None
    delete_job: bool = False
    restarted: int = 0
    force_deletes: tuple[ChildRef, ...] = ()
    #: The job's state before and after this plan (for the ascendjob_jobs{state} gauge and the
    #: created/successful/failed counters: count when they differ).
    previous_state: str | None = None
    state: str | None = None
    #: A JSON merge patch for our PodGroup (`{"spec": {...}}`), when its gang size or minimum
    #: resources no longer match the spec (replicas were scaled); executed by the reconciler.
    podgroup_patch: dict[str, Any] | None = None
    #: Failed pods whose restart this plan counts in `status`: deleted only once that status
    #: is stored, never before (see "Record, then act" in the module docstring).
    deletes_after_status: tuple[ChildRef, ...] = ()


# --- ownership -----------------------------------------------------------------------------------
def _controller_uid(obj: dict[str, Any]) -> str | None:
    ref = controller_ref(obj)
    return None if ref is None else str(ref.get("uid"))


def _ref(kind: str, obj: dict[str, Any]) -> ChildRef:
    meta = obj.get("metadata") or {}
    return ChildRef(kind, meta.get("namespace", ""), meta.get("name", ""), meta.get("uid"))


@dataclass(frozen=True)
class _Children:
    pods: list[dict[str, Any]]
    service: dict[str, Any] | None
    service_blocked: bool  # a Service with our name controlled by someone else
    podgroup: dict[str, Any] | None
    podgroup_blocked: bool
    adopts: tuple[ChildRef, ...]
    #: Desired pod names held by a pod that is not ours (foreign, or a Terminating orphan):
    #: creating them would only fail with AlreadyExists, so they are skipped.
    blocked_pods: frozenset[str]
    #: Every pod name the spec asks for (`desired_pod_names`), which the pods were sorted by.
    wanted: dict[str, tuple[str, int]]
    #: Children's names held by an object another controller controls: (kind, name, owner).
    taken: tuple[tuple[str, str, str], ...] = ()


def _claim(obj: dict[str, Any], view: JobView, name_ok: bool) -> str:
    """'ours', 'adopt', 'foreign' or 'ignore' for one child candidate."""
    owner = _controller_uid(obj)
    if owner is not None:
        return "ours" if owner == view.uid else "foreign"
    labelled = dig(obj, "metadata", "labels", LABEL_JOB_NAME) == view.name
    return "adopt" if labelled and name_ok and not _deleting(obj) else "ignore"


def _claim_named(
    kind: str,
    candidates: list[dict[str, Any]],
    name: str | None,
    view: JobView,
    adopts: list[ChildRef],
    taken: list[tuple[str, str, str]],
) -> tuple[dict[str, Any] | None, bool]:
    """(our child called `name`, whether someone else controls that name) for a one-per-job
    kind; an orphan found is appended to `adopts`, a foreign holder of the name to `taken`."""
    found: dict[str, Any] | None = None
    blocked = False
    for obj in candidates:
        if dig(obj, "metadata", "name") != name:
            continue
        claim = _claim(obj, view, True)
        if claim == "foreign":
            blocked = True
            taken.append((kind, str(name), _controller_text(obj)))
        elif claim in ("ours", "adopt"):
            found = obj
            if claim == "adopt":
                adopts.append(_ref(kind, obj))
    return found, blocked


def _classify(
    view: JobView,
    pods: list[dict[str, Any]],
    services: list[dict[str, Any]],
    podgroup: dict[str, Any] | None,
) -> _Children:
    wanted = desired_pod_names(view)
    ours: list[dict[str, Any]] = []
    adopts: list[ChildRef] = []
    blocked: set[str] = set()
    taken: list[tuple[str, str, str]] = []
    for pod in pods:
        name = dig(pod, "metadata", "name")
        claim = _claim(pod, view, name in wanted)
        if claim in ("ours", "adopt"):
            ours.append(pod)
        elif name in wanted:
            blocked.add(str(name))
            if claim == "foreign":  # not a Terminating orphan, which goes by itself
                taken.append(("Pod", str(name), _controller_text(pod)))
        if claim == "adopt":
            adopts.append(_ref("Pod", pod))

    svc_name = service_name(view) if view.leader_spec else None
    service, service_blocked = _claim_named("Service", services, svc_name, view, adopts, taken)
    groups = [podgroup] if podgroup is not None else []
    group, group_blocked = _claim_named(
        "PodGroup", groups, podgroup_name(view), view, adopts, taken
    )
    return _Children(
        ours,
        service,
        service_blocked,
        group,
        group_blocked,
        tuple(adopts),
        frozenset(blocked),
        wanted,
        tuple(taken),
    )


def _controller_text(obj: dict[str, Any]) -> str:
    """`<Kind> <name>` of the object's controller, for a message."""
    ref = controller_ref(obj) or {}
    return f"{ref.get('kind') or 'an object'} {ref.get('name') or ref.get('uid') or ''}".strip()


def _taken_events(view: JobView, children: _Children) -> list[EventSpec]:
    """A Warning per child name another controller holds: we neither adopt nor replace its
    object, so the job waits, and without an Event nothing said why (`make fuzz`)."""
    return [
        EventSpec(
            WARNING,
            f"FailedCreate{kind}",
            f"{kind.lower()} {view.namespace}/{name} already exists and is controlled by "
            f"{owner}: it is not adopted, and the job waits until the name is free",
        )
        for kind, name, owner in children.taken
    ]


# --- small pure helpers --------------------------------------------------------------------------
def _phase(pod: dict[str, Any]) -> str:
    return str(dig(pod, "status", "phase") or "Pending")


def _deleting(obj: dict[str, Any]) -> bool:
    return bool(dig(obj, "metadata", "deletionTimestamp"))


def _uid(obj: dict[str, Any]) -> str:
    return str(dig(obj, "metadata", "uid") or "")


def _name(obj: dict[str, Any]) -> str:
    return str(dig(obj, "metadata", "name") or "")


def _seconds(delta: timedelta) -> float:
    return max(delta.total_seconds(), 0.0)


def _min(*values: float | None) -> float | None:
    present = [v for v in values if v is not None]
    return min(present) if present else None


def _container_name(pod: dict[str, Any]) -> str:
    status = training_status(pod)
    if status and status.get("name"):
        return str(status["name"])
    containers = dicts(dig(pod, "spec", "containers"))
    return str(containers[0].get("name", "")) if containers else ""


def _exited_event(pod: dict[str, Any], code: int | None) -> EventSpec:
    shown = "none (terminated without an exit code)" if code is None else str(code)
    reason = dig(pod, "status", "reason")
    suffix = f", pod reason {reason}" if reason else ""
    return EventSpec(
        WARNING,
        EVENT_EXITED,
        f"Pod: {dig(pod, 'metadata', 'namespace')}.{_name(pod)}, "
        f"container: {_container_name(pod)}, exit code: {shown}{suffix}",
    )


def _ttl(
    ttl: int | None, status: dict[str, Any] | None, now: datetime
) -> tuple[bool, float | None]:
    """(delete the job now, seconds until it must be deleted)."""
    completion = parse_time(as_dict(status).get("completionTime"))
    if ttl is None or completion is None or not is_finished(status):
        return False, None
    expiry = after(completion, ttl)
    if expiry is None:
        return False, None
    if now >= expiry:
        return True, None
    return False, _seconds(expiry - now)


def _force_deletes(
    pods: list[dict[str, Any]], now: datetime, options: PlanOptions
) -> tuple[list[ChildRef], float | None]:
    forced: list[ChildRef] = []
    wait: float | None = None
    grace = timedelta(seconds=options.lost_node_grace_seconds)
    for pod in pods:
        stamp = parse_time(dig(pod, "metadata", "deletionTimestamp"))
        if stamp is None:
            continue
        node = dig(pod, "spec", "nodeName")
        if options.live_nodes is not None and isinstance(node, str) and node in options.live_nodes:
            continue
        if now >= stamp + grace:
            forced.append(_ref("Pod", pod))
        else:
            wait = _min(wait, _seconds(stamp + grace - now))
    return forced, wait


def _terminal_event(verdict: Verdict, problem: Problem | None) -> EventSpec:
    if verdict.reason == REASON_VALID_FAILED and problem is not None:
        return EventSpec(WARNING, problem.reason, verdict.message)
    if verdict.reason == REASON_SUCCEEDED:
        return EventSpec(NORMAL, REASON_SUCCEEDED, verdict.message)
    if verdict.reason in (REASON_BACKOFF, REASON_DEADLINE):
        return EventSpec(WARNING, verdict.reason, verdict.message)
    return EventSpec(WARNING, REASON_FAILED, verdict.message)


def _cleanup(
    policy: str,
    pods: list[dict[str, Any]],
    services: list[dict[str, Any]],
    podgroup: dict[str, Any] | None,
) -> list[ChildRef]:
    """Deletes on finish: cleanPodPolicy for pods (and the Service), always the PodGroup."""
    deletes: list[ChildRef] = []
    for pod in pods:
        if _deleting(pod):
            continue
        if policy == CLEAN_ALL or (
            policy == CLEAN_RUNNING and _phase(pod) not in ("Succeeded", "Failed")
        ):
            deletes.append(_ref("Pod", pod))
    if policy != CLEAN_NONE:
        deletes += [_ref("Service", svc) for svc in services if not _deleting(svc)]
    if podgroup is not None and not _deleting(podgroup):
        deletes.append(_ref("PodGroup", podgroup))
    return deletes


def _finish_cleanup(
    view: JobView, children: _Children, pods: list[dict[str, Any]]
) -> list[ChildRef]:
    service = [children.service] if children.service is not None else []
    return _cleanup(view.clean_pod_policy, pods, service, children.podgroup)


def _invalid_cleanup(
    job: dict[str, Any],
    pods: list[dict[str, Any]],
    services: list[dict[str, Any]],
    podgroup: dict[str, Any] | None,
) -> list[ChildRef]:
    """cleanPodPolicy for a job whose spec became invalid while it ran.

    There is no parsed view (the spec may be anything), so only children that carry our
    controller reference are touched, never orphans; a cleanPodPolicy we cannot read is
    taken as None (keep the pods), the safe default. The PodGroup always goes, so Volcano
    stops reserving resources for a job that will never run again.
    """
    uid = str(dig(job, "metadata", "uid") or "")
    policy = dig(job, "spec", "runPolicy", "cleanPodPolicy")
    if policy not in (CLEAN_RUNNING, CLEAN_ALL):
        policy = CLEAN_NONE
    ours = [obj for obj in pods if _controller_uid(obj) == uid]
    our_services = [obj for obj in services if _controller_uid(obj) == uid]
    group = podgroup if podgroup is not None and _controller_uid(podgroup) == uid else None
    return _cleanup(str(policy), ours, our_services, group)


# --- the entry point ---------------------------------------------------------------------
def plan(
    job: dict[str, Any],
    pods: list[dict[str, Any]],
    services: list[dict[str, Any]],
    podgroup: dict[str, Any] | None,
    now: datetime,
    options: PlanOptions = PlanOptions(),
    refused: Problem | None = None,
) -> Plan:
    """Decide every action for `job` at `now` (pure and deterministic).

    `refused` is what the API server said when it refused one of the job's children as
    invalid (a 422 or 400): the job fails as if `validate` had found it, since no retry can make
    that child valid. The reconciler passes it for the generation whose create was refused.
    """
    # A status that is not an object (hand-edited, or a looser CRD) is replaced, not read.
    status: dict[str, Any] = as_dict(job.get("status"))
    previous = current_state(status)
    if _deleting(job):
        return Plan(previous_state=previous, state=previous)
    key = f"{dig(job, 'metadata', 'namespace')}/{dig(job, 'metadata', 'name')}"
    problems = validate(job)
    if problems:
        deletes = _invalid_cleanup(job, pods, services, podgroup)
        return _plan_invalid(job, problems[0], status, previous, key, now, deletes)
    view = parse_job_with_meta(job)
    children = _classify(view, pods, services, podgroup)
    if refused is not None and previous not in TERMINAL_STATES:
        # The spec parses, so its cleanPodPolicy (default Running) applies as on any finish.
        deletes = _finish_cleanup(view, children, children.pods)
        return _plan_invalid(job, refused, status, previous, key, now, deletes)
    forced, force_wait = _force_deletes(children.pods, now, options)
    if previous in TERMINAL_STATES:
        return _plan_finished(view, children, status, previous, key, now, forced, force_wait)
    return _plan_active(view, children, status, previous, key, now, options, forced, force_wait)


def _plan_invalid(
    job: dict[str, Any],
    problem: Problem,
    status: dict[str, Any],
    previous: str | None,
    key: str,
    now: datetime,
    deletes: list[ChildRef],
) -> Plan:
    verdict = decide(previous, Observation(job_key=key, invalid=problem.message), status)
    new = next_status(
        status,
        verdict,
        job_key=key,
        now=now,
        replicas=None,
        ledger=RestartLedger.from_status(status),
    )
    events = () if previous in TERMINAL_STATES else (_terminal_event(verdict, problem),)
    # The spec is invalid, maybe in this very field: a negative TTL must not delete the job
    # (and its Failed condition with it) the moment it fails.
    ttl = as_int(dig(job, "spec", "runPolicy", "ttlSecondsAfterFinished"))
    delete_job, wait = _ttl(ttl if ttl is not None and ttl >= 0 else None, new, now)
    return Plan(
        deletes=tuple(deletes),
        status=None if same_status(status, new) else new,
        events=events,
        requeue_after=wait,
        delete_job=delete_job,
        previous_state=previous,
        state=verdict.state,
    )


def _plan_finished(
    view: JobView,
    children: _Children,
    status: dict[str, Any],
    previous: str,
    key: str,
    now: datetime,
    forced: list[ChildRef],
    force_wait: float | None,
) -> Plan:
    verdict = decide(previous, Observation(job_key=key), status)
    ledger = RestartLedger.from_status(status).prune({_uid(p) for p in children.pods})
    new = next_status(
        status,
        verdict,
        job_key=key,
        now=now,
        replicas=replica_statuses(view, children.pods),
        ledger=ledger,
    )
    delete_job, ttl_wait = _ttl(view.ttl_seconds_after_finished, new, now)
    return Plan(
        deletes=tuple(_finish_cleanup(view, children, children.pods)),
        adopts=children.adopts,
        status=None if same_status(status, new) else new,
        requeue_after=_min(ttl_wait, force_wait),
        delete_job=delete_job,
        force_deletes=tuple(forced),
        previous_state=previous,
        state=previous,
    )


@dataclass(frozen=True)
class _Survey:
    """The desired pods as the cache shows them, sorted by what the plan must do about each."""

    missing: list[tuple[str, int]]  # (replica type, index) with no pod and a free name
    fatal: list[tuple[dict[str, Any], int | None, str]]  # (pod, exit code, policy): job fails
    recreate: list[dict[str, Any]]  # Failed pods their restart policy recreates
    scale_down: list[dict[str, Any]]  # pods the spec no longer asks for
    running: int
    succeeded: int


def _survey(view: JobView, children: _Children) -> _Survey:
    pods = children.pods
    wanted = children.wanted
    by_name = {_name(pod): pod for pod in pods}
    missing: list[tuple[str, int]] = []
    fatal: list[tuple[dict[str, Any], int | None, str]] = []
    recreate: list[dict[str, Any]] = []
    running = succeeded = 0
    for name, (rtype, index) in wanted.items():
        pod = by_name.get(name)
        if pod is None:
            if name not in children.blocked_pods:
                missing.append((rtype, index))
            continue
        phase = _phase(pod)
        if phase == "Failed":
            spec = view.replica(rtype)
            policy = spec.restart_policy if spec else ""
            code = exit_code(pod)
            if on_pod_failure(policy, code) is FailureAction.FAIL_JOB:
                fatal.append((pod, code, policy))
            else:
                recreate.append(pod)
        elif _deleting(pod):
            continue
        elif phase == "Succeeded":
            succeeded += 1
        elif phase == "Running":
            running += 1
    scale_down = [p for p in pods if _name(p) not in wanted and not _deleting(p)]
    return _Survey(missing, fatal, recreate, scale_down, running, succeeded)


def _deadline(
    view: JobView, status: dict[str, Any], key: str, now: datetime
) -> tuple[str | None, float | None]:
    """(DeadlineExceeded message once activeDeadlineSeconds has passed, seconds until then)."""
    start = parse_time(status.get("startTime")) or now
    limit = view.active_deadline_seconds
    deadline = None if limit is None else after(start, limit)  # None: never (or past 9999)
    if deadline is None:
        return None, None
    if now >= deadline:
        message = (
            f"AscendJob {key} was active longer than activeDeadlineSeconds "
            f"({view.active_deadline_seconds}s)."
        )
        return message, None
    return None, _seconds(deadline - now)


def _failure_messages(
    view: JobView, key: str, survey: _Survey, restarts: int
) -> tuple[str | None, str | None, str | None]:
    """(backoff exceeded, a pod failed the job, restarting) messages for the Observation."""
    backoff_msg = None
    if backoff_exceeded(view.backoff_limit, restarts):
        backoff_msg = (
            f"AscendJob {key} has failed because it has reached the specified backoff limit "
            f"({view.backoff_limit} restarts)."
        )
    failure_msg = None
    if survey.fatal:
        pod, code, policy = survey.fatal[0]
        failure_msg = (
            f"AscendJob {key} has failed because pod {_name(pod)} exited with code "
            f"{'none' if code is None else code} (restartPolicy {policy})."
        )
    restarting_msg = None
    if survey.recreate:
        pod = survey.recreate[0]
        code = exit_code(pod)
        restarting_msg = (
            f"AscendJob {key} is restarting: pod {_name(pod)} failed with exit code "
            f"{'none' if code is None else code}."
        )
    return backoff_msg, failure_msg, restarting_msg


def _observe(
    view: JobView,
    children: _Children,
    survey: _Survey,
    status: dict[str, Any],
    key: str,
    now: datetime,
    gang: bool,
    restarts: int,
) -> tuple[Observation, bool, float | None]:
    """(what status.decide needs, whether the gang is admitted, seconds to the deadline)."""
    deadline_msg, deadline_wait = _deadline(view, status, key, now)
    backoff_msg, failure_msg, restarting_msg = _failure_messages(view, key, survey, restarts)
    group = children.podgroup
    group_phase = str(dig(group, "status", "phase") or "") if group else ""
    admitted = not gang or (group is not None and group_phase not in PENDING_PHASES)
    pending_reason, pending_msg = _podgroup_pending(view, group, group_phase, admitted)
    obs = Observation(
        job_key=key,
        desired=len(children.wanted),
        running=survey.running,
        succeeded=survey.succeeded,
        deadline_exceeded=deadline_msg,
        backoff_exceeded=backoff_msg,
        failure=failure_msg,
        restarting=restarting_msg,
        podgroup_pending=pending_msg,
        podgroup_reason=pending_reason,
    )
    return obs, admitted, deadline_wait


@dataclass
class _Actions:
    """What an active job's plan does to its children, and the ledger it leaves."""

    ledger: RestartLedger
    events: list[EventSpec]
    creates: list[dict[str, Any]] = field(default_factory=list)
    deletes: list[ChildRef] = field(default_factory=list)
    deletes_after_status: list[ChildRef] = field(default_factory=list)
    restarted: int = 0
    podgroup_patch: dict[str, Any] | None = None


def _plan_active(
    view: JobView,
    children: _Children,
    status: dict[str, Any],
    previous: str | None,
    key: str,
    now: datetime,
    options: PlanOptions,
    forced: list[ChildRef],
    force_wait: float | None,
) -> Plan:
    pods = children.pods
    ledger, fresh = RestartLedger.from_status(status).observe_containers(pods)
    survey = _survey(view, children)
    fresh_failures = [pod for pod in survey.recreate if _uid(pod) not in ledger.recreated]
    gang = gang_enabled(view, options.gang_scheduling_enabled)
    obs, admitted, deadline_wait = _observe(
        view, children, survey, status, key, now, gang, ledger.total + len(fresh_failures)
    )
    verdict = decide(previous, obs, status)
    actions = _Actions(ledger, [_exited_event(pod, last_exit_code(pod)) for pod, _ in fresh])
    if verdict.terminal:
        if verdict.state == FAILED:
            actions.events += [_exited_event(pod, code) for pod, code, _ in survey.fatal]
        actions.events.append(_terminal_event(verdict, None))
        actions.deletes = _finish_cleanup(view, children, pods)
        requeue = force_wait
    else:
        _restart_and_scale(view, survey, fresh_failures, actions)
        if verdict.state == RESTARTING and previous != RESTARTING:
            actions.events.append(EventSpec(WARNING, EVENT_RESTARTING, verdict.message))
        actions.events += _taken_events(view, children)
        actions.creates = _creates(view, children, survey.missing, gang, admitted, options)
        actions.podgroup_patch = _podgroup_patch(view, children, gang, options)
        requeue = _min(force_wait, deadline_wait)
    new = _active_status(view, children, survey, status, verdict, key, now, actions.ledger)
    delete_job, ttl_wait = _ttl(view.ttl_seconds_after_finished, new, now)
    return Plan(
        creates=tuple(actions.creates),
        deletes=tuple(actions.deletes),
        adopts=children.adopts,
        status=None if same_status(status, new) else new,
        events=tuple(actions.events),
        requeue_after=_min(requeue, ttl_wait),
        delete_job=delete_job,
        restarted=actions.restarted,
        force_deletes=tuple(forced),
        previous_state=previous,
        state=verdict.state,
        podgroup_patch=actions.podgroup_patch,
        deletes_after_status=tuple(actions.deletes_after_status),
    )


def _restart_and_scale(
    view: JobView, survey: _Survey, fresh_failures: list[dict[str, Any]], actions: _Actions
) -> None:
    """Count the new failures and delete the failed pods (record, then act) and the extras.

    A newly failed pod is deleted only once the status counting it is stored
    (`deletes_after_status`); one whose restart an earlier plan stored is deleted now.
    """
    for pod in fresh_failures:
        actions.ledger = actions.ledger.count_recreation(_uid(pod))
        actions.events.append(_exited_event(pod, exit_code(pod)))
        # MindCluster's reasons too, for alerts written against its events.
        actions.events += [EventSpec(*spec) for spec in mindcluster_restart_events(view, pod)]
    actions.restarted = len(fresh_failures)
    fresh_uids = {_uid(f) for f in fresh_failures}
    actions.deletes = [_ref("Pod", p) for p in survey.scale_down]
    for pod in survey.recreate:
        if _deleting(pod):
            continue
        target = actions.deletes_after_status if _uid(pod) in fresh_uids else actions.deletes
        target.append(_ref("Pod", pod))


def _active_status(
    view: JobView,
    children: _Children,
    survey: _Survey,
    status: dict[str, Any],
    verdict: Verdict,
    key: str,
    now: datetime,
    ledger: RestartLedger,
) -> dict[str, Any]:
    """The new status; the ledger is pruned only when that costs no extra write."""
    replicas = replica_statuses(view, children.pods)
    new = next_status(status, verdict, job_key=key, now=now, replicas=replicas, ledger=ledger)
    if not survey.missing and not same_status(status, new):
        # Forget gone pods only once every replica has a pod in the cache (while one is
        # missing, the cache may be lagging behind a relist, and the pod it does not show yet
        # would have its restarts counted again when it reappears: make chaos), and only in
        # a write that happens anyway: pruning is housekeeping, never worth a request.
        pruned = ledger.prune({_uid(p) for p in children.pods})
        if pruned != ledger:  # most plans have nothing to forget: no second status
            new = next_status(
                status, verdict, job_key=key, now=now, replicas=replicas, ledger=pruned
            )
    return new


def _podgroup_pending(
    view: JobView, group: dict[str, Any] | None, phase: str, admitted: bool
) -> tuple[str, str | None]:
    """(Created reason, message) while the gang is not admitted; message None once it is.

    MindCluster's reasons: PodGroupNotInitialized while Volcano has not given the PodGroup a
    phase (not created yet counts too), PodGroupPending while it is Pending.
    """
    if admitted:
        return REASON_PODGROUP_PENDING, None
    shown = f"in phase {phase or 'Pending'}" if group else "not created yet"
    message = (
        f"PodGroup {podgroup_name(view)} is {shown}: pods are created once the gang "
        f"scheduler admits it."
    )
    if phase:
        return REASON_PODGROUP_PENDING, f"{message} The cluster resource is not enough."
    hint = "kubectl get pod -n volcano-system -l app=volcano-scheduler"
    return REASON_PODGROUP_NOT_INITIALIZED, f"{message} Is volcano-scheduler running? ({hint})"


def _podgroup_patch(
    view: JobView, children: _Children, gang: bool, options: PlanOptions
) -> dict[str, Any] | None:
    """The spec fields of our PodGroup that scaling changed (minMember, minResources).

    Quantities are compared by value, not spelling: a server that rewrote "1.5" as "1500m"
    must not make us patch on every reconcile (each patch wakes the next one).
    """
    group = children.podgroup
    if not gang or group is None or _deleting(group):
        return None
    desired = desired_podgroup(view, options.operator_name)["spec"]
    current = as_dict(group.get("spec"))
    changed: dict[str, Any] = {}
    if as_int(current.get("minMember")) != desired["minMember"]:
        changed["minMember"] = desired["minMember"]
    if as_dict(current.get("minTaskMember")) != desired["minTaskMember"]:
        changed["minTaskMember"] = desired["minTaskMember"]
    wanted = desired.get("minResources")
    if wanted is not None and not _same_resources(current.get("minResources"), wanted):
        changed["minResources"] = wanted
    return {"spec": changed} if changed else None


def _same_resources(current: Any, wanted: dict[str, Any]) -> bool:
    have = as_dict(current)
    if set(have) != set(wanted):
        return False
    return all(parse_quantity(have[k]) == parse_quantity(v) for k, v in wanted.items())


def _creates(
    view: JobView,
    children: _Children,
    missing: list[tuple[str, int]],
    gang: bool,
    admitted: bool,
    options: PlanOptions,
) -> list[dict[str, Any]]:
    """Service, then PodGroup, then the missing pods once both are ready."""
    creates: list[dict[str, Any]] = []
    cluster_ip: str | None = None
    service_ready = view.leader_spec is None
    if view.leader_spec is not None:
        service = children.service
        if service is None and not children.service_blocked:
            body = desired_service(view, options.operator_name)
            if body is not None:
                creates.append(body)
        elif service is not None:
            ip = dig(service, "spec", "clusterIP")
            if isinstance(ip, str) and ip and ip != "None":
                cluster_ip, service_ready = str(ip), True
    if gang and children.podgroup is None and not children.podgroup_blocked:
        creates.append(desired_podgroup(view, options.operator_name))
    if service_ready and admitted:
        for rtype, index in missing:
            creates.append(
                desired_pod(
                    view, rtype, index, cluster_ip, gang=gang, operator_name=options.operator_name
                )
            )
    return creates


__all__ = [
    "ChildRef",
    "EventSpec",
    "Plan",
    "PlanOptions",
    "plan",
]

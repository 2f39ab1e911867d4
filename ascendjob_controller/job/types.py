"""Vocabulary of the AscendJob domain: API names, label keys, replica types, defaults, and a
parsed, defaulted view of a job.

Everything else in `job/` works on the raw JSON dicts the API returns, because that is what the
informer cache holds and what we must write back. `JobView` exists so that defaulting and the
case-insensitive replica-type matching of design section 4 happen in exactly one place; the
rest of the package never reads `spec.replicaSpecs` directly.

Invariant: nothing here mutates its inputs; a `JobView` only references the caller's dicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

# --- API -----------------------------------------------------------------------------------
GROUP = "mindxdl.gitee.com"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "AscendJob"
PODGROUP_API_VERSION = "scheduling.volcano.sh/v1beta1"
PODGROUP_KIND = "PodGroup"

# --- labels and annotations ------------------------------------------------------------------
FRAMEWORK_LABEL = "framework"
LABEL_PREFIX = "training.kubeflow.org/"
LABEL_JOB_NAME = LABEL_PREFIX + "job-name"
JOB_NAME_LABEL = LABEL_JOB_NAME  # the name the controller wiring imports
LABEL_REPLICA_TYPE = LABEL_PREFIX + "replica-type"
LABEL_REPLICA_INDEX = LABEL_PREFIX + "replica-index"
LABEL_OPERATOR_NAME = LABEL_PREFIX + "operator-name"
LABEL_JOB_ROLE = LABEL_PREFIX + "job-role"
SHORT_JOB_NAME = "job-name"
SHORT_REPLICA_TYPE = "replica-type"
SHORT_REPLICA_INDEX = "replica-index"
LABEL_GROUP_NAME = "group-name"
ANNOTATION_RANK_INDEX = "hccl/rankIndex"
ANNOTATION_PODGROUP = "scheduling.k8s.io/group-name"
ANNOTATION_TASK_SPEC = "volcano.sh/task-spec"
VOLCANO = "volcano"
DEFAULT_OPERATOR_NAME = "ascendjob-controller"
#: `kubectl apply`'s copy of the whole object: not carried over to the PodGroup.
ANNOTATION_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"

# --- MindCluster's job metadata (ascend-parity.md sections 2 and 3) ----------------------------
#: Job annotation: comma list of process-level recovery strategies.
ANNOTATION_RECOVER_STRATEGY = "recover-strategy"
#: Job annotation: chips per logical super-pod (HCCL_LOGIC_SUPERPOD_ID).
ANNOTATION_SP_BLOCK = "sp-block"
#: Job label: "on" asks MindSpore for pod rescheduling (RSC:1).
LABEL_POD_RESCHEDULING = "pod-rescheduling"
#: Job label: the backoff limit when runPolicy.backoffLimit is unset.
LABEL_FAULT_RETRY_TIMES = "fault-retry-times"
#: PodGroup label, "on" when the job has a recover-strategy annotation.
LABEL_PROCESS_RECOVER = "process-recover-enable"
SWITCH_ON = "on"

# --- frameworks and replica types ------------------------------------------------------------
PYTORCH = "pytorch"
MINDSPORE = "mindspore"
TENSORFLOW = "tensorflow"
WORKER = "Worker"
#: The leader (non-Worker) replica type of each framework.
LEADERS: dict[str, str] = {PYTORCH: "Master", MINDSPORE: "Scheduler", TENSORFLOW: "Chief"}
#: Frameworks whose leader is mandatory (MindSpore may run workers alone).
LEADER_REQUIRED = frozenset({PYTORCH, TENSORFLOW})
MAX_REPLICAS = 20000

# --- policies ----------------------------------------------------------------------------------
NEVER = "Never"
ON_FAILURE = "OnFailure"
ALWAYS = "Always"
EXIT_CODE = "ExitCode"
RESTART_POLICIES = (ALWAYS, ON_FAILURE, NEVER, EXIT_CODE)
SUCCESS_POLICIES = ("", "AllWorkers")
CLEAN_NONE = "None"
CLEAN_RUNNING = "Running"
CLEAN_ALL = "All"

# --- container and ports ---------------------------------------------------------------------
TRAINING_CONTAINER = "ascend"
PORT_NAME = "ascendjob-port"
DEFAULT_PORT = 2222
NPU_RESOURCE = "huawei.com/Ascend910"
NPU_RESOURCE_PREFIX = "huawei.com/"
#: Whole-device NPU resources; any other `huawei.com/*` name is a virtual one (vNPU slices).
PHYSICAL_NPU_RESOURCES = frozenset(
    {"huawei.com/npu", "huawei.com/Ascend310", "huawei.com/Ascend310P", "huawei.com/Ascend910"}
)
#: NPUs one pod may request. No Ascend node has more than 16; the bound only keeps the
#: LOCAL_RANK list ("0,1,...,n-1") of a mistyped request from exhausting memory.
MAX_NPUS = 1024

# --- conditions ------------------------------------------------------------------------------
CREATED = "Created"
RUNNING = "Running"
RESTARTING = "Restarting"
SUCCEEDED = "Succeeded"
FAILED = "Failed"
TERMINAL_STATES = frozenset({SUCCEEDED, FAILED})
REASON_CREATED = "JobCreated"
REASON_RUNNING = "JobRunning"
REASON_RESTARTING = "JobRestarting"
REASON_SUCCEEDED = "JobSucceeded"
REASON_FAILED = "JobFailed"
REASON_VALID_FAILED = "JobValidFailed"
REASON_BACKOFF = "BackoffLimitExceeded"
REASON_DEADLINE = "DeadlineExceeded"
REASON_PODGROUP_PENDING = "PodGroupPending"
#: MindCluster's Created reason for a PodGroup Volcano has not looked at yet (phase "").
REASON_PODGROUP_NOT_INITIALIZED = "PodGroupNotInitialized"


# --- small helpers for raw JSON ------------------------------------------------------------------
def dig(obj: Any, *path: str) -> Any:
    """Walk nested dicts, returning None at the first missing or non-dict step.

    Raw API objects omit empty fields, so every read of them is optional; one helper keeps
    the `.get(...) or {}` chains out of the decision code.
    """
    cur = obj
    for key in path:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON document (dicts, lists and immutable scalars).

    `copy.deepcopy` does the same for such data about four times slower: it keeps a memo of
    every object (for shared and cyclic references, which decoded JSON has none of) and
    dispatches on each type. The planner copies the old status and each pod's template on
    every reconcile. Other objects are shared, as deepcopy shares immutable ones. Templates
    are checked against `validation.MAX_TEMPLATE_DEPTH` first, so the recursion is bounded.
    """
    if type(value) is dict:
        return {key: json_copy(item) for key, item in value.items()}
    if type(value) is list:
        return [json_copy(item) for item in value]
    return value


def controller_ref(obj: Any) -> dict[str, Any] | None:
    """The ownerReference marked `controller: true`, if any (at most one is allowed)."""
    for ref in dicts(dig(obj, "metadata", "ownerReferences")):
        if ref.get("controller") is True:
            return ref
    return None


#: The last second format_time wrote and its text: a status build stamps the same second up
#: to four times, and a burst of reconciles does so for many jobs in a row.
_LAST_FORMATTED: tuple[int, str] = (0, "1970-01-01T00:00:00Z")


def format_time(moment: datetime) -> str:
    """RFC 3339 in UTC with whole seconds, as metav1.Time serialises.

    Whole seconds matter: the API server truncates, so a finer stamp would never compare
    equal to what we read back and every reconcile would look like a change. A pure function
    of the moment's second: the text of the last second is kept (a replaced tuple, so threads
    never see half of one), which turns `astimezone` and `strftime` into one comparison.
    """
    global _LAST_FORMATTED
    second = math.floor(moment.timestamp())  # a naive moment is local time, as astimezone says
    cached = _LAST_FORMATTED
    if cached[0] == second:
        return cached[1]
    text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _LAST_FORMATTED = (second, text)
    return text


def parse_time(text: Any) -> datetime | None:
    """Parse an RFC 3339 stamp from the API; None for absent or malformed values."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed


def as_int(value: Any) -> int | None:
    """An integer field, or None when absent or not an integer (bools are not integers)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def as_dict(value: Any) -> dict[str, Any]:
    """`value` when it is an object, else {}: a wrong-typed optional field reads as absent."""
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    """`value` when it is an array, else []."""
    return value if isinstance(value, list) else []


def dicts(value: Any) -> list[dict[str, Any]]:
    """The object items of an array (anything else, including a non-array, is skipped)."""
    return [item for item in as_list(value) if isinstance(item, dict)]


def after(moment: datetime, seconds: float) -> datetime | None:
    """`moment + seconds`, None when that is past year 9999 (an int64 seconds field can be)."""
    try:
        return moment + timedelta(seconds=seconds)
    except OverflowError:
        return None


def canonical_rtype(framework: str, key: str) -> str | None:
    """Map a replicaSpecs key, matched case-insensitively, to its CamelCase type, or None."""
    wanted = key.lower()
    for candidate in (LEADERS.get(framework, ""), WORKER):
        if candidate and candidate.lower() == wanted:
            return candidate
    return None


# --- the parsed view ---------------------------------------------------------------------------
@dataclass(frozen=True)
class ReplicaView:
    """One replica type with defaults applied (replicas 1, restartPolicy Never)."""

    rtype: str
    replicas: int
    restart_policy: str
    template: dict[str, Any]
    is_leader: bool


@dataclass(frozen=True)
class JobView:
    """A defaulted, normalised view of a *valid* job (see `parse_job`)."""

    name: str
    namespace: str
    uid: str
    framework: str
    leader: str
    replicas: tuple[ReplicaView, ...]  # leader first, then Worker
    scheduler_name: str
    backoff_limit: int | None
    active_deadline_seconds: int | None
    ttl_seconds_after_finished: int | None
    clean_pod_policy: str
    scheduling_policy: dict[str, Any]
    deleting: bool

    def replica(self, rtype: str) -> ReplicaView | None:
        for spec in self.replicas:
            if spec.rtype == rtype:
                return spec
        return None

    @property
    def leader_spec(self) -> ReplicaView | None:
        return self.replica(self.leader)

    @property
    def worker_spec(self) -> ReplicaView | None:
        return self.replica(WORKER)

    @property
    def total_replicas(self) -> int:
        return sum(spec.replicas for spec in self.replicas)


def framework_of(job: dict[str, Any]) -> str:
    """The job's framework label, lower-cased ('' when absent)."""
    value = dig(job, "metadata", "labels", FRAMEWORK_LABEL)
    return value.lower() if isinstance(value, str) else ""


def parse_job(job: dict[str, Any]) -> JobView:
    """Build the defaulted view. Call only after `validation.validate(job)` returned nothing.

    Defaults (design section 4): replicas 1, restartPolicy Never, cleanPodPolicy None,
    successPolicy "" (= AllWorkers).
    """
    framework = framework_of(job)
    leader = LEADERS[framework]
    specs = dig(job, "spec", "replicaSpecs") or {}
    views: list[ReplicaView] = []
    for key, raw in specs.items():
        rtype = canonical_rtype(framework, key)
        if rtype is None or not isinstance(raw, dict):
            continue
        replicas = as_int(raw.get("replicas"))
        views.append(
            ReplicaView(
                rtype=rtype,
                replicas=1 if replicas is None else replicas,
                restart_policy=raw.get("restartPolicy") or NEVER,
                template=raw.get("template") or {},
                is_leader=rtype == leader,
            )
        )
    views.sort(key=lambda view: (not view.is_leader, view.rtype))
    run_policy = as_dict(dig(job, "spec", "runPolicy"))
    return JobView(
        name=dig(job, "metadata", "name") or "",
        namespace=dig(job, "metadata", "namespace") or "default",
        uid=dig(job, "metadata", "uid") or "",
        framework=framework,
        leader=leader,
        replicas=tuple(views),
        scheduler_name=dig(job, "spec", "schedulerName") or "",
        backoff_limit=as_int(run_policy.get("backoffLimit")),
        active_deadline_seconds=as_int(run_policy.get("activeDeadlineSeconds")),
        ttl_seconds_after_finished=as_int(run_policy.get("ttlSecondsAfterFinished")),
        clean_pod_policy=run_policy.get("cleanPodPolicy") or CLEAN_NONE,
        scheduling_policy=as_dict(run_policy.get("schedulingPolicy")),
        deleting=bool(dig(job, "metadata", "deletionTimestamp")),
    )


def training_container(containers: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The container named `ascend`, else the first one (design section 4)."""
    for container in containers:
        if container.get("name") == TRAINING_CONTAINER:
            return container
    return containers[0] if containers else None

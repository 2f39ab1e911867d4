"""Every Prometheus metric the controller exports, in one registry (design section 5).

Names and labels follow controller-runtime and client-go so that dashboards built for Go
controllers work unchanged. The registry is the one piece of global mutable state we allow:
metrics are process-wide by nature, and one registry keeps `/metrics` a single scrape.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

REGISTRY = CollectorRegistry(auto_describe=True)

CONTROLLER_NAME = "ascendjob"

# --- controller-runtime: reconciles -------------------------------------------------------
RECONCILE_TOTAL = Counter(
    "controller_runtime_reconcile_total",
    "Total number of reconciliations per controller",
    ["controller", "result"],
    registry=REGISTRY,
)
RECONCILE_ERRORS = Counter(
    "controller_runtime_reconcile_errors_total",
    "Total number of reconciliation errors per controller",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_TIME = Histogram(
    "controller_runtime_reconcile_time_seconds",
    "Length of time per reconciliation per controller",
    ["controller"],
    buckets=(
        0.005,
        0.01,
        0.025,
        0.05,
        0.1,
        0.15,
        0.2,
        0.25,
        0.3,
        0.35,
        0.4,
        0.45,
        0.5,
        0.6,
        0.7,
        0.8,
        0.9,
        1.0,
        1.25,
        1.5,
        1.75,
        2.0,
        2.5,
        3.0,
        3.5,
        4.0,
        4.5,
        5,
        6,
        7,
        8,
        9,
        10,
        15,
        20,
        25,
        30,
        40,
        50,
        60,
    ),
    registry=REGISTRY,
)
MAX_CONCURRENT_RECONCILES = Gauge(
    "controller_runtime_max_concurrent_reconciles",
    "Maximum number of concurrent reconciles per controller",
    ["controller"],
    registry=REGISTRY,
)
ACTIVE_WORKERS = Gauge(
    "controller_runtime_active_workers",
    "Number of currently used workers per controller",
    ["controller"],
    registry=REGISTRY,
)
RECONCILE_RESULTS = ("success", "error", "requeue", "requeue_after")


def init_controller_metrics(controller: str = CONTROLLER_NAME) -> None:
    """Start every result label at 0, as controller-runtime does, so rates work from scrape one."""
    for result in RECONCILE_RESULTS:
        RECONCILE_TOTAL.labels(controller=controller, result=result)
    RECONCILE_ERRORS.labels(controller=controller)


# --- client-go: workqueue ----------------------------------------------------------------
_LATENCY_BUCKETS = tuple(1e-8 * 10**i for i in range(10))  # 10ns .. 10s (ExponentialBuckets)

WORKQUEUE_DEPTH = Gauge(
    "workqueue_depth", "Current depth of workqueue", ["name"], registry=REGISTRY
)
WORKQUEUE_ADDS = Counter(
    "workqueue_adds_total", "Total number of adds handled by workqueue", ["name"], registry=REGISTRY
)
WORKQUEUE_QUEUE_DURATION = Histogram(
    "workqueue_queue_duration_seconds",
    "How long in seconds an item stays in workqueue before being requested",
    ["name"],
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_WORK_DURATION = Histogram(
    "workqueue_work_duration_seconds",
    "How long in seconds processing an item from workqueue takes",
    ["name"],
    buckets=_LATENCY_BUCKETS,
    registry=REGISTRY,
)
WORKQUEUE_RETRIES = Counter(
    "workqueue_retries_total",
    "Total number of retries handled by workqueue",
    ["name"],
    registry=REGISTRY,
)
WORKQUEUE_UNFINISHED_WORK = Gauge(
    "workqueue_unfinished_work_seconds",
    "How many seconds of work has been done that is in progress and hasn't been observed by "
    "work_duration. Large values indicate stuck threads.",
    ["name"],
    registry=REGISTRY,
)
WORKQUEUE_LONGEST_RUNNING = Gauge(
    "workqueue_longest_running_processor_seconds",
    "How many seconds has the longest running processor for workqueue been running.",
    ["name"],
    registry=REGISTRY,
)

# --- client-go: REST client ----------------------------------------------------------------
REST_REQUESTS = Counter(
    "rest_client_requests_total",
    "Number of HTTP requests, partitioned by status code, method, and host.",
    ["code", "method", "host"],
    registry=REGISTRY,
)
REST_LATENCY = Histogram(
    "rest_client_request_duration_seconds",
    "Request latency in seconds. Broken down by verb, and host.",
    ["verb", "host"],
    buckets=(0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0),
    registry=REGISTRY,
)

# --- client-go: leader election ------------------------------------------------------------
LEADER_ELECTION_STATUS = Gauge(
    "leader_election_master_status",
    "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, "
    "1 indicates master. 'name' is the string used to identify the lease.",
    ["name"],
    registry=REGISTRY,
)

# --- AscendJob domain -------------------------------------------------------------------------
_JOB_LABELS = ["namespace", "framework"]
JOBS_CREATED = Counter(
    "ascendjob_jobs_created_total",
    "AscendJobs seen for the first time",
    _JOB_LABELS,
    registry=REGISTRY,
)
JOBS_SUCCESSFUL = Counter(
    "ascendjob_jobs_successful_total",
    "AscendJobs that reached Succeeded",
    _JOB_LABELS,
    registry=REGISTRY,
)
JOBS_FAILED = Counter(
    "ascendjob_jobs_failed_total", "AscendJobs that reached Failed", _JOB_LABELS, registry=REGISTRY
)
JOBS_RESTARTED = Counter(
    "ascendjob_jobs_restarted_total",
    "AscendJob restarts (pods recreated by the restart policy)",
    _JOB_LABELS,
    registry=REGISTRY,
)
JOBS_DELETED = Counter(
    "ascendjob_jobs_deleted_total", "AscendJobs deleted", _JOB_LABELS, registry=REGISTRY
)
PODS_CREATED = Counter(
    "ascendjob_pods_created_total", "Pods created for AscendJobs", _JOB_LABELS, registry=REGISTRY
)
PODS_DELETED = Counter(
    "ascendjob_pods_deleted_total", "Pods deleted for AscendJobs", _JOB_LABELS, registry=REGISTRY
)
JOBS = Gauge(
    "ascendjob_jobs",
    "AscendJobs currently known, by state (their last condition)",
    ["state"],
    registry=REGISTRY,
)
JOB_STATE_START_TIME = Gauge(
    "ascendjob_job_state_start_time_seconds",
    "Unix time at which each unfinished AscendJob entered its current state (its last "
    "condition's lastTransitionTime); the series goes when the job finishes or is deleted",
    ["namespace", "name", "state", "reason"],
    registry=REGISTRY,
)
RANKTABLE_WRITES = Counter(
    "ascendjob_ranktable_writes_total",
    "Rank table (hccl.json) writes, by target (configmap or file) and result (success, error, "
    "or too_large: a table no ConfigMap can hold, reported once and not retried)",
    ["target", "result"],
    registry=REGISTRY,
)

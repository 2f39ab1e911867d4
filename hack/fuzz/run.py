"""One fuzz run: a fresh cluster, the controller, foreign pods, the cases, the checks.

Order, and why:
  1. a fresh cluster (LocalCluster with its simulated kubelet, or RealCluster), namespace fuzz;
  2. foreign pods first: a ConfigMap owns them (a live controller ownerReference), they carry
     our job-name label for some case names, one even has the name the controller would give
     that job's worker; they are bound to a node no kubelet drives, so nothing but the
     controller could change them (their uid and resourceVersion are checked at the end);
  3. the observers (jobs, pods) before the controller, so no pod it makes goes unseen;
  4. the controller, ready, then the /healthz poller;
  5. the cases, POSTed raw at `rate` per second (the controller's default client QPS of 20
     is part of what is tested: a burst of 300 jobs would only measure that rate limit);
  6. wait until every accepted job has a condition (or is past its deadline), then let the
     running ones settle for a while, and collect.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hack.fuzz.mutate import Case, load_samples, make_case
from hack.fuzz.observe import (
    JOB_NAME_LABEL,
    HealthPoller,
    JobObserver,
    JobRecord,
    PodObserver,
    meta,
    state_of,
)
from hack.fuzz.process import Controller, Failure, failures, levels
from hack.fuzz.wire import Endpoint, Wire, loads

NAMESPACE = "fuzz"
JOBS_PATH = f"/apis/mindxdl.gitee.com/v1/namespaces/{NAMESPACE}/ascendjobs"
PODS_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods"
FOREIGN_OWNER = "fuzz-foreign-owner"
FOREIGN_NODE = "fuzz-elsewhere"  # no kubelet drives it: only the controller could touch these
TERMINAL = ("Succeeded", "Failed")
INVALID = ("Failed", "JobValidFailed")
#: The problems of a job failed because the API server refused one of its children.
REFUSALS = frozenset({"InvalidPodTemplate", "InvalidService", "InvalidPodGroup"})


@dataclass(frozen=True)
class Options:
    seed: int
    count: int
    backend: str = "local"
    rate: float = 5.0
    condition_timeout: float = 60.0
    settle: float = 20.0
    nodes: int = 4
    foreign: int = 6
    retry_threshold: int = 5
    only: tuple[int, ...] | None = None
    replay: tuple[Path, ...] = ()
    out_dir: Path | None = None


@dataclass
class Outcome:
    """A POSTed case: what the server said and, if it stored the job, what became of it."""

    case: Case
    code: int
    reason: str = ""
    name: str = ""
    uid: str = ""
    posted_at: float = 0.0
    record: JobRecord | None = None
    final: tuple[str, str] = ("", "")
    pods: list[str] = field(default_factory=list)
    present_at_end: bool = False
    message: str = ""

    @property
    def accepted(self) -> bool:
        return self.code == 201

    @property
    def latency(self) -> float | None:
        if self.record is None or self.record.first_condition_at is None:
            return None
        return self.record.first_condition_at - self.posted_at

    @property
    def gone_early(self) -> bool:
        """Deleted before any condition: the garbage collector, for an owner that never was.

        A `metadata.ownerReferences` mutation names a ConfigMap that does not exist, so the
        job is collected at once, as on any cluster; it is not the controller's to answer.
        """
        if not self.accepted or self.latency is not None:
            return False
        return self.record.deleted if self.record else not self.present_at_end

    @property
    def invalid(self) -> bool:
        """Ended Failed/JobValidFailed (or was ever seen so: specs are never edited here)."""
        seen = self.record.states_seen if self.record else []
        return self.final == INVALID or INVALID in seen

    @property
    def refused(self) -> bool:
        """Invalid because the API server refused a child (422), not by the controller's own
        validation: the children created before the refusal exist by then."""
        return self.invalid and self.record is not None and self.record.problem in REFUSALS


@dataclass(frozen=True)
class ForeignPod:
    name: str
    uid: str
    resource_version: str
    job_label: str


@dataclass
class RunResult:
    options: Options
    outcomes: list[Outcome]
    foreign: list[ForeignPod]
    foreign_after: dict[str, dict[str, Any] | None]
    foreign_events: dict[str, list[str]]
    health: HealthPoller
    controller_pid: int
    controller_alive_at_end: bool
    controller_exit: int | None
    controller_cpu: float
    failures: dict[Failure, int]
    log_levels: dict[str, int]
    pod_relists: int
    observer_errors: list[str]
    wall_seconds: float
    submit_seconds: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    fuzzer_cpu: float
    out_dir: Path
    pods_seen: int = 0
    metrics: dict[str, float] = field(default_factory=dict)


# -- the cluster ---------------------------------------------------------------------------


@contextlib.contextmanager
def cluster_for(backend: str, workdir: Path, nodes: int) -> Iterator[Any]:
    """A started cluster with its simulated kubelet; stopped on the way out, whatever happens."""
    kubeconfig = workdir / "kubeconfig"
    if backend == "real":
        from ascendjob_controller.localcluster.realcluster import RealCluster

        cluster: Any = RealCluster(kubeconfig, kubelet=True, nodes=nodes)
    else:
        from ascendjob_controller.localcluster.cluster import LocalCluster

        cluster = LocalCluster(kubeconfig, kubelet=True, nodes=nodes)
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


def make_namespace(cluster: Any, wire: Wire) -> None:
    wire.must("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    if hasattr(cluster, "wait_default_service_account"):
        cluster.wait_default_service_account(NAMESPACE)  # pods are refused until it exists


# -- foreign pods --------------------------------------------------------------------------


def foreign_targets(options: Options, cases: list[Case]) -> list[tuple[str, str]]:
    """(pod name, job-name label) for the foreign pods: spread over the case names.

    The first one takes the name the controller would give the first worker of an unmutated
    case (a job that will run), so the controller meets a pod it might take for its own; the
    last labels a job nobody created.
    """
    if options.foreign <= 0 or not cases:
        return []
    clean = [c for c in cases if not c.mutations] or cases
    step = max(1, len(cases) // options.foreign)
    spread = [c.name for c in cases[::step] if c.name != clean[0].name]
    targets = [(f"{clean[0].name}-worker-0", clean[0].name)]
    targets += [(f"{NAMESPACE}-foreign-{i}", job) for i, job in enumerate(spread)]
    targets = targets[: max(1, options.foreign - 1)]
    targets.append((f"{NAMESPACE}-foreign-nobody", "fz-nobody"))
    return targets


def create_foreign_pods(wire: Wire, targets: list[tuple[str, str]]) -> list[ForeignPod]:
    owner = wire.must(
        "POST", f"/api/v1/namespaces/{NAMESPACE}/configmaps", {"metadata": {"name": FOREIGN_OWNER}}
    )
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": FOREIGN_OWNER,
        "uid": meta(owner)["uid"],
        "controller": True,
    }
    made = []
    for name, job in targets:
        body = {
            "metadata": {"name": name, "labels": {JOB_NAME_LABEL: job}, "ownerReferences": [ref]},
            "spec": {
                "nodeName": FOREIGN_NODE,
                "containers": [{"name": "c", "image": "busybox:1.36"}],
            },
        }
        pod = wire.must("POST", PODS_PATH, body)
        made.append(ForeignPod(name, meta(pod)["uid"], meta(pod)["resourceVersion"], job))
    return made


def read_foreign(wire: Wire, pods: list[ForeignPod]) -> dict[str, dict[str, Any] | None]:
    """Each foreign pod as it is now (None: gone)."""
    found: dict[str, dict[str, Any] | None] = {}
    for pod in pods:
        code, body = wire.json("GET", f"{PODS_PATH}/{pod.name}")
        found[pod.name] = body if code == 200 else None
    return found


# -- submitting ----------------------------------------------------------------------------


def post_case(wire: Wire, case: Case) -> Outcome:
    code, raw = wire.request("POST", JOBS_PATH, case.body)
    now = time.monotonic()
    try:
        body = loads(raw) if raw else {}
    except ValueError:
        body = {}
    body = body if isinstance(body, dict) else {}
    if code == 201:
        m = meta(body)
        return Outcome(case, code, name=str(m.get("name")), uid=str(m.get("uid")), posted_at=now)
    message = str(body.get("message", ""))[:200]
    return Outcome(case, code, reason=str(body.get("reason", "")), posted_at=now, message=message)


def submit(wire: Wire, cases: list[Case], rate: float) -> list[Outcome]:
    """POST every case, one every 1/rate seconds (paced from the start, not after each reply)."""
    outcomes = []
    start = time.monotonic()
    for i, case in enumerate(cases):
        due = start + i / rate
        delay = due - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        outcomes.append(post_case(wire, case))
    return outcomes


def wait_conditions(jobs: JobObserver, outcomes: list[Outcome], timeout: float) -> None:
    """Until each accepted job has a condition or is `timeout` past its creation."""
    accepted = [o for o in outcomes if o.accepted]
    while True:
        now = time.monotonic()
        pending = [o for o in accepted if not _has_condition(jobs, o)]
        if not pending or all(now > o.posted_at + timeout for o in pending):
            return
        time.sleep(0.25)


def _has_condition(jobs: JobObserver, outcome: Outcome) -> bool:
    """A condition came, or the job is gone (then nobody can give it one)."""
    record = jobs.get(outcome.uid)
    return record is not None and (record.first_condition_at is not None or record.deleted)


def settle(jobs: JobObserver, outcomes: list[Outcome], seconds: float) -> None:
    """Give running jobs up to `seconds` to finish, so the end states mean something."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        records = [jobs.get(o.uid) or JobRecord("", "") for o in outcomes if o.accepted]
        if all(r.deleted or r.state[0] in TERMINAL for r in records):
            return
        time.sleep(0.5)


# -- collecting ----------------------------------------------------------------------------


def final_states(wire: Wire) -> dict[str, tuple[str, str]]:
    """uid -> (type, reason) from one LIST of the jobs at the end (the watch may lag)."""
    body = wire.must("GET", JOBS_PATH)
    return {str(meta(j).get("uid")): state_of(j) for j in body.get("items") or []}


def final_pods(wire: Wire) -> list[dict[str, Any]]:
    return list(wire.must("GET", PODS_PATH).get("items") or [])


def attribute_pods(
    outcomes: list[Outcome], pods: PodObserver, listed: list[dict[str, Any]], foreign: set[str]
) -> None:
    """Give each outcome the pods ever seen for it (job-name label or owner uid), foreign aside.

    The watch saw every pod while it ran; the final LIST covers any gap in it.
    """
    by_name = {o.name: o for o in outcomes if o.accepted}
    by_uid = {o.uid: o for o in outcomes if o.accepted}
    seen: dict[str, tuple[str, str | None, tuple[str, ...]]] = {
        r.uid: (r.name, r.job_label, r.owner_uids) for r in pods.snapshot()
    }
    for pod in listed:
        m = meta(pod)
        raw_labels = m.get("labels")
        labels: dict[str, Any] = raw_labels if isinstance(raw_labels, dict) else {}
        owners = tuple(str(ref.get("uid")) for ref in m.get("ownerReferences") or [])
        seen.setdefault(str(m.get("uid")), (str(m.get("name")), labels.get(JOB_NAME_LABEL), owners))
    for uid, (name, label, owners) in seen.items():
        if uid in foreign:
            continue
        found = [by_name.get(label or ""), *(by_uid.get(o) for o in owners)]
        targets = {o.case.index: o for o in found if o is not None}
        for outcome in targets.values():
            outcome.pods.append(name)


def load_now() -> tuple[float, float, float]:
    return os.getloadavg()


def self_cpu() -> float:
    """CPU of this process (driver, observers and, on the local backend, the API server)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def write_repros(out_dir: Path, outcomes: list[Outcome], failing: set[int]) -> None:
    """The exact bytes of every failing case, for a reproduction by hand or with --only."""
    for outcome in outcomes:
        if outcome.case.index in failing:
            path = out_dir / f"case-{outcome.case.index:04d}.json"
            path.write_bytes(outcome.case.body)
            meta_path = out_dir / f"case-{outcome.case.index:04d}.txt"
            meta_path.write_text(
                json.dumps(
                    {"sample": outcome.case.sample, "mutations": outcome.case.mutations}, indent=1
                )
            )


# -- the run -------------------------------------------------------------------------------


def build_cases(options: Options) -> list[Case]:
    """The seeded cases, or with --replay the given files' bytes as they are."""
    if options.replay:
        return [replay_case(i, path) for i, path in enumerate(options.replay)]
    samples = load_samples()
    indices = options.only if options.only is not None else range(options.count)
    return [make_case(options.seed, i, samples) for i in indices]


def replay_case(index: int, path: Path) -> Case:
    """A reproduction file as a case: its bytes are POSTed unchanged."""
    body = path.read_bytes()
    found = re.search(rb'"name"\s*:\s*"([^"]*)"', body)
    name = found.group(1).decode(errors="replace") if found else path.stem
    return Case(index, name, path.name, (f"replay {path}",), body)


def write_cases(out_dir: Path, outcomes: list[Outcome]) -> None:
    """One JSON line per case (code, state, latency, mutations), for a look after the run."""
    with (out_dir / "cases.jsonl").open("w") as out:
        for o in outcomes:
            row = {
                "index": o.case.index, "sample": o.case.sample, "name": o.name or o.case.name,
                "code": o.code, "reason": o.reason, "message": o.message,
                "final": list(o.final), "latency": o.latency, "pods": len(o.pods),
                "states_seen": o.record.states_seen if o.record else [],
                "mutations": o.case.mutations,
            }  # fmt: skip
            out.write(json.dumps(row) + "\n")


def out_dir_for(options: Options) -> Path:
    if options.out_dir is not None:
        options.out_dir.mkdir(parents=True, exist_ok=True)
        return options.out_dir
    base = Path(__file__).resolve().parents[2] / ".cache" / "fuzz"
    base.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"seed-{options.seed}-", dir=base))


def run(options: Options) -> RunResult:
    cases = build_cases(options)
    out_dir = out_dir_for(options)
    started = time.monotonic()
    load_before = load_now()
    with cluster_for(options.backend, out_dir, options.nodes) as cluster:
        endpoint = Endpoint.for_cluster(cluster)
        wire = Wire(endpoint)
        make_namespace(cluster, wire)
        foreign = create_foreign_pods(wire, foreign_targets(options, cases))
        jobs, pods = JobObserver(endpoint, NAMESPACE), PodObserver(endpoint, NAMESPACE)
        for watcher in (jobs.watcher, pods.watcher):
            watcher.start()
            if not watcher.synced.wait(30):
                raise RuntimeError(f"{watcher.name} did not sync: {watcher.errors}")
        controller = Controller(cluster.kubeconfig_path, out_dir)
        try:
            controller.wait_ready()
            health = HealthPoller(controller.probe_url, controller.alive)
            health.start()
            submit_start = time.monotonic()
            outcomes = submit(wire, cases, options.rate)
            submit_seconds = time.monotonic() - submit_start
            wait_conditions(jobs, outcomes, options.condition_timeout)
            settle(jobs, outcomes, options.settle)
            states = final_states(wire)
            listed = final_pods(wire)
            foreign_after = read_foreign(wire, foreign)
            health.stop()
            health.join(timeout=10)
            alive_at_end = controller.alive()
            cpu = controller.cpu_seconds()
            metrics = controller.metric_sums()
        finally:
            exit_code = controller.stop()
        for watcher in (jobs.watcher, pods.watcher):
            watcher.stop()
        wire.close()
    for outcome in outcomes:
        outcome.record = jobs.get(outcome.uid) if outcome.accepted else None
        if outcome.accepted:
            fallback = outcome.record.state if outcome.record else ("", "")
            outcome.final = states.get(outcome.uid, fallback)
            outcome.present_at_end = outcome.uid in states
    foreign_uids = {p.uid for p in foreign}
    attribute_pods(outcomes, pods, listed, foreign_uids)
    write_cases(out_dir, outcomes)
    records = controller.log_records()
    pod_records = pods.snapshot()
    return RunResult(
        options=options,
        outcomes=outcomes,
        foreign=foreign,
        foreign_after=foreign_after,
        foreign_events={r.uid: r.events for r in pod_records if r.uid in foreign_uids},
        health=health,
        controller_pid=controller.pid,
        controller_alive_at_end=alive_at_end,
        controller_exit=exit_code,
        controller_cpu=cpu,
        failures=dict(failures(records)),
        log_levels=dict(levels(records)),
        pod_relists=pods.watcher.relists + jobs.watcher.relists,
        observer_errors=pods.watcher.errors + jobs.watcher.errors,
        wall_seconds=time.monotonic() - started,
        submit_seconds=submit_seconds,
        load_before=load_before,
        load_after=load_now(),
        fuzzer_cpu=self_cpu(),
        out_dir=out_dir,
        pods_seen=len(pod_records),
        metrics=metrics,
    )

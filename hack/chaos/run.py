"""One chaos run: set up, submit, kill, partition, wait, check, report, tear down.

The bed (backends.py: the local cluster in this process, or a real control plane with the
fault proxy in front of it), the replicas' proxies, the fault schedule and the monitor live
in this process; the two controller replicas are subprocesses. Every phase below is the same
code on both backends. Phases:

1. The bed starts with the monitor fed by it; the `chaos` namespace is made; both replicas
   start and one of them takes the lease.
2. The faults start (faults.py) and a thread POSTs the jobs at `--rate` jobs/s.
3. Meanwhile the leader is SIGKILLed `--kills` times, a few seconds of work apart; after each
   kill the time until the lease names the other replica is the failover time, and the
   killed slot gets a fresh process at once. Halfway through, the leader is partitioned
   silently (its open connections go dead, new ones work) and a probe job is created: the
   time until the probe's first pod is the partition stall.
4. Once every job has finished (or the time budget is spent) the faults stop; after a short
   linger the jobs and pods are listed and judged (checks.py).
Every process started here is stopped before the run returns, whatever happened.
"""

from __future__ import annotations

import logging
import os
import random
import resource
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from hack.chaos.api import Api
from hack.chaos.backends import make_bed
from hack.chaos.checks import Verdict, judge
from hack.chaos.faults import FaultPlan, FaultSchedule
from hack.chaos.jobs import JOBS_PATH, KIND_BY_NAME, NAMESPACE, PlannedJob, job_body, plan_jobs
from hack.chaos.monitor import Monitor
from hack.chaos.replicas import LEASE_NAME, Exit, LeaderTimes, Replicas

PODS_PATH = f"/api/v1/namespaces/{NAMESPACE}/pods"
PROBE = "chaos-partition-probe"
FAILOVER_TIMEOUT = 60.0
PARTITION_TIMEOUT = 180.0
T = TypeVar("T")


class Timeout(RuntimeError):
    pass


@dataclass(frozen=True)
class ChaosConfig:
    jobs: int = 500
    kills: int = 10
    seed: int = 1
    rate: float = 5.0  # jobs POSTed per second
    partition: bool = True
    timeout: float = 600.0  # the whole run, setup to checks
    linger: float = 5.0  # calm seconds after the last job finished, before the checks
    workers: int = 4
    qps: float = 100.0
    burst: int = 200
    times: LeaderTimes = field(default_factory=LeaderTimes)
    faults: FaultPlan = field(default_factory=FaultPlan)
    workdir: Path | None = None
    keep: bool = False
    lossy_proxy: bool = False  # reproduce with the request-losing BlackholeProxy (proxy.py)
    backend: str = "local"  # or "real" (backends.py)

    def controller_flags(self) -> tuple[str, ...]:
        return (
            "--namespace", NAMESPACE,
            "--workers", str(self.workers),
            "--kube-api-qps", f"{self.qps:g}",
            "--kube-api-burst", str(self.burst),
            *self.times.flags(),
        )  # fmt: skip


@dataclass(frozen=True)
class Kill:
    slot: str
    pid: int
    failover: float | None  # seconds from SIGKILL to the lease naming the other replica
    to_slot: str | None


@dataclass(frozen=True)
class Partition:
    slot: str
    connections: int
    stall: float | None  # seconds from the probe's creation to its first pod
    leader_kept_lease: bool


@dataclass
class Result:
    config: ChaosConfig
    verdict: Verdict
    kills: list[Kill]
    partition: Partition | None
    exits: list[Exit]
    faults: dict[str, Any]
    requests: int
    driver_retries: int
    wall: float
    submit_seconds: float
    job_seconds: list[float]  # per job, creation to its first terminal state (monitor clock)
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    cpu_bed: float
    cpu_controllers: float
    cpu_server: float  # the real control plane's processes (0 on local: it is this process)
    faulted: str  # which clients the API faults reached
    bed_extra: dict[str, Any]
    workdir: Path
    notes: list[str] = field(default_factory=list)

    @property
    def failovers(self) -> list[float]:
        return [k.failover for k in self.kills if k.failover is not None]

    @property
    def passed(self) -> bool:
        return self.verdict.passed and not self.notes


class Submitter(threading.Thread):
    """POSTs the planned jobs at a steady rate (its own connection), registering each first."""

    def __init__(self, api: Api, jobs: list[PlannedJob], rate: float, monitor: Monitor) -> None:
        super().__init__(name="chaos-submit", daemon=True)
        self.api = api
        self.jobs = jobs
        self.rate = rate
        self.monitor = monitor
        self.created = 0
        self.seconds = 0.0
        self.error: Exception | None = None
        self.stopping = threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        try:
            for i, job in enumerate(self.jobs):
                if self.stopping.wait(max(0.0, start + i / self.rate - time.monotonic())):
                    return
                self.monitor.expect(job.name, job.kind.replicas)
                self.api.must("POST", JOBS_PATH, job_body(job))
                self.created += 1
        except Exception as err:
            self.error = err
        finally:
            self.seconds = time.monotonic() - start
            self.api.close()


class ChaosRun:
    def __init__(self, config: ChaosConfig, workdir: Path) -> None:
        self.config = config
        self.workdir = workdir
        self.rng = random.Random(config.seed)
        self.planned = plan_jobs(config.jobs, config.seed)
        self.probes: list[PlannedJob] = []  # jobs the run adds (the partition probe)
        self.started = time.monotonic()
        self.deadline = self.started + config.timeout
        self.monitor = Monitor(LEASE_NAME)
        self.bed = make_bed(config.backend, workdir)
        self.kills: list[Kill] = []
        self.partition_result: Partition | None = None
        self.notes: list[str] = []
        self.replicas: Replicas | None = None
        self.api: Api | None = None
        self.schedule: FaultSchedule | None = None
        self.submitter: Submitter | None = None

    # --- waiting, with the replicas supervised -------------------------------------------------
    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:6.1f}s] {text}", flush=True)

    def supervise(self) -> None:
        """Restart replicas that exited on their own; fail fast if the submitter failed."""
        assert self.replicas is not None
        for gone in self.replicas.reap():
            self.say(f"replica {gone.slot} (pid {gone.pid}) exited {gone.code}: {gone.why}")
        if self.submitter is not None and self.submitter.error is not None:
            raise RuntimeError(f"submitting jobs failed: {self.submitter.error}")
        if time.monotonic() > self.deadline:
            raise Timeout(f"the run's time budget ({self.config.timeout:g} s) is spent")

    def wait_for(self, what: str, probe: Callable[[], T | None], timeout: float) -> T:
        end = min(time.monotonic() + timeout, self.deadline)
        while True:
            self.supervise()
            found = probe()
            if found is not None and found is not False:
                return found
            if time.monotonic() > end:
                raise Timeout(f"waited {timeout:g} s for {what}")
            time.sleep(0.05)

    def pause(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.supervise()
            time.sleep(0.1)

    def leader(self) -> str | None:
        """The slot holding the lease, once the other slot's process is up too."""
        assert self.replicas is not None
        slot = self.replicas.slot_of(self.monitor.holder())
        if slot is None or not self.replicas.healthy(self.replicas.other(slot)):
            return None
        return slot

    # --- phases -----------------------------------------------------------------------------------
    def setup(self) -> None:
        self.say(f"starting the {self.bed.backend} cluster")
        self.bed.start(self.monitor)
        self.api = self.bed.driver_api()
        self.api.must("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        self.bed.ready(NAMESPACE)
        self.replicas = Replicas(
            self.workdir,
            self.bed.upstream_port,
            self.config.controller_flags(),
            lossy_proxy=self.config.lossy_proxy,
        )
        self.replicas.start_all()
        first = self.wait_for("a leader", self.leader, 90)
        self.say(f"replica {first} leads; {self.config.jobs} jobs to run")

    def start_work(self) -> None:
        assert self.replicas is not None
        proxies = [slot.proxy for slot in self.replicas.slots.values()]
        self.schedule = FaultSchedule(self.bed.faults, proxies, self.config.faults)
        self.schedule.start()
        jobs = list(self.planned)
        self.submitter = Submitter(self.bed.driver_api(), jobs, self.config.rate, self.monitor)
        self.submitter.start()

    def kill_gap(self) -> float:
        """Seconds of work between a takeover and the next kill: the kills spread over the
        submission window (failover itself takes about a lease), jittered by the seed."""
        window = self.config.jobs / self.config.rate
        base = max(1.5, window / max(1, self.config.kills) - self.config.times.lease - 0.5)
        return base * self.rng.uniform(0.5, 1.5)

    def kill_once(self, number: int) -> None:
        assert self.replicas is not None
        self.pause(self.kill_gap())
        slot = self.wait_for("a leader with a live standby", self.leader, FAILOVER_TIMEOUT)
        holder = self.monitor.holder()
        proc = self.replicas.slots[slot].proc
        pid = proc.pid if proc is not None else -1
        killed_at = time.monotonic()
        self.replicas.kill(slot)
        try:
            changed = self.wait_for(
                "the lease to change hands",
                lambda: self.monitor.holder_change_after(killed_at, holder),
                FAILOVER_TIMEOUT,
            )
        except Timeout:
            self.notes.append(f"kill {number}: no new lease holder {FAILOVER_TIMEOUT:g} s after")
            self.kills.append(Kill(slot, pid, None, None))
            return
        to_slot = self.replicas.slot_of(self.monitor.holder())
        self.kills.append(Kill(slot, pid, changed - killed_at, to_slot))
        self.say(
            f"kill {number}/{self.config.kills}: {slot} (pid {pid}) SIGKILLed, {to_slot} "
            f"leads {changed - killed_at:.2f} s later; {self.progress()}"
        )

    def progress(self) -> str:
        created = self.submitter.created if self.submitter else 0
        return f"{created} jobs created, {self.monitor.terminal_count()} finished"

    def partition(self) -> None:
        """Blackhole the leader's open connections, then time a new job's first pod."""
        assert self.replicas is not None and self.api is not None
        slot = self.wait_for("a leader with a live standby", self.leader, FAILOVER_TIMEOUT)
        proc = self.replicas.slots[slot].proc
        pid = proc.pid if proc is not None else -1
        dead = self.replicas.slots[slot].proxy.blackhole()
        probe = PlannedJob(PROBE, KIND_BY_NAME["success"], 1.0)
        self.probes.append(probe)
        self.monitor.expect(probe.name, probe.kind.replicas)
        self.api.must("POST", JOBS_PATH, job_body(probe))
        created = time.monotonic()
        self.say(f"partition: {dead} open connections of {slot} (pid {pid}, leading) went dead")
        try:
            first = self.wait_for(
                "the probe's first pod", lambda: self.monitor.first_pod_at(PROBE), PARTITION_TIMEOUT
            )
        except Timeout:
            self.notes.append(f"partition: the probe had no pod {PARTITION_TIMEOUT:g} s after")
            self.partition_result = Partition(slot, dead, None, False)
            return
        kept = self.replicas.slot_of(self.monitor.holder()) == slot
        self.partition_result = Partition(slot, dead, first - created, kept)
        self.say(
            f"partition: probe got its first pod {first - created:.1f} s after creation; "
            f"{slot} {'kept' if kept else 'lost'} the lease; {self.progress()}"
        )

    def chaos(self) -> None:
        for number in range(1, self.config.kills + 1):
            if self.config.partition and number == self.config.kills // 2 + 1:
                self.partition()
            self.kill_once(number)
        assert self.submitter is not None
        while self.submitter.is_alive():
            self.pause(0.5)
        self.supervise()  # a submit error surfaces here

    def drain(self) -> None:
        total = len(self.all_jobs())
        self.say(f"all kills done; waiting for {total} jobs to finish ({self.progress()})")
        self.wait_for(
            "every job to finish",
            lambda: self.monitor.wait_terminal(total, 0.5),
            self.deadline - time.monotonic(),
        )
        self.say(f"every job finished; faults off, {self.config.linger:g} s linger")
        assert self.schedule is not None
        self.schedule.stop()
        self.pause(self.config.linger)

    def collect(self) -> Verdict:
        assert self.api is not None
        jobs = self.api.must("GET", JOBS_PATH)["items"]
        pods = self.api.must("GET", PODS_PATH)["items"]
        by_name = {job["metadata"]["name"]: job for job in jobs}
        violations = self.monitor.violations + self.monitor.errors
        return judge(self.all_jobs(), by_name, self.monitor.snapshot(), pods, violations)

    def all_jobs(self) -> list[PlannedJob]:
        return self.planned + self.probes

    def teardown(self) -> None:
        if self.submitter is not None:
            self.submitter.stopping.set()
        if self.schedule is not None:
            self.schedule.stop()
        if self.replicas is not None:
            self.say("stopping the replicas")
            self.replicas.stop()
        if self.api is not None:
            self.api.close()
        self.say(f"stopping the {self.bed.backend} cluster")
        self.bed.stop()
        self.say("stopped")


def run(config: ChaosConfig) -> Result:
    """The whole run; never leaves a process behind (teardown in `finally`)."""
    workdir = config.workdir or Path(tempfile.mkdtemp(prefix="chaos-"))
    workdir.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    log_file = _log_to(workdir / "bed.log")
    chaos = ChaosRun(config, workdir)
    verdict = Verdict()
    try:
        chaos.setup()
        chaos.start_work()
        chaos.chaos()
        chaos.drain()
        verdict = chaos.collect()
    except (Timeout, RuntimeError) as err:
        chaos.notes.append(f"run aborted: {err}")
        chaos.say(f"ABORTED: {err}")
        if chaos.schedule is not None:
            chaos.schedule.stop()
        try:
            verdict = chaos.collect()
        except Exception as late:
            chaos.notes.append(f"could not collect the final state: {late!r}")
    finally:
        chaos.teardown()
        logging.getLogger().removeHandler(log_file)
        log_file.close()
    return _result(chaos, verdict, load_before)


def _log_to(path: Path) -> logging.Handler:
    """The bed's own warnings (the kubelet retrying a faulted write, hundreds of them) go to
    a file of the work directory, so the console shows the run's progress."""
    handler = logging.FileHandler(path)
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    logging.getLogger().addHandler(handler)  # the root logger's level stays WARNING
    return handler


def _result(chaos: ChaosRun, verdict: Verdict, load_before: tuple[float, ...]) -> Result:
    counts = chaos.schedule.counts if chaos.schedule is not None else None
    faults: dict[str, Any] = {}
    if counts is not None:
        faults = {
            "injected": dict(counts.injected),
            "consulted": counts.consulted,
            "watch_drops": counts.drops,
            "forced_410": counts.expires,
            "resets": counts.resets,
            "connections_reset": counts.connections_reset,
        }
    submitter = chaos.submitter
    server_cpu = chaos.bed.server_cpu()  # taken at stop, before its processes were reaped
    bed = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    result = Result(
        config=chaos.config,
        verdict=verdict,
        kills=chaos.kills,
        partition=chaos.partition_result,
        exits=chaos.replicas.exits if chaos.replicas is not None else [],
        faults=faults,
        requests=chaos.bed.request_count(),
        driver_retries=(chaos.api.retries if chaos.api else 0)
        + (submitter.api.retries if submitter else 0),
        wall=time.monotonic() - chaos.started,
        submit_seconds=submitter.seconds if submitter else 0.0,
        job_seconds=_job_seconds(chaos),
        load_before=(load_before[0], load_before[1], load_before[2]),
        load_after=os.getloadavg(),
        cpu_bed=bed.ru_utime + bed.ru_stime,
        cpu_controllers=children.ru_utime + children.ru_stime - server_cpu,
        cpu_server=server_cpu,
        faulted=chaos.bed.faulted,
        bed_extra=chaos.bed.extra(),
        workdir=chaos.workdir,
        notes=chaos.notes,
    )
    if result.passed and not chaos.config.keep and chaos.config.workdir is None:
        shutil.rmtree(chaos.workdir, ignore_errors=True)
    return result


def _job_seconds(chaos: ChaosRun) -> list[float]:
    traces = chaos.monitor.snapshot()
    out = []
    for job in chaos.all_jobs():
        trace = traces.get(job.name)
        if trace is not None and trace.terminal_at is not None and trace.created_at:
            out.append(trace.terminal_at - trace.created_at)
    return out

"""Our controller against a kopf operator and a "perfect client" on the same bed (issue 12).

Three contenders run the same lifecycle for N AscendJobs (pytorch, one Master and one Worker,
restartPolicy Never, pods running 0 s): the leader Service, two pods, status Created ->
Running -> Succeeded, the Service deleted at the end.

  ours     `ascendjob-controller run`, started as hack/bench_controller.py starts it
  kopf     hack/peers/kopf_operator.py under `kopf run --standalone` (kopf 1.x)
  perfect  hack/peers/perfect.py: raw watches and the minimal writes, no Events
  perfect-events  the perfect client also sending the Events ours sends (`--events`): an
           analysis row, not one of the issue's three. On two cores shared by the bed, the
           contender and the proxy, jobs/s follow the CPU a job costs all three
           (docs/benchmarks.md, "Tenth round"), Events included; ours / perfect-events shows
           how far ours is from a minimal client doing the same writes

Each contender gets, per round, a fresh local cluster (its own process, simulated kubelet on)
and a counting proxy (hack/peers/proxy.py, its own process) in front of it, so requests are
counted on the wire in the same way for all three. The contender runs in its own process;
its CPU (/proc/<pid>/stat) and its requests are taken from the first job POST until every
Service is gone and it has then sent nothing for 1 s (our Events trail the jobs); its peak
RSS is VmHWM at the end. Jobs/s runs from the first POST to the last job seen
Succeeded (a watch of the driver's, straight to the server, not through the proxy). Over
that time the bed's share of its core is given, and what the scheduler counted for its
threads (`bc.sched_stat`): how long they waited for a CPU, how often they were put on one,
and the mean wait, which says whether the bed's idle share is time without work.

Each run is checked for correctness: every job Succeeded, no job's state ever moved back
(every status the watch delivered), no Service left, exactly the two pods per job with our
names and an ownerReference to the job, each with the labels, annotations and training
container env our controller gives it (the children MindCluster's operator makes), and
exactly one successful Service and pod create per child, counted at the proxy a `--linger`
(6 s, past kopf's 5 s consistency timeout) after the end, so a create handler rerun that
resurrects a Service is caught.

One table, one row per contender, and the ratios of ours to each peer from the same run.
`--quick` runs a handful of jobs for the smoke test; its figures mean nothing. `--pin-bed`
puts each local cluster alone on one CPU and everything else on the other CPUs, as if the API
server had a machine of its own: an analysis of how much of a contender's figures is CPU
contention with the bed, not the set-up the goals are measured in. `--backend real` runs the
same rounds on a real kube-apiserver, etcd and kube-controller-manager built from Go modules
(hack/peers/beds.py; `make bench-real`): an analysis of which figures are the local bed's.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import ipaddress
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # `hack.*` when run as a script (then only hack/ is on the path)

from ascendjob_controller.job.desired import desired_pod  # noqa: E402
from ascendjob_controller.job.env import parse_job_with_meta  # noqa: E402
from hack import bench_controller as bc  # noqa: E402
from hack.peers.beds import BACKENDS, Bed, bed  # noqa: E402
from hack.peers.lifecycle import (  # noqa: E402
    INDEX_LABEL,
    RANK,
    SUCCEEDED,
    TERMINAL,
    TYPE_LABEL,
    pod_name,
    state_of_status,
)
from hack.peers.proxy import COUNTS_PATH  # noqa: E402

CONTENDERS = ("ours", "kopf", "perfect", "perfect-events")
#: What each ours / peer line calls the peer.
RATIO_PEERS = ("perfect", "kopf", "perfect-events")
SERVICES_PATH = f"/api/v1/namespaces/{bc.NAMESPACE}/services"
READY_TIMEOUT = 90.0


# -- the proxy and the contenders ------------------------------------------------------------


@dataclass(frozen=True)
class Proxy:
    url: str
    pid: int

    def counts(self) -> dict[str, int]:
        code, text = bc.get_text(self.url + COUNTS_PATH)
        if code != 200:
            raise RuntimeError(f"proxy counts answered {code}")
        return {k: int(v) for k, v in json.loads(text).items()}


@contextlib.contextmanager
def proxy(upstream: str) -> Iterator[Proxy]:
    """hack/peers/proxy.py in its own process, forwarding to `upstream`."""
    args = [sys.executable, "-m", "hack.peers.proxy", "--upstream", upstream]
    proc = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        yield Proxy(bc.ready_url(proc, "proxy"), proc.pid)
    finally:
        bc.stop_process(proc)


def kubeconfig_for(tmp: Path, server_url: str, proxy_url: str, name: str) -> Path:
    """A directory holding `kubeconfig`: the local cluster's, pointed at the proxy."""
    home = tmp / name
    home.mkdir()
    text = (tmp / "kubeconfig").read_text().replace(server_url, proxy_url)
    (home / "kubeconfig").write_text(text)
    return home


def _wait_watching(px: Proxy, proc: subprocess.Popen[bytes], log: Path) -> None:
    """A peer is ready once its AscendJob and pod watches are open (seen at the proxy)."""
    deadline = time.monotonic() + READY_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"contender exited with {proc.returncode}: see {log}")
        counts = px.counts()
        if any(k.startswith("watch ascendjobs ") for k in counts) and any(
            k.startswith("watch pods ") for k in counts
        ):
            break
        if time.monotonic() > deadline:
            raise RuntimeError(f"contender opened no watches in {READY_TIMEOUT:.0f} s: {log}")
        time.sleep(0.1)
    time.sleep(1.0)  # the initial (empty) lists are processed and indexed


@contextlib.contextmanager
def peer(name: str, home: Path, px: Proxy) -> Iterator[int]:
    """The kopf operator or the perfect client (with or without Events) in its own process;
    yields its pid."""
    if name == "kopf":
        args = [sys.executable, "-m", "kopf", "run", "--standalone"]
        args += ["--namespace", bc.NAMESPACE, "-m", "hack.peers.kopf_operator"]
    else:
        args = [sys.executable, "-m", "hack.peers.perfect", "--server", px.url]
        args += ["--namespace", bc.NAMESPACE]
        if name == "perfect-events":
            args.append("--events")
    env = {**os.environ, "KUBECONFIG": str(home / "kubeconfig")}
    log = home / f"{name}.log"
    with log.open("wb") as log_file:
        proc = subprocess.Popen(args, cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT)
    try:
        _wait_watching(px, proc, log)
        yield proc.pid
    finally:
        bc.stop_process(proc)


@contextlib.contextmanager
def contender(name: str, home: Path, px: Proxy) -> Iterator[int]:
    """Any contender, ready to work; yields its pid. Ours as bench_controller runs it."""
    if name == "ours":
        workers = bc.Config().workers
        with bc.controller(home, workers, qps=1000.0, burst=1000) as ctl:
            yield ctl.proc.pid
    else:
        with peer(name, home, px) as pid:
            yield pid


# -- watching the jobs -------------------------------------------------------------------------


@dataclass
class StateWatch:
    """Every state each job was seen in (straight from the server), and when it finished."""

    url: str
    expected: int
    states: dict[str, list[str]] = field(default_factory=dict)
    finished: dict[str, float] = field(default_factory=dict)
    done: threading.Event = field(default_factory=threading.Event)
    _stream: http.client.HTTPConnection | None = None

    def start(self) -> None:
        client = bc.Http(self.url)
        rv = client.must("GET", bc.JOBS_PATH + "?limit=1")["metadata"]["resourceVersion"]
        client.close()
        self._stream = http.client.HTTPConnection(client.host, client.port, timeout=900)
        self._stream.request(
            "GET", f"{bc.JOBS_PATH}?watch=true&resourceVersion={rv}&timeoutSeconds=900"
        )
        resp = self._stream.getresponse()
        threading.Thread(target=self._read, args=(resp,), daemon=True).start()

    def _read(self, resp: http.client.HTTPResponse) -> None:
        # Any error ends the reader: it is the stream being closed under it by close().
        with contextlib.suppress(Exception):
            for line in resp:
                now = time.perf_counter()
                event = json.loads(line)
                obj = event.get("object") or {}
                name = (obj.get("metadata") or {}).get("name")
                state = state_of_status(obj.get("status"))
                if event.get("type") not in ("ADDED", "MODIFIED") or not name or not state:
                    continue
                seen = self.states.setdefault(name, [])
                if not seen or seen[-1] != state:
                    seen.append(state)
                if state in TERMINAL:
                    self.finished.setdefault(name, now)
                if len(self.finished) >= self.expected:
                    self.done.set()

    def regressions(self) -> list[str]:
        """Jobs whose state ever moved back, as `name: A -> B -> ...`."""
        out = []
        for name, seen in sorted(self.states.items()):
            if any(RANK[b] < RANK[a] for a, b in itertools.pairwise(seen)):
                out.append(f"{name}: {' -> '.join(seen)}")
        return out

    def close(self) -> None:
        self.done.set()
        if self._stream is not None:
            with contextlib.suppress(OSError):
                if self._stream.sock is not None:
                    self._stream.sock.shutdown(2)
            self._stream.close()


# -- one run ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Result:
    name: str
    jobs: int
    seconds: float  # first POST -> last job Succeeded
    quiet_after: float  # first POST -> the contender's last request (the CPU window's end)
    cpu: float  # contender CPU s, first POST -> quiet (no request for 1 s)
    server_cpu: float  # the bed's (API server + kubelet) CPU s over the same window
    #: The bed's CPU from the first POST to the last job Succeeded, in seconds per second: the
    #: share of the one core a single Python process can use. Near 1 the bed sets the pace.
    bed_busy: float
    #: What the scheduler counted for the bed's threads over the same window: their time
    #: waiting for a CPU, and how often they got one (each wake-up, each GIL hand-over).
    bed_sched: bc.SchedStat
    proxy_cpu: float  # the counting proxy's CPU s over the same window (it shares the cores)
    peak_rss_kb: int
    requests: dict[str, int]  # "<verb> <resource>" -> count over the same window
    conflicts: int  # creates answered 409 AlreadyExists (reruns), up to the end of the linger
    problems: list[str]

    @property
    def jobs_per_s(self) -> float:
        return self.jobs / self.seconds

    @property
    def total_requests(self) -> int:
        return sum(self.requests.values())

    @property
    def events(self) -> int:
        return sum(n for key, n in self.requests.items() if key.split(" ")[1] == "events")


def deltas(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    """`<verb> <resource> <code>` counts sent between two snapshots of the proxy's counts."""
    return {key: n - before.get(key, 0) for key, n in after.items() if n != before.get(key, 0)}


def by_verb_and_resource(codes: dict[str, int]) -> dict[str, int]:
    """`<verb> <resource> <code>` -> `<verb> <resource>`, the answers' codes summed."""
    out: dict[str, int] = {}
    for key, n in codes.items():
        short = key.rsplit(" ", 1)[0]
        out[short] = out.get(short, 0) + n
    return out


def _wait_services_gone(url: str, timeout: float) -> bool:
    client = bc.Http(url)
    try:
        deadline = time.monotonic() + timeout
        while client.must("GET", SERVICES_PATH)["items"]:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True
    finally:
        client.close()


def _wait_quiet(px: Proxy, start: float, quiet: float = 1.0, timeout: float = 60.0) -> float:
    """Wait until the contender sent nothing for `quiet` s (our Events trail the jobs).

    Returns when, after `start`, its last request was seen, so the CPU and request window
    covers all the work the jobs caused and no more.
    """
    seen = bc.wait_still(px.counts, quiet=quiet, timeout=timeout, poll=0.1)
    return seen.changed_at - start


def pin(pids: list[int], cpus: set[int]) -> None:
    """Move every thread of `pids` onto `cpus` (threads they start later inherit it).

    `sched_setaffinity(pid)` moves only the thread whose id is `pid`; the local cluster's
    server, kubelet and watch threads already run, so each task of /proc/<pid>/task is
    moved, twice over in case one was starting during the first pass.
    """
    for _ in range(2):
        for pid in pids:
            for task in Path(f"/proc/{pid}/task").iterdir():
                with contextlib.suppress(ProcessLookupError):
                    os.sched_setaffinity(int(task.name), cpus)


def run_one(
    name: str,
    jobs: int,
    timeout: float,
    linger: float,
    bed_cpus: set[int] | None = None,
    backend: str = "local",
) -> Result:
    """One contender on a fresh bed (beds.py: the local cluster, or a real one) behind a fresh
    proxy (the bed's threads on `bed_cpus` when given)."""
    with tempfile.TemporaryDirectory(prefix=f"bench-peers-{name}-") as tmp_name:
        tmp = Path(tmp_name)
        with bed(backend, tmp) as server, proxy(server.url) as px:
            if bed_cpus:
                pin(server.pids(), bed_cpus)
            home = kubeconfig_for(tmp, server.url, px.url, name)
            with contender(name, home, px) as pid:
                watch = StateWatch(server.url, jobs)
                watch.start()
                try:
                    return measure(name, jobs, server, px, pid, watch, timeout, linger)
                finally:
                    watch.close()


def measure(
    name: str,
    jobs: int,
    server: Bed,
    px: Proxy,
    pid: int,
    watch: StateWatch,
    timeout: float,
    linger: float,
) -> Result:
    """Post the jobs, wait for them and their Services, take the figures, then check."""
    before = px.counts()
    cpu0, server0, proxy0 = bc.cpu_seconds(pid), server.cpu(), bc.cpu_seconds(px.pid)
    sched0 = server.sched()
    bodies = [bc.ascendjob(f"job-{i:05d}", 0) for i in range(jobs)]
    start = time.perf_counter()
    bc.create_many(server.url, bc.JOBS_PATH, bodies)
    if not watch.done.wait(timeout):
        raise RuntimeError(
            f"{name}: {len(watch.finished)} of {jobs} jobs finished after {timeout:.0f} s"
        )
    server_done, sched_done, done_at = server.cpu(), server.sched(), time.perf_counter()
    seconds = max(watch.finished.values()) - start
    drained = _wait_services_gone(server.url, 30.0)
    trailing = _wait_quiet(px, start)
    cpu, server_cpu = bc.cpu_seconds(pid) - cpu0, server.cpu() - server0
    proxy_cpu = bc.cpu_seconds(px.pid) - proxy0
    after = px.counts()
    peak = bc.rss_kb(pid)[1]
    time.sleep(linger)  # a create handler rerun would land in here
    codes = deltas(px.counts(), before)
    problems = [] if drained else ["Services still there 30 s after the end"]
    problems += verify(server.url, jobs, watch, codes)
    return Result(
        name=name,
        jobs=jobs,
        seconds=seconds,
        quiet_after=trailing,
        cpu=cpu,
        server_cpu=server_cpu,
        bed_busy=(server_done - server0) / (done_at - start),
        bed_sched=sched_done - sched0,
        proxy_cpu=proxy_cpu,
        peak_rss_kb=peak,
        requests=by_verb_and_resource(deltas(after, before)),
        conflicts=sum(
            n for k, n in codes.items() if k.startswith("create ") and k.endswith(" 409")
        ),
        problems=problems,
    )


# -- correctness ----------------------------------------------------------------------------


def _successful_creates(counts: dict[str, int], resource: str) -> int:
    return counts.get(f"create {resource} 201", 0)


def verify(url: str, jobs: int, watch: StateWatch, codes: dict[str, int]) -> list[str]:
    """Everything the issue asks of a correct contender; [] when all holds.

    `codes` are `<verb> <resource> <code>` deltas since the first POST, read after the linger.
    """
    problems = [f"status regressed: {r}" for r in watch.regressions()[:5]]
    final = {name: seen[-1] for name, seen in watch.states.items()}
    not_ok = sorted(n for n, s in final.items() if s != SUCCEEDED)
    if not_ok or len(final) != jobs:
        problems.append(f"{len(final) - len(not_ok)} of {jobs} jobs Succeeded ({not_ok[:3]})")
    client = bc.Http(url)
    try:
        services = client.must("GET", SERVICES_PATH)["items"]
        pods = client.must("GET", bc.PODS_PATH)["items"]
        stored = client.must("GET", bc.JOBS_PATH)["items"]
    finally:
        client.close()
    by_name = {j["metadata"]["name"]: j for j in stored}
    if services:
        problems.append(f"{len(services)} Services left, e.g. {services[0]['metadata']['name']}")
    problems += _check_pods(pods, by_name)
    problems += _check_replica_statuses(stored)
    for resource, per_job in (("services", 1), ("pods", 2)):
        made = _successful_creates(codes, resource)
        if made != per_job * jobs:
            problems.append(f"{made} {resource} created for {jobs} jobs (duplicates or missing)")
    deleted = codes.get("delete services 200", 0)
    if deleted != jobs:
        problems.append(f"{deleted} Service deletes succeeded for {jobs} jobs")
    return problems


def _check_replica_statuses(jobs: list[dict[str, Any]]) -> list[str]:
    """Every finished job's status has replicaStatuses (mandatory in the API reference) that
    count each replica type's pods as Succeeded, none active or failed."""
    problems = []
    for job in jobs:
        name = job["metadata"]["name"]
        counts = (job.get("status") or {}).get("replicaStatuses") or {}
        for rtype, spec in (job.get("spec") or {}).get("replicaSpecs", {}).items():
            seen = counts.get(rtype) or {}
            want = {"active": 0, "succeeded": int(spec.get("replicas", 1)), "failed": 0}
            if {k: seen.get(k) for k in want} != want:
                problems.append(f"job {name}: replicaStatuses.{rtype} is {seen or 'missing'}")
                break
        if len(problems) > 3:
            break
    return problems


def _check_pods(pods: list[dict[str, Any]], jobs: dict[str, dict[str, Any]]) -> list[str]:
    """Two pods per job with our names, owned by the job (its controller reference), each the
    pod our controller makes for it (`_pod_differs`)."""
    expected = {pod_name(job, rtype, 0): job for job in jobs for rtype in ("Master", "Worker")}
    names = [p["metadata"]["name"] for p in pods]
    problems = []
    if sorted(names) != sorted(expected):
        problems.append(f"{len(names)} pods, expected {len(expected)} with our names")
    for pod in pods:
        meta = pod["metadata"]
        job = expected.get(meta["name"])
        if job is None:
            continue
        owners = [o for o in meta.get("ownerReferences") or [] if o.get("controller")]
        if [o.get("uid") for o in owners] != [jobs[job]["metadata"]["uid"]]:
            problems.append(f"pod {meta['name']} is not owned by its job")
        elif difference := _pod_differs(pod, jobs[job]):
            problems.append(f"pod {meta['name']}: {difference}")
        if len(problems) > 5:
            break
    return problems


def with_server_defaults(env: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """`env` as kube-apiserver stores it: a fieldRef without an apiVersion gets "v1". The
    local cluster keeps it as sent and the real one defaults it, so both sides of a compare
    go through this."""
    if env is None:
        return None
    out = []
    for item in env:
        ref = (item.get("valueFrom") or {}).get("fieldRef")
        if ref is not None and "apiVersion" not in ref:
            item = {
                **item,
                "valueFrom": {**item["valueFrom"], "fieldRef": {"apiVersion": "v1", **ref}},
            }
        out.append(item)
    return out


def _pod_differs(pod: dict[str, Any], job: dict[str, Any]) -> str:
    """What the stored pod lacks of the one `ascendjob_controller.job.desired` makes; '' if
    nothing.

    The peers' pods must be the ones the job needs (docs/ascend-parity.md), not less work:
    our labels and annotations (a peer may add its own, as kopf adds the owner's labels), the
    training container's env exactly, restartPolicy. The Service is gone by now, so
    MASTER_ADDR is held to the ClusterIP this pod names, which must be an IPv4 address.
    """
    labels = pod["metadata"].get("labels") or {}
    types = (job.get("spec") or {}).get("replicaSpecs") or {}
    rtype = next((t for t in types if labels.get(TYPE_LABEL) == t.lower()), "")
    index = labels.get(INDEX_LABEL, "")
    if not rtype or not index.isdigit():
        return f"replica labels {labels.get(TYPE_LABEL)!r} / {index!r} name no replica"
    container = pod["spec"]["containers"][0]
    env = {item["name"]: item.get("value") for item in container.get("env") or []}
    cluster_ip = str(env.get("MASTER_ADDR") or "")
    try:
        ipaddress.IPv4Address(cluster_ip)
    except ValueError:
        return f"MASTER_ADDR {cluster_ip!r} is not a ClusterIP"
    want = desired_pod(parse_job_with_meta(job), rtype, int(index), cluster_ip, gang=False)
    for field_name in ("labels", "annotations"):
        have = pod["metadata"].get(field_name) or {}
        missing = {k: v for k, v in want["metadata"][field_name].items() if have.get(k) != v}
        if missing:
            return f"{field_name} lack {missing}"
    have_env = with_server_defaults(container.get("env"))
    if have_env != with_server_defaults(want["spec"]["containers"][0].get("env")):
        return f"env {sorted(env)} is not ours"
    if pod["spec"].get("restartPolicy") != want["spec"]["restartPolicy"]:
        return f"restartPolicy {pod['spec'].get('restartPolicy')}"
    return ""


# -- the table ---------------------------------------------------------------------------------


def ratio(a: float, b: float) -> str:
    return f"x{a / b:.2f}" if b else "n/a"


BED_NAMES = {
    "local": "a fresh local cluster",
    "real": "a fresh real kube-apiserver (etcd, kube-controller-manager, the simulated kubelet "
    "and a TLS bridge, all counted as the bed)",
}


def report(
    results: list[Result], rounds: int, linger: float, pin_bed: bool = False, backend: str = "local"
) -> None:
    """One row per contender, then the same-run ratios, the request mix and the checks."""
    header = [
        "",
        "jobs/s to all Succeeded",
        "all Succeeded after (s)",
        "last request after (s)",
        "controller CPU ms per job",
        "requests per job",
        "of them Events",
        "peak RSS MB",
        "bed CPU ms per job",
        "proxy CPU ms per job",
        "check",
    ]
    rows = [
        [
            r.name,
            f"{r.jobs_per_s:.1f}",
            f"{r.seconds:.2f}",
            f"{r.quiet_after:.2f}",
            f"{1000 * r.cpu / r.jobs:.1f}",
            f"{r.total_requests / r.jobs:.1f}",
            f"{r.events / r.jobs:.1f}",
            f"{r.peak_rss_kb / 1024:.1f}",
            f"{1000 * r.server_cpu / r.jobs:.1f}",
            f"{1000 * r.proxy_cpu / r.jobs:.1f}",
            "ok" if not r.problems else "FAILED",
        ]
        for r in results
    ]
    first = results[0]
    best = f"fastest of {rounds} rounds each" if rounds > 1 else "one round each"
    if pin_bed:
        best += "; the bed alone on one CPU, everything else on the other CPUs"
    bc.print_table(
        f"Peers: {first.jobs} AscendJobs x 2 pods posted at once, pods running 0 s, each "
        f"contender on {BED_NAMES[backend]} behind a counting proxy ({best})",
        header,
        rows,
    )
    by_name = {r.name: r for r in results}
    ours = by_name.get("ours")
    for other in RATIO_PEERS:
        if ours is None or other not in by_name:
            continue
        peer = by_name[other]
        print(
            f"  ours / {other} (same run): jobs/s {ratio(ours.jobs_per_s, peer.jobs_per_s)}, "
            f"CPU per job {ratio(ours.cpu, peer.cpu)}, "
            f"requests per job {ratio(ours.total_requests, peer.total_requests)}, "
            f"bed CPU per job {ratio(ours.server_cpu, peer.server_cpu)}, "
            f"peak RSS {ratio(ours.peak_rss_kb, peer.peak_rss_kb)}"
        )
    busy = ", ".join(f"{r.name} {100 * r.bed_busy:.0f} %" for r in results)
    if backend == "real":
        print(f"  the bed's CPU from the first POST to the last job Succeeded, per second: {busy}")
    else:
        print(
            f"  the bed's CPU from the first POST to the last job Succeeded, as a share of the "
            f"one core it can use: {busy}. Near 100 % the bed sets the pace, and jobs/s follow "
            f"its CPU per job, every contender's requests and watches included"
        )
    print(
        "  the bed's threads over the same time, waiting for a CPU (summed over threads, per "
        "second of the run), put on a CPU per job, and the mean wait each time: "
        + "; ".join(_sched_text(r) for r in results)
    )
    print("  requests per job, by verb and resource (all answers):")
    for r in results:
        mix = ", ".join(
            f"{key} {n / r.jobs:.2f}"
            for key, n in sorted(r.requests.items(), key=lambda kv: -kv[1])
        )
        print(f"    {r.name}: {mix}")
    print(f"  correctness, checked {linger:g} s after the last job finished:")
    for r in results:
        verdict = "ok" if not r.problems else "FAILED: " + "; ".join(r.problems)
        print(f"    {r.name}: {verdict} ({r.conflicts} creates answered 409 AlreadyExists)")


def _sched_text(r: Result) -> str:
    # Threads that exited within the window (the driver's POST connections) took their share
    # with them: a floor, never below 0.
    waiting = max(0.0, r.bed_sched.waiting) / r.seconds if r.seconds > 0 else 0.0
    return (
        f"{r.name} {100 * waiting:.0f} %, {r.bed_sched.slices / r.jobs:.0f} per job, "
        f"{1e6 * r.bed_sched.mean_wait:.0f} us"
    )


def round_ratios(ours: list[float], peer: list[float]) -> list[float]:
    """ours / peer jobs/s of each round (the two ran one after the other in that round)."""
    return [a / b for a, b in zip(ours, peer, strict=True) if b > 0]


def report_rounds(rates: dict[str, list[float]]) -> None:
    """Every round's jobs/s, and ours / perfect round by round with its median: the table
    keeps each contender's fastest round, and this shows how far one run's rounds spread on
    a shared machine (the ratios move more between rounds than most changes move them)."""
    if len(next(iter(rates.values()), [])) < 2:
        return
    print("  jobs/s round by round (each round runs every contender once, in rotated order):")
    for name, values in rates.items():
        print(f"    {name}: " + " ".join(f"{v:.1f}" for v in values))
    for peer in ("perfect", "perfect-events"):
        if "ours" not in rates or peer not in rates:
            continue
        each = round_ratios(rates["ours"], rates[peer])
        if each:
            print(
                f"    ours / {peer} per round: "
                + " ".join(f"x{r:.2f}" for r in each)
                + f" (median x{statistics.median(each):.2f})"
            )


def _machine_line() -> str:
    from importlib.metadata import version

    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    return (
        f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}, kopf {version('kopf')}, "
        f"commit {commit or 'unknown'}, load average {load}"
    )


def main(argv: list[str] | None = None) -> int:
    bc.stop_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="a handful of jobs, for the smoke test"
    )
    parser.add_argument("--jobs", type=int, default=300, help="AscendJobs per contender")
    parser.add_argument(
        "--rounds", type=int, default=1, help="rounds; each contender's fastest is kept"
    )
    parser.add_argument(
        "--linger", type=float, default=6.0, help="seconds waited before the final check"
    )
    parser.add_argument("--only", default=",".join(CONTENDERS), help="comma list of contenders")
    parser.add_argument(
        "--pin-bed",
        action="store_true",
        help="the local cluster alone on one CPU, the rest on the others (an analysis, not the "
        "goal's set-up: it shows what the contenders cost without the bed sharing a core)",
    )
    parser.add_argument(
        "--backend",
        choices=BACKENDS,
        default="local",
        help="the bed: the local cluster (the goals' set-up) or a real kube-apiserver built "
        "from Go modules (`make real-cluster-bin`; an analysis of how far the ratios are the "
        "local cluster's)",
    )
    args = parser.parse_args(argv)
    bed_cpus: set[int] | None = None
    if args.pin_bed:
        # The first CPU this process may use for the bed, the others for everything else, as
        # if the API server ran on a machine of its own.
        allowed = os.sched_getaffinity(0)
        bed_cpus = {min(allowed)}
        if not allowed - bed_cpus:
            parser.error("--pin-bed needs at least two CPUs")
        os.sched_setaffinity(0, allowed - bed_cpus)  # the proxy and the contender inherit it
    if args.quick:
        args.jobs, args.rounds, args.linger = 6, 1, 1.0
    names = [n for n in args.only.split(",") if n]
    if not set(names) <= set(CONTENDERS):
        parser.error(f"--only takes {', '.join(CONTENDERS)}")
    print(_machine_line(), flush=True)
    timeout = 120.0 + 2.0 * args.jobs
    best: dict[str, Result] = {}
    rates: dict[str, list[float]] = {name: [] for name in names}
    failed: list[str] = []
    for round_no in range(args.rounds):
        order = names[round_no % len(names) :] + names[: round_no % len(names)]
        for name in order:
            result = run_one(name, args.jobs, timeout, args.linger, bed_cpus, args.backend)
            failed += [f"{name}: {p}" for p in result.problems]
            rates[name].append(result.jobs_per_s)
            if name not in best or result.seconds < best[name].seconds:
                best[name] = result
    report([best[n] for n in names], args.rounds, args.linger, args.pin_bed, args.backend)
    report_rounds(rates)
    print(_machine_line().replace("machine:", "after the run:"), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

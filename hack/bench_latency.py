"""Benchmark the controller's reaction times (issue 12, P4; docs/benchmarks.md).

Two parts, each on a fresh local cluster (`ascendjob-controller local-cluster`) with the
controller in its own process, started as hack/bench_controller.py starts it:

  failure   N two-pod ExitCode jobs (Master + Worker) all Running under the simulated
            kubelet; then, one at a time, a Worker's status is patched to Failed with exit
            code 137 (a container killed by SIGKILL, which ExitCode retries). Timed by this
            driver's own pod watch: from the event that shows the pod Failed to the ADDED
            event of its replacement (same name, new uid). Server timestamps are whole
            seconds, too coarse for this. Prints p50/p95/p99 and the requests per failure.
  wide      One job with 1 Master and W Workers, the controller sending every request
            `--rtt` seconds late (bench_controller's controller_with_rtt): time from the
            job's POST until the driver has seen all 1 + W pods ADDED. No kubelet, so the
            server spends nothing on running them.

Every process started here is stopped before the script exits. `--quick` shrinks every size
so the smoke test finishes in seconds; its figures mean nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import shutil
import signal
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

from hack import bench_controller as bc  # noqa: E402

#: Long enough that no pod ends by itself while the benchmark runs.
FOREVER_SECONDS = 86_400
WAIT_SECONDS = 30.0


def loadavg() -> str:
    """The 1-minute load average, printed beside every figure (the machine is shared)."""
    return f"{os.getloadavg()[0]:.2f}"


@contextlib.contextmanager
def profiled(pids: dict[str, int], out: Path | None, part: str) -> Iterator[None]:
    """py-spy on each process (name -> pid) for the block: `<out>/<part>-<name>.txt`, in
    py-spy's raw format, for hack/profile_summary.py. Nothing when `out` is None."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    procs: list[subprocess.Popen[bytes]] = []
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for name, pid in pids.items():
            args = [spy, "record", "--pid", str(pid), "--rate", "200", "--format", "raw"]
            args += ["--gil", "-o", str(out / f"{part}-{name}.txt")]  # the GIL holder: CPU
            procs.append(subprocess.Popen(args, stdout=subprocess.DEVNULL))
        time.sleep(1.0)  # attached before the work starts
    try:
        yield
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGINT)  # py-spy writes its file on SIGINT
        for proc in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=bc.STOP_TIMEOUT)
            bc.stop_process(proc)


def exitcode_job(name: str, workers: int) -> dict[str, Any]:
    """A pytorch job whose pods run until they are failed by hand, restartPolicy ExitCode."""
    job = bc.ascendjob(name, FOREVER_SECONDS)
    specs = job["spec"]["replicaSpecs"]
    for spec in specs.values():
        spec["restartPolicy"] = "ExitCode"
    specs["Worker"]["replicas"] = workers
    job["spec"]["runPolicy"] = {"cleanPodPolicy": "Running"}  # no backoff limit
    return job


@dataclass
class PodWatch:
    """The bench namespace's pods as this driver sees them: when each name was ADDED (per
    uid) and when each uid was first seen Failed, on the driver's clock."""

    url: str
    added: dict[str, float] = field(default_factory=dict)  # uid -> seen ADDED
    uid_of: dict[str, str] = field(default_factory=dict)  # name -> newest uid
    failed: dict[str, float] = field(default_factory=dict)  # uid -> seen Failed
    running: set[str] = field(default_factory=set)  # uids seen Running
    changed: threading.Condition = field(default_factory=threading.Condition)
    _conn: http.client.HTTPConnection | None = None

    def start(self) -> None:
        client = bc.Http(self.url)
        rv = client.must("GET", bc.PODS_PATH + "?limit=1")["metadata"]["resourceVersion"]
        client.close()
        conn = http.client.HTTPConnection(client.host, client.port, timeout=3600)
        conn.request("GET", f"{bc.PODS_PATH}?watch=true&resourceVersion={rv}")
        self._conn = conn
        threading.Thread(target=self._read, args=(conn.getresponse(),), daemon=True).start()

    def _read(self, resp: http.client.HTTPResponse) -> None:
        # AttributeError: http.client's chunked reader, when close() shuts the socket.
        with contextlib.suppress(OSError, ValueError, AttributeError):
            while line := resp.readline():
                now = time.perf_counter()
                event = json.loads(line)
                self._note(event.get("type"), event.get("object") or {}, now)

    def _note(self, kind: str | None, pod: dict[str, Any], now: float) -> None:
        meta = pod.get("metadata") or {}
        uid, name = meta.get("uid"), meta.get("name")
        if not uid or not name or kind == "DELETED":
            return
        phase = (pod.get("status") or {}).get("phase")
        with self.changed:
            if kind == "ADDED":
                self.added.setdefault(uid, now)
                self.uid_of[name] = uid
            if phase == "Failed":
                self.failed.setdefault(uid, now)
            elif phase == "Running":
                self.running.add(uid)
            self.changed.notify_all()

    def wait(self, check: Any, timeout: float, what: str) -> None:
        """Block until `check()` (called under the lock) is true."""
        with self.changed:
            if not self.changed.wait_for(check, timeout):
                raise RuntimeError(f"timed out after {timeout:.0f} s waiting for {what}")

    def close(self) -> None:
        if self._conn is not None and self._conn.sock is not None:
            with contextlib.suppress(OSError):
                self._conn.sock.shutdown(2)
        if self._conn is not None:
            self._conn.close()


def fail_pod(client: bc.Http, name: str) -> None:
    """What a kubelet reports when the training container is SIGKILLed: phase Failed, 137."""
    path = f"{bc.PODS_PATH}/{name}"
    pod = client.must("GET", path)
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for status in statuses:
        started = ((status.get("state") or {}).get("running") or {}).get("startedAt", now)
        terminated = {"exitCode": 137, "reason": "Error", "startedAt": started, "finishedAt": now}
        status.update(ready=False, started=False, state={"terminated": terminated})
    body = json.dumps({"status": {"phase": "Failed", "containerStatuses": statuses}})
    headers = {"Content-Type": "application/merge-patch+json", "Accept": "application/json"}
    client.conn.request("PATCH", path + "/status", body=body, headers=headers)
    resp = client.conn.getresponse()
    answer = resp.read()
    if resp.status != 200:
        raise RuntimeError(f"PATCH {path}/status -> {resp.status}: {answer[:300]!r}")


@dataclass(frozen=True)
class FailureResult:
    jobs: int
    latencies: list[float]  # seconds, failed seen -> replacement ADDED
    requests: dict[str, float]
    controller_cpu: float
    load: tuple[str, str]
    idle: Idle


@dataclass(frozen=True)
class Idle:
    """The controller left alone with every job Running (issue 12, P5): what it still costs."""

    seconds: float
    cpu: float  # controller CPU s over the window
    requests: float  # API requests sent in the window, watches not counted
    watches: float  # watch (re)starts in the window
    reconciles: float

    @property
    def cpu_percent(self) -> float:
        return 100 * self.cpu / self.seconds


def measure_idle(ctl: bc.Controller, seconds: float) -> Idle:
    """Controller CPU, requests and reconciles over `seconds` of doing nothing."""
    before = ctl.metrics()  # the scrapes' own CPU stays outside the window
    cpu0, start = bc.cpu_seconds(ctl.proc.pid), time.monotonic()
    time.sleep(seconds)
    cpu1, took = bc.cpu_seconds(ctl.proc.pid), time.monotonic() - start
    after = ctl.metrics()

    def grew(key: str) -> float:
        return after.get(key, 0.0) - before.get(key, 0.0)

    watches = grew(f"{bc.DURATIONS}:WATCH")
    return Idle(took, cpu1 - cpu0, grew(bc.REQUESTS) - watches, watches, grew(bc.RECONCILES))


def _all_running(watch: PodWatch, names: list[str]) -> bool:
    return all(watch.uid_of.get(n) in watch.running for n in names)


def bench_failures(
    jobs: int, failures: int, gap: float, idle_seconds: float, profile: Path | None = None
) -> FailureResult:
    """`failures` Worker failures, one at a time, across `jobs` Running jobs, after
    `idle_seconds` of measuring the controller idle over them."""
    with tempfile.TemporaryDirectory(prefix="bench-lat-") as tmp_name:
        tmp = Path(tmp_name)
        with (
            bc.api_server(tmp, kubelet=True) as server,
            bc.controller(tmp, 4, 1000.0, 1000) as ctl,
        ):
            watch = PodWatch(server.url)
            watch.start()
            try:
                names = [f"lat-{i:05d}" for i in range(jobs)]
                bc.create_many(server.url, bc.JOBS_PATH, [exitcode_job(n, 1) for n in names])
                pods = [f"{n}-{rtype}-0" for n in names for rtype in ("master", "worker")]
                watch.wait(lambda: _all_running(watch, pods), 120 + jobs / 5, "pods Running")
                # The Running status writes and their Events (rate-limited per object) still
                # drain after the pods run; counted in the window they would be charged to
                # the failures (~4 extra requests each at 1,000 jobs) and delay the first.
                settled(ctl, quiet=1.0, timeout=60 + jobs / 10)
                idle = measure_idle(ctl, idle_seconds)
                pids = {"controller": ctl.proc.pid, "server": server.pid}
                with profiled(pids, profile, "failure"):
                    load_before = loadavg()
                    before, cpu_before = ctl.metrics(), bc.cpu_seconds(ctl.proc.pid)
                    latencies = _inject(server.url, watch, names, failures, gap)
                    after, cpu_after = ctl.metrics(), bc.cpu_seconds(ctl.proc.pid)
            finally:
                watch.close()
    requests = {
        m: after.get(f"{bc.REQUESTS}:{m}", 0.0) - before.get(f"{bc.REQUESTS}:{m}", 0.0)
        for m in bc.METHODS
    }
    requests[""] = after.get(bc.REQUESTS, 0.0) - before.get(bc.REQUESTS, 0.0)
    return FailureResult(
        jobs, latencies, requests, cpu_after - cpu_before, (load_before, loadavg()), idle
    )


def settled(ctl: bc.Controller, quiet: float, timeout: float) -> None:
    """Wait until the controller has sent no request for `quiet` seconds, its queue empty."""
    seen = bc.wait_still(
        ctl.metrics,
        quiet=quiet,
        timeout=timeout,
        poll=0.2,
        key=lambda sample: sample.get(bc.REQUESTS, 0.0),
        settled=lambda sample: sample.get("workqueue_depth", 1.0) == 0,
    )
    if not seen.still:
        raise RuntimeError(f"the controller kept sending requests for {timeout:.0f} s")


def _inject(url: str, watch: PodWatch, names: list[str], failures: int, gap: float) -> list[float]:
    """Fail Workers one by one (each job at most once per pass); the latency of each."""
    client = bc.Http(url)
    latencies: list[float] = []
    try:
        for i in range(failures):
            pod = f"{names[i % len(names)]}-worker-0"
            with watch.changed:
                old = watch.uid_of[pod]
            fail_pod(client, pod)
            watch.wait(
                lambda p=pod, o=old: watch.uid_of.get(p) not in (None, o) and o in watch.failed,
                WAIT_SECONDS,
                f"a replacement for {pod}",
            )
            with watch.changed:
                latencies.append(watch.added[watch.uid_of[pod]] - watch.failed[old])
            time.sleep(gap)  # the reconcile's trailing status write, before the next failure
    finally:
        client.close()
    return latencies


@dataclass(frozen=True)
class WideResult:
    workers: int
    rtt: float
    first_pod: float
    all_pods: float
    requests: dict[str, float]
    load: tuple[str, str]


def settled_metrics(ctl: bc.Controller, before: dict[str, float], posts: int) -> dict[str, float]:
    """The controller's metrics once it has counted `posts` POSTs, or after 10 s.

    A pod is seen ADDED as soon as the server stores it, a moment before the controller's
    client counts the response; under load that moment can exceed a fixed pause.
    """
    key = f"{bc.REQUESTS}:POST"
    deadline = time.monotonic() + 10.0
    while True:
        after = ctl.metrics()
        if after.get(key, 0.0) - before.get(key, 0.0) >= posts or time.monotonic() > deadline:
            return after
        time.sleep(0.1)


def bench_wide(workers: int, rtt: float, profile: Path | None = None) -> WideResult:
    """One job with `workers` Workers: POST -> every pod ADDED, with `rtt` per request."""
    with tempfile.TemporaryDirectory(prefix="bench-wide-") as tmp_name:
        tmp = Path(tmp_name)
        with (
            bc.api_server(tmp, kubelet=False) as server,
            bc.controller(tmp, 4, 1000.0, 1000, rtt=rtt) as ctl,
        ):
            watch = PodWatch(server.url)
            watch.start()
            pids = {"controller": ctl.proc.pid, "server": server.pid}
            try:
                load_before = loadavg()
                before = ctl.metrics()
                client = bc.Http(server.url)
                expected = 1 + workers
                with profiled(pids, profile, "wide"):
                    start = time.perf_counter()
                    client.must("POST", bc.JOBS_PATH, exitcode_job("wide", workers))
                    watch.wait(lambda: len(watch.added) >= expected, 120.0, f"{expected} pods")
                client.close()
                with watch.changed:
                    seen = sorted(watch.added.values())
                after = settled_metrics(ctl, before, expected + 1)
            finally:
                watch.close()
    requests = {
        m: after.get(f"{bc.REQUESTS}:{m}", 0.0) - before.get(f"{bc.REQUESTS}:{m}", 0.0)
        for m in bc.METHODS
    }
    return WideResult(
        workers, rtt, seen[0] - start, seen[-1] - start, requests, (load_before, loadavg())
    )


def report_failures(r: FailureResult, failures: int) -> None:
    ms = [1000 * v for v in r.latencies]
    per = {m: n / failures for m, n in r.requests.items() if n}
    verbs = ", ".join(f"{m} {n:.2f}" for m, n in sorted(per.items()) if m)
    rows = [
        ["failures", f"{len(ms)}"],
        ["p50 (ms)", f"{bc.percentile(ms, 50):.1f}"],
        ["p95 (ms)", f"{bc.percentile(ms, 95):.1f}"],
        ["p99 (ms)", f"{bc.percentile(ms, 99):.1f}"],
        ["max (ms)", f"{max(ms):.1f}"],
        ["controller requests per failure", f"{per.get('', 0.0):.2f}"],
        ["controller CPU ms per failure", f"{1000 * r.controller_cpu / failures:.1f}"],
    ]
    bc.print_table(
        f"Failure -> replacement pod created: {r.jobs} two-pod ExitCode jobs Running, a Worker "
        f"patched Failed (exit 137) one at a time, timed by the driver's pod watch "
        f"(load average {r.load[0]} -> {r.load[1]})",
        ["", "value"],
        rows,
    )
    print(f"  requests per failure by verb: {verbs}")
    idle = r.idle
    print(
        f"Idle with the {r.jobs} jobs Running, before the failures: controller CPU "
        f"{idle.cpu_percent:.2f}% of a core over {idle.seconds:.1f} s, {idle.requests:.0f} "
        f"requests besides watches ({idle.watches:.0f} watch restarts), "
        f"{idle.reconciles:.0f} reconciles"
    )


def report_wide(r: WideResult) -> None:
    per = ", ".join(f"{m} {int(n)}" for m, n in r.requests.items() if n)
    bc.print_table(
        f"A {r.workers}-worker job: POST -> all {1 + r.workers} pods seen ADDED, "
        f"{1000 * r.rtt:g} ms added to every controller request, no kubelet "
        f"(load average {r.load[0]} -> {r.load[1]})",
        ["", "seconds"],
        [["first pod", f"{r.first_pod:.2f}"], ["all pods", f"{r.all_pods:.2f}"]],
    )
    print(f"  controller requests: {per}")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [bc.RTT_FLAG]:  # bc.controller re-executes its own file; kept for safety
        return bc.controller_with_rtt(float(argv[1]), argv[2:])
    bc.stop_on_sigterm()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for the smoke test")
    parser.add_argument("--only", choices=["failure", "wide"], help="run one part")
    parser.add_argument("--jobs", type=int, default=1000, help="Running jobs in the failure run")
    parser.add_argument("--failures", type=int, default=200, help="Workers failed, one at a time")
    parser.add_argument("--gap", type=float, default=0.05, help="seconds between failures")
    parser.add_argument(
        "--idle", type=float, default=30.0, help="seconds the controller is watched idle first"
    )
    parser.add_argument("--workers", type=int, default=1000, help="Workers of the wide job")
    parser.add_argument("--rtt", type=float, default=0.01, help="seconds added per request")
    parser.add_argument(
        "--profile", type=Path, help="py-spy the controller and server into this directory"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.jobs, args.failures, args.workers, args.idle = 6, 12, 40, 1.0
    print(f"machine: {os.cpu_count()} CPUs, Python {sys.version.split()[0]}", flush=True)
    if args.only in (None, "failure"):
        result = bench_failures(args.jobs, args.failures, args.gap, args.idle, args.profile)
        report_failures(result, args.failures)
    if args.only in (None, "wide"):
        report_wide(bench_wide(args.workers, args.rtt, args.profile))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

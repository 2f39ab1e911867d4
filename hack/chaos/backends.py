"""The two test beds a chaos run can stand on, behind one small interface (`Bed`).

Everything else (the job mix, the replicas and their TCP proxies, the fault schedule, the
kills, the partition, the monitor's checks) is the same code on both. A bed supplies:
- `faults`: the `localcluster.faults.Faults` the schedule drives;
- `upstream_port`: where the replicas' `ChaosProxy`s connect (plain HTTP);
- `driver_api()`: the driver's own client, straight to the API server;
- the monitor's feed: every pod, job and lease write, in order per resource.

`local` (the default): the embedded local cluster in this process. Its fault hooks fail
requests from every client (the replicas, the simulated kubelet, the driver), and the monitor
is a listener on its store.

`real`: etcd, kube-apiserver and kube-controller-manager built by `make real-cluster-bin`
(`localcluster.realcluster.RealCluster`), plus the simulated kubelet. The replicas reach the
server through `FaultProxy` (faultproxy.py; plain HTTP in, HTTPS with the admin certificate
out), which consults its own `Faults` as the embedded server does. The kubelet, the driver,
kube-controller-manager and the monitor talk to kube-apiserver directly, so on this backend
only the two replicas get faults. The monitor's feed is three direct watches that resume
from their last resourceVersion; any relist (a 410, or a watch the server refused) is
recorded as a monitor gap, which fails the run.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import threading
import time
from pathlib import Path
from typing import Any, Protocol

from ascendjob_controller.localcluster import kubelet as kubelet_module
from ascendjob_controller.localcluster.cluster import LocalCluster
from ascendjob_controller.localcluster.faults import Faults
from ascendjob_controller.localcluster.realcluster import RealCluster
from hack.chaos.api import Api
from hack.chaos.faultproxy import FaultProxy
from hack.chaos.jobs import JOBS_PATH, NAMESPACE
from hack.chaos.monitor import JOBS, LEASES, PODS, Monitor

BACKENDS = ("local", "real")
WATCHED = (
    (PODS, f"/api/v1/namespaces/{NAMESPACE}/pods"),
    (JOBS, JOBS_PATH),
    (LEASES, f"/apis/coordination.k8s.io/v1/namespaces/{NAMESPACE}/leases"),
)


class Bed(Protocol):
    backend: str
    faulted: str  # which clients the API faults reach, for the report
    faults: Faults

    @property
    def upstream_port(self) -> int: ...

    def start(self, monitor: Monitor) -> None: ...
    def ready(self, namespace: str) -> None: ...
    def driver_api(self) -> Api: ...
    def request_count(self) -> int: ...
    def server_cpu(self) -> float: ...
    def extra(self) -> dict[str, Any]: ...
    def stop(self) -> None: ...


class LocalBed:
    """The embedded local cluster, its fault hooks and a store listener."""

    backend = "local"
    faulted = "every client (both replicas, the simulated kubelet, the driver)"

    def __init__(self, workdir: Path) -> None:
        self.cluster = LocalCluster(kubeconfig_path=workdir / "kubeconfig", kubelet=True)
        self.faults = self.cluster.faults

    @property
    def upstream_port(self) -> int:
        return self.cluster.port

    def start(self, monitor: Monitor) -> None:
        self.cluster.store.add_listener(monitor)
        self.cluster.start()

    def ready(self, namespace: str) -> None:
        """Nothing to wait for: the local cluster admits pods in a new namespace at once."""

    def driver_api(self) -> Api:
        return Api(self.cluster.url)

    def request_count(self) -> int:
        return int(self.cluster.request_count())

    def server_cpu(self) -> float:
        return 0.0  # the server is this process; its CPU is in the driver's figure

    def extra(self) -> dict[str, Any]:
        return {}

    def stop(self) -> None:
        self.cluster.stop()


class RealBed:
    """A real control plane, the fault proxy in front of it, and the monitor's watches."""

    backend = "real"
    faulted = "the two replicas only (kubelet, driver and monitor go to kube-apiserver directly)"

    def __init__(self, workdir: Path) -> None:
        self.cluster = RealCluster(kubeconfig_path=workdir / "kubeconfig", kubelet=True)
        self.proxy: FaultProxy | None = None
        self.feed: WatchFeed | None = None
        self.faults = Faults()  # replaced by the proxy's own once it runs
        self._context: ssl.SSLContext | None = None
        self._cpu = 0.0
        self._requests = 0

    @property
    def upstream_port(self) -> int:
        assert self.proxy is not None
        return self.proxy.port

    def start(self, monitor: Monitor) -> None:
        self.cluster.start(timeout=300.0)  # a loaded 2-core machine: etcd, TLS, CRDs
        creds = self.cluster.credentials()
        context = ssl.create_default_context(cafile=creds.ca_file)
        context.load_cert_chain(str(creds.cert_file), str(creds.key_file))
        self._context = context
        self.proxy = FaultProxy(self.cluster.url, context)
        self.faults = self.proxy.faults
        self.feed = WatchFeed(self.cluster.url, creds, monitor)

    def ready(self, namespace: str) -> None:
        """Pods are refused until the namespace's default ServiceAccount exists; the monitor's
        watches must have listed before anything is written there."""
        self.cluster.wait_default_service_account(namespace, timeout=120.0)
        assert self.feed is not None
        self.feed.start()

    def driver_api(self) -> Api:
        return Api(self.cluster.url, context=self._context)

    def request_count(self) -> int:
        return self._requests or _quiet(self.cluster.request_count, 0)

    def server_cpu(self) -> float:
        return self._cpu or _process_cpu(getattr(self.cluster, "_procs", []))

    def extra(self) -> dict[str, Any]:
        proxy = self.proxy
        if proxy is None:
            return {}
        return {
            "proxy_requests": proxy.requests,
            "proxy_watches": proxy.watches,
            "proxy_upstream_errors": proxy.upstream_errors,
            "proxy_latency": {k: _spread(v) for k, v in proxy.latency.items()},
            "monitor_relists": self.feed.relists if self.feed is not None else 0,
        }

    def stop(self) -> None:
        """Take the control plane's figures while it still runs, then stop everything."""
        if self.feed is not None:
            self.feed.stop()
        self._requests = _quiet(self.cluster.request_count, 0)
        self._cpu = _process_cpu(getattr(self.cluster, "_procs", []))
        if self.proxy is not None:
            self.proxy.close()
        self.cluster.stop()


class WatchFeed:
    """The monitor's three direct watches, with the simulated kubelet's LIST+WATCH loop.

    That loop (`kubelet._Watcher`) resumes from the last resourceVersion after a stream ends
    or breaks, and relists only after a 410 or a refused watch. A relist after the first is a
    gap (whatever happened in between is unseen), so it goes to `Monitor.gap`. The loop may
    deliver an event twice when a broken stream resumes from an older resourceVersion, so
    each resource's events are passed on only if newer than the last one passed.
    """

    def __init__(self, url: str, credentials: Any, monitor: Monitor) -> None:
        self.monitor = monitor
        self.relists = 0
        self.stopping = threading.Event()
        self._client = kubelet_module._Http(url, timeout=30.0, credentials=credentials)
        self._listed: set[str] = set()
        self._last_rv: dict[str, int] = {}
        self._lock = threading.Lock()
        self._watchers = [
            kubelet_module._Watcher(
                self._client,
                path,
                on_event=self._on_event(resource),
                on_relist=self._on_relist(resource),
                stopping=self.stopping,
                name=f"chaos-monitor-{resource}",
            )
            for resource, path in WATCHED
        ]
        self._threads = [
            threading.Thread(target=w.run, name=w.name, daemon=True) for w in self._watchers
        ]

    def start(self, timeout: float = 60.0) -> None:
        for thread in self._threads:
            thread.start()
        deadline = time.monotonic() + timeout
        while len(self._listed) < len(WATCHED):
            if time.monotonic() > deadline:
                raise RuntimeError(f"monitor watches not listed after {timeout:g} s")
            time.sleep(0.05)

    def _on_event(self, resource: str) -> Any:
        def deliver(kind: str, obj: dict[str, Any]) -> None:
            rv = int((obj.get("metadata") or {}).get("resourceVersion") or 0)
            with self._lock:
                if rv <= self._last_rv.get(resource, 0):
                    return  # already delivered before a stream broke and resumed
                self._last_rv[resource] = rv
            self.monitor.observe(resource, kind, obj, rv)

        return deliver

    def _on_relist(self, resource: str) -> Any:
        def relisted(items: list[dict[str, Any]]) -> None:
            with self._lock:
                first = resource not in self._listed
                self._listed.add(resource)
                if not first:
                    self.relists += 1
            if first:
                for obj in items:  # a new namespace: normally nothing
                    deliver = self._on_event(resource)
                    deliver("ADDED", obj)
            else:
                self.monitor.gap(f"the {resource} watch had to relist ({len(items)} items)")

        return relisted

    def stop(self) -> None:
        self.stopping.set()
        for watcher in self._watchers:
            watcher.interrupt()
        for thread in self._threads:
            thread.join(timeout=10)


def _spread(values: list[float]) -> dict[str, float]:
    """p50, p99 and max of some durations, in seconds (0 when there are none)."""
    if not values:
        return {"n": 0, "p50": 0.0, "p99": 0.0, "max": 0.0}
    ranked = sorted(values)
    return {
        "n": len(ranked),
        "p50": ranked[len(ranked) // 2],
        "p99": ranked[min(len(ranked) - 1, int(0.99 * len(ranked)))],
        "max": ranked[-1],
    }


def _quiet(fn: Any, default: int) -> int:
    """`fn()`, or `default` if the server is already gone (figures only, never a verdict)."""
    try:
        return int(fn())
    except Exception:
        return default


def _process_cpu(procs: list[Any]) -> float:
    """User + system CPU seconds of live processes, from /proc (etcd, kube-apiserver, kcm)."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for proc in procs:
        with contextlib.suppress(OSError, ValueError, IndexError):
            stat = Path(f"/proc/{proc.pid}/stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
    return total


def make_bed(backend: str, workdir: Path) -> Bed:
    if backend == "real":
        return RealBed(workdir)
    if backend == "local":
        return LocalBed(workdir)
    raise ValueError(f"backend must be one of {BACKENDS}, not {backend!r}")

"""The API servers bench_peers runs its contenders on: the local cluster, or a real one.

Both give the bench the same thing, a `Bed`: a plain-HTTP URL that needs no credentials
(what the counting proxy and the bench's driver talk to) and the processes whose CPU is the
bed's.

- `local`: `ascendjob-controller local-cluster` with its simulated kubelet, one process. The
  goals of issue 12 are measured on it.
- `real`: etcd, kube-apiserver and kube-controller-manager built from Go modules (`make
  real-cluster-bin`), the simulated kubelet, and tlsbridge.py in front, since kube-apiserver
  serves only HTTPS and wants a client certificate. The bed's CPU is the whole tree: the
  control plane, the kubelet and the bridge. It shows whether the local cluster's own costs
  (a Python API server spends far more CPU per request than kube-apiserver) shape the ratios.
"""

from __future__ import annotations

import base64
import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from ascendjob_controller.localcluster.cluster import kubeconfig_text
from ascendjob_controller.localcluster.realcluster import free_port
from hack import bench_controller as bc

REPO = Path(__file__).resolve().parents[2]
BACKENDS = ("local", "real")
#: Starting etcd, kube-apiserver and kube-controller-manager on a loaded 2-core machine.
REAL_START_TIMEOUT = 300.0


@dataclass(frozen=True)
class Bed:
    url: str  # plain HTTP, no credentials
    roots: tuple[int, ...]  # the bed's processes; their descendants are the bed's too

    def pids(self) -> list[int]:
        """The roots and every live descendant of theirs."""
        return descendants(self.roots, parents())

    def cpu(self) -> float:
        """User + system CPU s the bed's processes have used so far."""
        total = 0.0
        for pid in self.pids():
            with contextlib.suppress(FileNotFoundError, ProcessLookupError):
                total += bc.cpu_seconds(pid)
        return total

    def sched(self) -> bc.SchedStat:
        """The scheduler's counts for the bed's processes so far (`bc.sched_stat`)."""
        return sum((bc.sched_stat(pid) for pid in self.pids()), bc.SchedStat())


def parents() -> dict[int, int]:
    """pid -> parent pid of every process, from /proc."""
    out: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # exited while we looked
        out[int(entry.name)] = int(fields[1])
    return out


def descendants(roots: tuple[int, ...], parent_of: dict[int, int]) -> list[int]:
    """`roots` and every process below them in `parent_of` (a pure function, for tests)."""
    children: dict[int, list[int]] = {}
    for pid, parent in parent_of.items():
        children.setdefault(parent, []).append(pid)
    found: list[int] = []
    todo = list(roots)
    while todo:
        pid = todo.pop()
        if pid in found:
            continue
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


@contextlib.contextmanager
def local_bed(tmp: Path) -> Iterator[Bed]:
    """The local cluster, its kubelet on; `tmp/kubeconfig` points at it."""
    with bc.api_server(tmp, kubelet=True) as server:
        yield Bed(server.url, (server.pid,))


@contextlib.contextmanager
def real_bed(tmp: Path) -> Iterator[Bed]:
    """A real control plane with the simulated kubelet, behind the TLS bridge; the bench
    namespace is created and its default ServiceAccount exists (pods need it), and
    `tmp/kubeconfig` points at the bridge with no credentials, as the local one does."""
    args = [sys.executable, "-m", "ascendjob_controller.localcluster.realcluster"]
    args += ["--port", str(free_port()), "--kubeconfig", str(tmp / "real.kubeconfig")]
    cluster = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        upstream = bc.ready_url(cluster, "the real cluster")
        pki = _write_pki(tmp / "real.kubeconfig", tmp / "pki")
        args = [sys.executable, "-m", "hack.peers.tlsbridge", "--upstream", upstream]
        args += ["--ca", str(pki["ca"]), "--cert", str(pki["cert"]), "--key", str(pki["key"])]
        bridge = subprocess.Popen(args, cwd=REPO, stdout=subprocess.PIPE, text=True)
        try:
            url = bc.ready_url(bridge, "the TLS bridge")
            (tmp / "kubeconfig").write_text(kubeconfig_text(url))
            _create_namespace(url)
            yield Bed(url, (cluster.pid, bridge.pid))
        finally:
            bc.stop_process(bridge)
    finally:
        bc.stop_process(cluster)


def _write_pki(kubeconfig: Path, out: Path) -> dict[str, Path]:
    """The CA and the admin certificate and key a real cluster's kubeconfig embeds, as files."""
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    out.mkdir(mode=0o700)
    files = {
        "ca": cluster["certificate-authority-data"],
        "cert": user["client-certificate-data"],
        "key": user["client-key-data"],
    }
    paths: dict[str, Path] = {}
    for name, data in files.items():
        paths[name] = out / f"{name}.pem"
        paths[name].write_bytes(base64.b64decode(data))
        os.chmod(paths[name], 0o600)
    return paths


def _create_namespace(url: str, timeout: float = 60.0) -> None:
    """The bench namespace, then wait for kube-controller-manager to give it its default
    ServiceAccount: without it the ServiceAccount admission plugin refuses every pod."""
    client = bc.Http(url)
    try:
        client.must("POST", "/api/v1/namespaces", {"metadata": {"name": bc.NAMESPACE}})
        path = f"/api/v1/namespaces/{bc.NAMESPACE}/serviceaccounts/default"
        deadline = time.monotonic() + timeout
        while client.request("GET", path)[0] != 200:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no default ServiceAccount in {bc.NAMESPACE} after {timeout} s")
            time.sleep(0.2)
    finally:
        client.close()


@contextlib.contextmanager
def bed(backend: str, tmp: Path) -> Iterator[Bed]:
    """The bed `backend` names (one of BACKENDS)."""
    if backend == "real":
        with real_bed(tmp) as real:
            yield real
    elif backend == "local":
        with local_bed(tmp) as local:
            yield local
    else:
        raise ValueError(f"unknown backend {backend!r}; choose from {', '.join(BACKENDS)}")

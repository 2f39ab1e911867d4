"""A simulated kubelet (plus a one-line Volcano scheduler) that drives pods through the API.

It is a client of the API server like any other, so everything it does is visible to
watchers exactly as a real kubelet's writes would be: bind (spec.nodeName), then through the
pods/status subresource Pending -> Running -> Succeeded/Failed, or an in-place container
restart for OnFailure/Always. Each pod's script comes from its annotations:

- `sim.acjob.local/run-seconds` (default 2): how long each run lasts.
- `sim.acjob.local/exit-code` (default "0"): a comma list; the k-th run of a pod with that
  namespace/name (an in-place restart or a re-created pod) exits with the k-th code, and the
  last code repeats. The run counter survives pod deletion, which is what lets a test script
  "fail once, then succeed" across a controller that re-creates pods.

Any scheduling.volcano.sh PodGroup with no phase (or Pending) is moved to Inqueue.

It runs `nodes` simulated nodes (one by default), each with 8 NPUs. A pod requesting
`huawei.com/Ascend910` (or `huawei.com/npu`) gets devices of its node and the annotations the
Ascend device plugin writes, before it turns Running (see `devices.py`).

Threads: one watcher per resource keeps a cache current (LIST then WATCH, resuming from the
last resourceVersion, relisting on 410); one driver applies due transitions every `poll`
seconds, and whenever a watch event arrives. The driver takes them from a heap ordered by due
time: it used to scan every pod it tracks on every wake, which with 2,000 Running pods was a
sixth of the bed's CPU while a benchmark failed pods one at a time.

Errors are logged and retried; nothing kills the threads. stop() closes the watch sockets so
it returns promptly.

It talks HTTP to any API server (the real-cluster lane's kube-apiserver included). The local
cluster gives it an in-process `transport` instead (`inprocess.py`): the same handler code
without the sockets, because the round trips were a third of the bed's CPU.
"""

from __future__ import annotations

import contextlib
import heapq
import http.client
import itertools
import json
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from ascendjob_controller.localcluster import builtin, devices, fastjson
from ascendjob_controller.localcluster.timestamps import now_rfc3339

log = logging.getLogger(__name__)

RUN_SECONDS_ANNOTATION = "sim.acjob.local/run-seconds"
EXIT_CODE_ANNOTATION = "sim.acjob.local/exit-code"
DEFAULT_RUN_SECONDS = 2.0
HOST_IP = "172.18.0.2"
#: As a real kubelet names itself (client-go's default User-Agent): the API server makes its
#: writes' managedFields entries "kubelet", apart from the pod's creator (without one, both
#: an anonymous creator and the kubelet were "unknown", and their entries merged).
USER_AGENT = "kubelet/v1.37.2 (linux/amd64) kubernetes/0000000"
PODGROUPS_PATH = "/apis/scheduling.volcano.sh/v1beta1/podgroups"


def parse_exit_codes(value: str | None) -> list[int]:
    """ "137,0" -> [137, 0]; anything unreadable counts as 1 (a crash), empty as [0]."""
    if not value or not value.strip():
        return [0]
    codes = []
    for part in value.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            codes.append(int(part))
        except ValueError:
            codes.append(1)
    return codes or [0]


def parse_run_seconds(value: str | None) -> float:
    try:
        seconds = float(value) if value is not None else DEFAULT_RUN_SECONDS
    except ValueError:
        return DEFAULT_RUN_SECONDS
    return max(0.0, seconds)


def exit_code_for_run(codes: list[int], run_index: int) -> int:
    return codes[min(run_index, len(codes) - 1)]


def _uid_test(pod: dict[str, Any]) -> dict[str, Any]:
    """The JSON-patch op that makes a write meant for a deleted pod miss its successor."""
    return {"op": "test", "path": "/metadata/uid", "value": (pod.get("metadata") or {}).get("uid")}


def _add_ops(base: str, current: Any, fields: dict[str, Any]) -> list[dict[str, Any]]:
    """JSON-patch `add`s of `fields` under `base`, creating the map first when it is absent."""
    ops: list[dict[str, Any]] = []
    if not isinstance(current, dict):
        ops.append({"op": "add", "path": base, "value": {}})
    for key, value in fields.items():
        pointer = key.replace("~", "~0").replace("/", "~1")
        ops.append({"op": "add", "path": f"{base}/{pointer}", "value": value})
    return ops


def _sim_nodes(first: str, count: int) -> list[devices.SimNode]:
    """`first` (at HOST_IP), then `<first without its number>2`, ... at the next addresses."""
    prefix = first.rstrip("0123456789")
    names = [first] + [f"{prefix}{i}" for i in range(2, count + 1)]
    base = HOST_IP.rsplit(".", 1)
    start = int(base[1])
    return [devices.SimNode(name, f"{base[0]}.{start + i}", i + 1) for i, name in enumerate(names)]


def _key(pod: dict[str, Any]) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def _terminated(code: int, started: str, finished: str) -> dict[str, Any]:
    return {
        "exitCode": code,
        "reason": "Completed" if code == 0 else "Error",
        "startedAt": started,
        "finishedAt": finished,
    }


@dataclass
class _PodRun:
    """What the kubelet knows about one pod (by uid) beyond the object itself."""

    key: str
    stage: str = "new"  # new -> bound -> running -> done
    due: float = 0.0  # monotonic time of the next transition
    run_index: int = 0  # which run (counted per namespace/name) is in progress
    started_at: str = ""
    restart_count: int = 0
    last_terminated: dict[str, Any] | None = None
    # condition type -> (status, lastTransitionTime): times move only when a status flips
    transitions: dict[str, tuple[str, str]] = field(default_factory=dict)
    pod_ip: str = ""
    start_time: str = ""
    host_ip: str = HOST_IP
    # Which entry of the driver's heap is this run's current one; older entries are stale.
    heap_seq: int = -1


@dataclass(frozen=True)
class Credentials:
    """How the kubelet proves who it is to an API server that checks (a real one does).

    The local cluster needs none. A real kube-apiserver takes a client certificate signed by
    its client CA, or a bearer token; `ca_file` verifies the server's own certificate.
    """

    ca_file: str | None = None
    cert_file: str | None = None
    key_file: str | None = None
    token: str | None = None


class WatchLoop(Protocol):
    """A thread body that keeps a collection's cache current through two callbacks."""

    name: str

    def run(self) -> None: ...

    def interrupt(self) -> None: ...


class Transport(Protocol):
    """How the kubelet reaches its API server: `_Http` over a socket, or the local cluster's
    in-process `DirectClient` (`inprocess.py`), which serves the same requests without one."""

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        decode: bool = True,
    ) -> tuple[int, Any]:
        """(status code, decoded body); the body is None unless `decode` (writes whose
        answer the kubelet does not read skip decoding a whole pod)."""
        ...

    def close(self) -> None: ...

    def watcher(
        self,
        path: str,
        on_event: Callable[[str, dict[str, Any]], None],
        on_relist: Callable[[list[dict[str, Any]]], None],
        stopping: threading.Event,
        name: str,
    ) -> WatchLoop: ...


class _Http:
    """A tiny JSON-over-HTTP client, one connection per thread, reconnecting on errors."""

    def __init__(
        self, api_url: str, timeout: float = 10.0, credentials: Credentials | None = None
    ) -> None:
        parts = urlsplit(api_url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or (443 if self.https else 80)
        self.timeout = timeout
        self.credentials = credentials or Credentials()
        self._local = threading.local()
        self._ssl: ssl.SSLContext | None = self._ssl_context() if self.https else None

    def _ssl_context(self) -> ssl.SSLContext:
        creds = self.credentials
        if creds.ca_file:
            ctx = ssl.create_default_context(cafile=creds.ca_file)
        else:
            ctx = ssl.create_default_context()
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
        if creds.cert_file and creds.key_file:
            ctx.load_cert_chain(creds.cert_file, creds.key_file)
        return ctx

    def headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if self.credentials.token:
            headers["Authorization"] = f"Bearer {self.credentials.token}"
        return headers

    def connect(self, timeout: float | None = None) -> http.client.HTTPConnection:
        t = self.timeout if timeout is None else timeout
        if self._ssl is not None:
            return http.client.HTTPSConnection(self.host, self.port, timeout=t, context=self._ssl)
        return http.client.HTTPConnection(self.host, self.port, timeout=t)

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        decode: bool = True,
    ) -> tuple[int, Any]:
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = self.connect()
            self._local.conn = conn
        payload = None if body is None else json.dumps(body).encode()
        headers = self.headers()
        if payload is not None:
            headers["Content-Type"] = content_type
        try:
            conn.request(method, path, body=payload, headers=headers)
            resp = conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException):
            conn.close()
            self._local.conn = None
            raise
        try:
            data = fastjson.loads(raw) if raw and decode else None
        except ValueError:
            data = None
        return resp.status, data

    def close(self) -> None:
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def watcher(
        self,
        path: str,
        on_event: Callable[[str, dict[str, Any]], None],
        on_relist: Callable[[list[dict[str, Any]]], None],
        stopping: threading.Event,
        name: str,
    ) -> _Watcher:
        return _Watcher(self, path, on_event, on_relist, stopping, name)


@dataclass
class _Watcher:
    """LIST+WATCH of one collection into a callback; survives errors, 410s and stream ends."""

    client: _Http
    path: str
    on_event: Callable[[str, dict[str, Any]], None]
    on_relist: Callable[[list[dict[str, Any]]], None]
    stopping: threading.Event
    name: str
    _conn: http.client.HTTPConnection | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def interrupt(self) -> None:
        with self._lock:
            conn = self._conn
        if conn is not None and conn.sock is not None:
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)

    def run(self) -> None:
        rv = ""
        while not self.stopping.is_set():
            try:
                if not rv:
                    rv = self._list()
                    if not rv:
                        self.stopping.wait(1.0)  # e.g. the PodGroup CRD is not installed
                        continue
                opened = time.monotonic()
                rv = self._watch(rv)
                if time.monotonic() - opened < 0.1:
                    self.stopping.wait(0.2)  # a watch refused or cut at once: do not spin
            except Exception as err:  # the loop must survive anything
                if not self.stopping.is_set():
                    log.warning("kubelet %s watcher error, retrying: %s", self.name, err)
                    self.stopping.wait(0.5)
        self.client.close()  # this thread's connection

    def _list(self) -> str:
        status, data = self.client.request("GET", self.path)
        if status != 200 or not isinstance(data, dict):
            if status != 404:
                log.warning("kubelet %s list failed: %s", self.name, status)
            return ""
        self.on_relist(list(data.get("items") or []))
        return str((data.get("metadata") or {}).get("resourceVersion") or "")

    def _watch(self, rv: str) -> str:
        """Stream events until the server ends the watch; return the rv to resume from
        ("" to relist)."""
        # Read timeout: the watch's own 60 s plus a margin. The local cluster bookmarks every few
        # seconds, kube-apiserver about once a minute, so a shorter one would cut healthy watches.
        conn = self.client.connect(timeout=75.0)
        with self._lock:
            self._conn = conn
        try:
            query = f"?watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion={rv}"
            conn.request("GET", self.path + query, headers=self.client.headers())
            resp = conn.getresponse()
            if resp.status != 200:
                resp.read()
                return ""  # 410 Gone, or the resource vanished (404): relist
            while not self.stopping.is_set():
                line = resp.readline()
                if not line:
                    return rv
                line = line.strip()
                if not line:
                    continue
                event = fastjson.loads(line)
                kind, obj = event.get("type"), event.get("object") or {}
                if kind == "ERROR":
                    return ""  # 410 Expired or another failure: relist
                new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                if new_rv:
                    rv = str(new_rv)
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    self.on_event(kind, obj)
            return rv
        finally:
            with self._lock:
                self._conn = None
            conn.close()


class SimulatedKubelet:
    """Runs every pod on one simulated node; see the module docstring for the script."""

    def __init__(
        self,
        api_url: str,
        node_name: str = "local-node-1",
        poll: float = 0.05,
        start_delay: float = 0.1,
        credentials: Credentials | None = None,
        stop_delay: float = 0.1,
        nodes: int = 1,
        transport: Transport | None = None,
    ) -> None:
        """`transport`: how to reach the server; by default HTTP to `api_url`."""
        self.api_url = api_url.rstrip("/")
        self.node_name = node_name
        self.devices = devices.DevicePool(_sim_nodes(node_name, max(1, nodes)))
        self._node_names = frozenset(n.name for n in self.devices.nodes)
        self.poll = poll
        self.start_delay = start_delay
        self.stop_delay = stop_delay
        self._http: Transport = transport or _Http(self.api_url, credentials=credentials)
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._pods: dict[str, dict[str, Any]] = {}  # uid -> latest pod object
        self._runs: dict[str, _PodRun] = {}  # uid -> simulation state
        # (due, seq, uid) of every run not done, so a wake looks only at what is due; an
        # entry whose seq is not its run's heap_seq is stale and skipped when popped.
        self._agenda: list[tuple[float, int, str]] = []
        self._seq = itertools.count()
        self._run_counts: dict[str, int] = {}  # namespace/name -> runs started so far
        self._podgroups: dict[str, dict[str, Any]] = {}  # uid -> pending podgroup
        self._terminating: dict[str, tuple[dict[str, Any], float]] = {}  # uid -> (pod, due)
        self._next_ip = 0
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._watchers = [
            self._http.watcher(
                "/api/v1/pods", self._on_pod_event, self._on_pod_relist, self._stopping, "pods"
            ),
            self._http.watcher(
                PODGROUPS_PATH,
                self._on_podgroup_event,
                self._on_podgroup_relist,
                self._stopping,
                "podgroups",
            ),
        ]

    # --- lifecycle -------------------------------------------------------------------------
    def start(self) -> None:
        self._stopping.clear()
        for watcher in self._watchers:
            t = threading.Thread(target=watcher.run, name=f"kubelet-{watcher.name}", daemon=True)
            t.start()
            self._threads.append(t)
        t = threading.Thread(target=self._drive_loop, name="kubelet-driver", daemon=True)
        t.start()
        self._threads.append(t)

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        for watcher in self._watchers:
            watcher.interrupt()
        deadline = time.monotonic() + 2.0
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        self._threads = []
        self._http.close()

    def register_node(self) -> None:
        """Create this kubelet's Node (Ready, with Ascend capacity) as a kubelet registers.

        The spec and metadata go in a create; the status through the status subresource,
        which is the only way a real API server accepts it. An existing Node is kept and its
        status refreshed.
        """
        for sim in self.devices.nodes:
            node = builtin.node_object(sim.name, sim.ip, now_rfc3339())
            status = node.pop("status")
            code, body = self._http.request("POST", "/api/v1/nodes", node)
            if code not in (201, 409):
                raise RuntimeError(f"kubelet: registering node {sim.name} got {code}: {body}")
            path = f"/api/v1/nodes/{quote(sim.name)}/status"
            code, body = self._http.request(
                "PATCH", path, {"status": status}, "application/merge-patch+json"
            )
            if code != 200:
                raise RuntimeError(f"kubelet: node {sim.name} status got {code}: {body}")

    def runs_started(self, namespace: str, name: str) -> int:
        """How many runs the pod namespace/name has had (for tests)."""
        with self._lock:
            return self._run_counts.get(f"{namespace}/{name}", 0)

    # --- cache updates (watcher threads) ---------------------------------------------------
    def _on_pod_relist(self, pods: list[dict[str, Any]]) -> None:
        with self._lock:
            seen = set()
            for pod in pods:
                uid = (pod.get("metadata") or {}).get("uid")
                if uid:
                    seen.add(uid)
                    self._track(uid, pod)
            for uid in list(self._pods):
                if uid not in seen:
                    self._forget(uid)
            for uid in list(self._terminating):
                if uid not in seen:
                    self._forget_terminating(uid)
        self._wake.set()

    def _on_pod_event(self, kind: str, pod: dict[str, Any]) -> None:
        uid = (pod.get("metadata") or {}).get("uid")
        if not uid:
            return
        with self._lock:
            if kind == "DELETED":
                self._forget(uid)
                self._forget_terminating(uid)
            else:
                self._track(uid, pod)
        self._wake.set()

    def _track(self, uid: str, pod: dict[str, Any]) -> None:
        """Remember a pod we should drive (caller holds the lock)."""
        meta = pod.get("metadata") or {}
        spec = pod.get("spec") or {}
        phase = (pod.get("status") or {}).get("phase")
        node = spec.get("nodeName")
        if node and node not in self._node_names:
            return  # somebody else's pod
        if meta.get("deletionTimestamp"):
            self._forget(uid)
            if node:
                # A graceful delete: "stop" the containers, then confirm with grace 0 as a
                # kubelet does; until then the API server keeps the object.
                self._terminating.setdefault(uid, (pod, time.monotonic() + self.stop_delay))
            return
        self._pods[uid] = pod
        if uid in self._runs:
            return
        if phase in ("Succeeded", "Failed"):
            self._runs[uid] = _PodRun(key=_key(pod), stage="done")
            return
        run = _PodRun(key=_key(pod), due=time.monotonic())
        if node and phase == "Running":
            # We restarted while the pod ran: give it a fresh run from now.
            run.stage = "bound"
        self._runs[uid] = run
        self._schedule(uid, run)

    def _schedule(self, uid: str, run: _PodRun) -> None:
        """Put the run on the agenda at its `due` (caller holds the lock); done runs leave it."""
        if run.stage == "done":
            return
        run.heap_seq = next(self._seq)
        heapq.heappush(self._agenda, (run.due, run.heap_seq, uid))

    def _forget(self, uid: str) -> None:
        self._pods.pop(uid, None)
        self._runs.pop(uid, None)
        self.devices.release(uid)

    def _forget_terminating(self, uid: str) -> None:
        self._terminating.pop(uid, None)

    def _on_podgroup_relist(self, groups: list[dict[str, Any]]) -> None:
        with self._lock:
            self._podgroups = {}
            for pg in groups:
                self._note_podgroup(pg)
        self._wake.set()

    def _on_podgroup_event(self, kind: str, pg: dict[str, Any]) -> None:
        with self._lock:
            uid = (pg.get("metadata") or {}).get("uid", "")
            if kind == "DELETED":
                self._podgroups.pop(uid, None)
            else:
                self._note_podgroup(pg)
        self._wake.set()

    def _note_podgroup(self, pg: dict[str, Any]) -> None:
        meta = pg.get("metadata") or {}
        phase = (pg.get("status") or {}).get("phase")
        uid = meta.get("uid", "")
        if phase in (None, "", "Pending") and not meta.get("deletionTimestamp"):
            self._podgroups[uid] = pg
        else:
            self._podgroups.pop(uid, None)

    # --- driving (driver thread) -----------------------------------------------------------
    def _drive_loop(self) -> None:
        while not self._stopping.is_set():
            try:
                self._drive_once()
            except Exception as err:  # the loop must survive anything
                log.warning("kubelet driver error, continuing: %s", err)
            self._wake.wait(self.poll)
            self._wake.clear()
        self._http.close()  # this thread's connection

    def _drive_once(self) -> None:
        now = time.monotonic()
        with self._lock:
            due = self._take_due(now)
            groups = list(self._podgroups.values())
            stopping = [(uid, pod) for uid, (pod, at) in self._terminating.items() if at <= now]
        for uid, pod in stopping:
            if self._stopping.is_set():
                return
            self._confirm_deletion(uid, pod)
        for pg in groups:
            if self._stopping.is_set():
                return
            self._enqueue_podgroup(pg)
        for uid, pod, run in due:
            if self._stopping.is_set():
                return
            try:
                self._step(uid, pod, run)
            except (OSError, http.client.HTTPException) as err:
                log.warning("kubelet: pod %s: %s; will retry", run.key, err)
                run.due = time.monotonic() + 0.2
            with self._lock:
                if self._runs.get(uid) is run:  # a step moves `due`: the next entry has it
                    self._schedule(uid, run)

    def _take_due(self, now: float) -> list[tuple[str, dict[str, Any], _PodRun]]:
        """Pop the runs due at `now` off the agenda (caller holds the lock)."""
        due = []
        agenda = self._agenda
        while agenda and agenda[0][0] <= now:
            _, seq, uid = heapq.heappop(agenda)
            run, pod = self._runs.get(uid), self._pods.get(uid)
            if run is None or pod is None or seq != run.heap_seq or run.stage == "done":
                continue  # stale: forgotten, rescheduled, or finished since
            if run.due > now:  # moved later without a new entry: put it where it belongs
                self._schedule(uid, run)
                continue
            due.append((uid, pod, run))
        return due

    def _enqueue_podgroup(self, pg: dict[str, Any]) -> None:
        meta = pg.get("metadata") or {}
        path = (
            f"/apis/scheduling.volcano.sh/v1beta1/namespaces/{quote(meta.get('namespace', ''))}"
            f"/podgroups/{quote(meta.get('name', ''))}/status"
        )
        body = {"status": {"phase": "Inqueue"}}
        try:
            status, _ = self._http.request(
                "PATCH", path, body, "application/merge-patch+json", decode=False
            )
        except (OSError, http.client.HTTPException) as err:
            log.warning("kubelet: podgroup %s: %s", meta.get("name"), err)
            return
        if status >= 300 and status != 404:
            log.warning("kubelet: podgroup %s status patch got %s", meta.get("name"), status)
            return
        # Moved to Inqueue, or gone (404): either way nothing is left to do for it.
        with self._lock:
            self._podgroups.pop(meta.get("uid", ""), None)

    def _confirm_deletion(self, uid: str, pod: dict[str, Any]) -> None:
        """Finish a graceful delete: grace 0, preconditioned on the uid we stopped."""
        body = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "gracePeriodSeconds": 0,
            "preconditions": {"uid": uid},
        }
        try:
            code, _ = self._http.request("DELETE", self._pod_path(pod, False), body, decode=False)
        except (OSError, http.client.HTTPException) as err:
            log.warning("kubelet: confirming deletion of %s: %s; will retry", _key(pod), err)
            return
        if code < 300 or code in (404, 409):  # done, gone, or a successor holds the name
            with self._lock:
                self._forget_terminating(uid)

    def _pod_path(self, pod: dict[str, Any], status: bool) -> str:
        meta = pod.get("metadata") or {}
        namespace, name = quote(meta.get("namespace", "")), quote(meta.get("name", ""))
        path = f"/api/v1/namespaces/{namespace}/pods/{name}"
        return path + "/status" if status else path

    def _patch(self, pod: dict[str, Any], body: dict[str, Any], status: bool, run: _PodRun) -> bool:
        """Write body's fields with a JSON patch guarded by a uid test.

        Pods are addressed by name, and controllers re-create pods under the same name: the
        `test` op makes a write meant for a deleted pod fail (422) instead of landing on its
        successor.
        """
        ops = [_uid_test(pod)]
        for top, fields in body.items():
            ops += _add_ops(f"/{top}", pod.get(top), fields)
        return self._send_patch(pod, ops, status, run)

    def _annotate(self, pod: dict[str, Any], annotations: dict[str, str], run: _PodRun) -> bool:
        """Add annotations (a JSON patch guarded by the uid, keeping the others)."""
        meta = pod.get("metadata") or {}
        ops = [
            _uid_test(pod),
            *_add_ops("/metadata/annotations", meta.get("annotations"), annotations),
        ]
        return self._send_patch(pod, ops, False, run)

    def _send_patch(
        self, pod: dict[str, Any], ops: list[dict[str, Any]], status: bool, run: _PodRun
    ) -> bool:
        code, _ = self._http.request(
            "PATCH", self._pod_path(pod, status), ops, "application/json-patch+json", decode=False
        )
        if code in (404, 422):
            with self._lock:
                run.stage = "done"  # gone or replaced; the watch will tell us about the new one
            return False
        if code >= 300:
            log.warning("kubelet: pod %s patch got %s; will retry", run.key, code)
            run.due = time.monotonic() + 0.2
            return False
        return True

    def _bind(self, pod: dict[str, Any], run: _PodRun, node: str) -> bool:
        """POST pods/binding, as a scheduler does: the one way both servers accept."""
        meta = pod.get("metadata") or {}
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": meta.get("name", ""), "uid": meta.get("uid")},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        code, _ = self._http.request(
            "POST", self._pod_path(pod, False) + "/binding", body, decode=False
        )
        if code in (404, 409, 422):
            with self._lock:
                run.stage = "done"  # gone, replaced, or bound elsewhere: the watch tells us
            return False
        if code >= 300:
            log.warning("kubelet: pod %s binding got %s; will retry", run.key, code)
            run.due = time.monotonic() + 0.2
            return False
        return True

    def _step(self, uid: str, pod: dict[str, Any], run: _PodRun) -> None:
        if run.stage == "new":
            bound_to = (pod.get("spec") or {}).get("nodeName")
            placement = self.devices.place(uid, pod, on=bound_to)
            if not bound_to and not self._bind(pod, run, placement.node.name):
                return
            extra = devices.annotations_for(run.key.partition("/")[2], placement)
            if extra and not self._annotate(pod, extra, run):
                return
            run.host_ip = placement.node.ip
            run.stage = "bound"
            run.due = time.monotonic() + self.start_delay
            with self._lock:
                self._next_ip += 1
                n = self._next_ip
            run.pod_ip = f"10.244.{(n // 250) % 256}.{n % 250 + 2}"
            run.start_time = now_rfc3339()
            self._patch(pod, self._pending_status(pod, run), True, run)
            return
        if run.stage == "bound":
            self._start_run(pod, run)
            return
        if run.stage == "running":
            self._finish_run(pod, run)

    def _container_names(self, pod: dict[str, Any], field_name: str = "containers") -> list[str]:
        return [str(c.get("name", "")) for c in (pod.get("spec") or {}).get(field_name) or []]

    def _base_status(self, run: _PodRun) -> dict[str, Any]:
        return {
            "hostIP": run.host_ip,
            "hostIPs": [{"ip": run.host_ip}],
            "podIP": run.pod_ip,
            "podIPs": [{"ip": run.pod_ip}],
            "startTime": run.start_time or now_rfc3339(),
        }

    def _conditions(self, run: _PodRun, ready: bool, reason: str = "") -> list[dict[str, Any]]:
        stamp = now_rfc3339()

        def cond(type_: str, ok: bool) -> dict[str, Any]:
            status = "True" if ok else "False"
            previous = run.transitions.get(type_)
            since = previous[1] if previous and previous[0] == status else stamp
            run.transitions[type_] = (status, since)
            c: dict[str, Any] = {
                "type": type_,
                "status": status,
                "lastProbeTime": None,
                "lastTransitionTime": since,
            }
            if not ok and reason:
                c["reason"] = reason
            return c

        return [
            cond("PodReadyToStartContainers", True),
            cond("Initialized", True),
            cond("Ready", ready),
            cond("ContainersReady", ready),
            cond("PodScheduled", True),
        ]

    def _init_statuses(self, pod: dict[str, Any], run: _PodRun) -> list[dict[str, Any]]:
        stamp = run.start_time or now_rfc3339()
        return [
            {
                "name": name,
                "ready": True,
                "restartCount": 0,
                "image": "",
                "imageID": "",
                "state": {"terminated": _terminated(0, stamp, stamp)},
            }
            for name in self._container_names(pod, "initContainers")
        ]

    def _pending_status(self, pod: dict[str, Any], run: _PodRun) -> dict[str, Any]:
        status = self._base_status(run)
        status["phase"] = "Pending"
        status["conditions"] = self._conditions(run, False, "ContainersNotReady")
        status["containerStatuses"] = [
            {
                "name": name,
                "ready": False,
                "started": False,
                "restartCount": 0,
                "image": self._image(pod, name),
                "imageID": "",
                "state": {"waiting": {"reason": "ContainerCreating"}},
            }
            for name in self._container_names(pod)
        ]
        if self._container_names(pod, "initContainers"):
            status["initContainerStatuses"] = self._init_statuses(pod, run)
        return {"status": status}

    def _image(self, pod: dict[str, Any], name: str) -> str:
        for c in (pod.get("spec") or {}).get("containers") or []:
            if c.get("name") == name:
                return str(c.get("image", ""))
        return ""

    def _running_status(self, pod: dict[str, Any], run: _PodRun) -> dict[str, Any]:
        status = self._base_status(run)
        status["phase"] = "Running"
        status["conditions"] = self._conditions(run, True)
        statuses = []
        for name in self._container_names(pod):
            cs: dict[str, Any] = {
                "name": name,
                "ready": True,
                "started": True,
                "restartCount": run.restart_count,
                "image": self._image(pod, name),
                "imageID": "",
                "containerID": f"sim://{run.key}/{name}/{run.run_index}",
                "state": {"running": {"startedAt": run.started_at}},
                "lastState": {"terminated": run.last_terminated} if run.last_terminated else {},
            }
            statuses.append(cs)
        status["containerStatuses"] = statuses
        if self._container_names(pod, "initContainers"):
            status["initContainerStatuses"] = self._init_statuses(pod, run)
        return {"status": status}

    def _start_run(self, pod: dict[str, Any], run: _PodRun) -> None:
        with self._lock:
            run.run_index = self._run_counts.get(run.key, 0)
            self._run_counts[run.key] = run.run_index + 1
        run.started_at = now_rfc3339()
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        seconds = parse_run_seconds(annotations.get(RUN_SECONDS_ANNOTATION))
        run.stage = "running"
        run.due = time.monotonic() + seconds
        if not self._patch(pod, self._running_status(pod, run), True, run):
            # Retry the start later without consuming another run.
            with self._lock:
                self._run_counts[run.key] = run.run_index
            if run.stage != "done":
                run.stage = "bound"

    def _finish_run(self, pod: dict[str, Any], run: _PodRun) -> None:
        annotations = (pod.get("metadata") or {}).get("annotations") or {}
        codes = parse_exit_codes(annotations.get(EXIT_CODE_ANNOTATION))
        code = exit_code_for_run(codes, run.run_index)
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        finished = now_rfc3339()
        terminated = _terminated(code, run.started_at, finished)
        restart = policy == "Always" or (policy == "OnFailure" and code != 0)
        if restart:
            run.restart_count += 1
            run.last_terminated = terminated
            self._start_run(pod, run)
            return
        status = self._base_status(run)
        status["phase"] = "Succeeded" if code == 0 else "Failed"
        status["conditions"] = self._conditions(
            run, False, "PodCompleted" if code == 0 else "PodFailed"
        )
        status["containerStatuses"] = [
            {
                "name": name,
                "ready": False,
                "started": False,
                "restartCount": run.restart_count,
                "image": self._image(pod, name),
                "imageID": "",
                "containerID": f"sim://{run.key}/{name}/{run.run_index}",
                "state": {"terminated": terminated},
                "lastState": {"terminated": run.last_terminated} if run.last_terminated else {},
            }
            for name in self._container_names(pod)
        ]
        if self._container_names(pod, "initContainers"):
            status["initContainerStatuses"] = self._init_statuses(pod, run)
        if self._patch(pod, {"status": status}, True, run):
            run.stage = "done"
            self.devices.release((pod.get("metadata") or {}).get("uid", ""))

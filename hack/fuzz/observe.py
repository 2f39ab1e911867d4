"""What the fuzzer watches while the cases run: jobs, pods and the controller's health.

Each observer is a daemon thread that only records; the checks read the records at the end.
The job and pod observers LIST once and then WATCH from that resourceVersion, resuming after
each ended watch; a 410 Gone (window passed) forces a re-LIST, which is counted, because a pod
created and deleted inside such a gap would go unseen.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hack.fuzz.wire import Endpoint, Wire, watch_lines

JOB_NAME_LABEL = "training.kubeflow.org/job-name"
WATCH_SECONDS = 60  # per watch request; the server ends it, we resume


def meta(obj: Any) -> dict[str, Any]:
    """obj.metadata when it is a map, else {} (the fuzz cases make it anything)."""
    value = obj.get("metadata") if isinstance(obj, dict) else None
    return value if isinstance(value, dict) else {}


def conditions(obj: Any) -> list[dict[str, Any]]:
    status = obj.get("status") if isinstance(obj, dict) else None
    found = status.get("conditions") if isinstance(status, dict) else None
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def state_of(obj: Any) -> tuple[str, str]:
    """(type, reason) of the last condition whose status is True, else of the last one."""
    conds = conditions(obj)
    true = [c for c in conds if c.get("status") == "True"] or conds
    if not true:
        return "", ""
    last = true[-1]
    return str(last.get("type", "")), str(last.get("reason", ""))


def problem_of(obj: Any) -> str:
    """The problem a JobValidFailed condition starts its message with (`InvalidContainer`,
    `InvalidPodTemplate`, ...), else ""."""
    failed = [c for c in conditions(obj) if c.get("reason") == "JobValidFailed"]
    message = failed[-1].get("message") if failed else None
    return message.split(":", 1)[0] if isinstance(message, str) else ""


class Watcher(threading.Thread):
    """LIST + WATCH of one collection, each object handed to `on_event(type, obj, at)`."""

    def __init__(
        self,
        endpoint: Endpoint,
        path: str,
        on_event: Callable[[str, dict[str, Any], float], None],
        name: str,
    ) -> None:
        super().__init__(name=name, daemon=True)
        self.endpoint = endpoint
        self.path = path
        self.on_event = on_event
        self.stopping = threading.Event()
        self.synced = threading.Event()
        self.relists = 0
        self.errors: list[str] = []

    def run(self) -> None:
        rv = ""
        while not self.stopping.is_set():
            try:
                if not rv:
                    rv = self._list()
                rv = self._watch(rv)
            except Exception as err:  # keep observing: a gap is counted, not fatal
                self.errors.append(f"{type(err).__name__}: {err}")
                time.sleep(0.5)

    def _list(self) -> str:
        wire = Wire(self.endpoint)
        try:
            body = wire.must("GET", self.path)
        finally:
            wire.close()
        now = time.monotonic()
        for item in body.get("items") or []:
            self.on_event("LISTED", item, now)
        if self.synced.is_set():
            self.relists += 1
        self.synced.set()
        return str(meta(body).get("resourceVersion", ""))

    def _watch(self, rv: str) -> str:
        sep = "&" if "?" in self.path else "?"
        query = f"watch=1&allowWatchBookmarks=true&timeoutSeconds={WATCH_SECONDS}"
        path = f"{self.path}{sep}{query}&resourceVersion={rv}"
        for kind, obj in watch_lines(self.endpoint, path, timeout=WATCH_SECONDS + 30):
            if self.stopping.is_set():
                return rv
            if kind in ("HTTP_ERROR", "ERROR"):
                if obj.get("code") == 410:
                    return ""  # relist
                raise RuntimeError(f"watch {kind}: {obj}")
            rv = str(meta(obj).get("resourceVersion") or rv)
            if kind != "BOOKMARK":
                self.on_event(kind, obj, time.monotonic())
        return rv

    def stop(self) -> None:
        self.stopping.set()


@dataclass
class JobRecord:
    """Everything seen of one AscendJob, from its first event to its last."""

    name: str
    uid: str
    first_condition_at: float | None = None
    first_state: tuple[str, str] = ("", "")
    state: tuple[str, str] = ("", "")
    states_seen: list[tuple[str, str]] = field(default_factory=list)
    deleted: bool = False
    #: The problem of its JobValidFailed condition, once it has one (`problem_of`).
    problem: str = ""


class JobObserver:
    """The fuzz namespace's AscendJobs: first-condition time and state history by uid."""

    def __init__(self, endpoint: Endpoint, namespace: str) -> None:
        self.lock = threading.Lock()
        self.jobs: dict[str, JobRecord] = {}
        path = f"/apis/mindxdl.gitee.com/v1/namespaces/{namespace}/ascendjobs"
        self.watcher = Watcher(endpoint, path, self._on_event, "fuzz-job-watch")

    def _on_event(self, kind: str, obj: dict[str, Any], at: float) -> None:
        m = meta(obj)
        uid = str(m.get("uid", ""))
        with self.lock:
            record = self.jobs.setdefault(uid, JobRecord(str(m.get("name", "")), uid))
            if kind == "DELETED":
                record.deleted = True
            state = state_of(obj)
            if state[0] and record.first_condition_at is None:
                record.first_condition_at = at
                record.first_state = state
            if state[0]:
                record.state = state
                record.problem = problem_of(obj) or record.problem
                if not record.states_seen or record.states_seen[-1] != state:
                    record.states_seen.append(state)

    def get(self, uid: str) -> JobRecord | None:
        with self.lock:
            return self.jobs.get(uid)


@dataclass
class PodRecord:
    """One pod as first and last seen, and how often it changed."""

    uid: str
    name: str
    job_label: str | None
    owner_uids: tuple[str, ...]
    first_rv: str
    last_rv: str
    events: list[str] = field(default_factory=list)


class PodObserver:
    """Every pod of the fuzz namespace ever seen, whatever its labels (ownerReferences too)."""

    def __init__(self, endpoint: Endpoint, namespace: str) -> None:
        self.lock = threading.Lock()
        self.pods: dict[str, PodRecord] = {}
        self.watcher = Watcher(
            endpoint, f"/api/v1/namespaces/{namespace}/pods", self._on_event, "fuzz-pod-watch"
        )

    def _on_event(self, kind: str, obj: dict[str, Any], at: float) -> None:
        m = meta(obj)
        uid = str(m.get("uid", ""))
        rv = str(m.get("resourceVersion", ""))
        labels = m.get("labels") if isinstance(m.get("labels"), dict) else {}
        owners = tuple(
            str(ref.get("uid", ""))
            for ref in m.get("ownerReferences") or []
            if isinstance(ref, dict)
        )
        with self.lock:
            record = self.pods.get(uid)
            if record is None:
                label = labels.get(JOB_NAME_LABEL) if labels else None
                record = PodRecord(uid, str(m.get("name", "")), label, owners, rv, rv)
                self.pods[uid] = record
            record.last_rv = rv
            record.events.append(kind)

    def snapshot(self) -> list[PodRecord]:
        with self.lock:
            return list(self.pods.values())


class HealthPoller(threading.Thread):
    """GET /healthz every `interval` s and check the controller process is still the same."""

    def __init__(self, url: str, alive: Callable[[], bool], interval: float = 0.5) -> None:
        super().__init__(name="fuzz-healthz", daemon=True)
        self.url = url
        self.alive = alive
        self.interval = interval
        self.stopping = threading.Event()
        self.polls = 0
        self.failures: list[str] = []
        self.max_seconds = 0.0
        self.died_at: float | None = None

    def run(self) -> None:
        endpoint = Endpoint(self.url)
        while not self.stopping.wait(self.interval):
            if not self.alive():
                self.died_at = self.died_at or time.monotonic()
                self.failures.append("controller process not running")
                continue
            start = time.monotonic()
            code = self._probe(endpoint)
            self.max_seconds = max(self.max_seconds, time.monotonic() - start)
            self.polls += 1
            if code != 200:
                self.failures.append(f"/healthz answered {code}")

    @staticmethod
    def _probe(endpoint: Endpoint) -> int:
        conn = endpoint.connect(timeout=5.0)
        try:
            conn.request("GET", "/healthz")
            resp = conn.getresponse()
            resp.read()
            return resp.status
        except OSError:
            return 0
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def stop(self) -> None:
        self.stopping.set()

"""The "perfect client": the benchmark job's lifecycle from raw watches with the minimal writes.

The floor for issue 12's table: what any controller must at least send and decode to run the
benchmark's jobs. Two watches (AscendJobs, and pods carrying our job-name label) feed one
dispatcher thread that keeps each job's pod phases and decides its state; the writes are
done by a few shard threads, each job always on the same shard, so one job's writes stay in
order while different jobs' round trips overlap. Per job it sends the Service create, one
create per pod, one status merge patch per state it reaches (a shard writes only the latest
decided state, so states passed while a write was queued are skipped), and the Service delete
once finished. No Events, no reads except the watches' initial LISTs and a GET after a 409.

`--events` is an analysis variant (bench_peers' `perfect-events`): it also sends the Events
ours sends for the job (hack/peers/lifecycle.lifecycle_events: the two child creates', the
finished transition's), from one sender thread as ours' recorder does, so that ours can be
compared with a minimal client doing the same writes. Issue 12's perfect client sends none.

Standard library only (plus hack/peers/lifecycle.py), so its RSS is that of a bare client.
`python -m hack.peers.perfect --server URL --namespace NS`; stopped by SIGTERM.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import queue
import sys
import threading
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

from hack.peers.lifecycle import (
    CREATED,
    GROUP,
    JOB_LABEL,
    PLURAL,
    RANK,
    RUNNING,
    TERMINAL,
    TYPE_LABEL,
    VERSION,
    event_body,
    lifecycle_events,
    owner_reference,
    pod_body,
    replica_statuses,
    replica_types,
    replicas,
    service_body,
    service_name,
    state_of,
    state_of_status,
    status_patch,
)

JSON = dict[str, Any]
SHARDS = 4
#: Every real client names itself (client-go and the official Python client always do); the
#: API server files its writes' managedFields under this product name. Without one the
#: local cluster filed them as "unknown", which merged them with any other anonymous writer.
USER_AGENT = "perfect-client/v1.0 (linux/amd64) python"
WATCH_SECONDS = 1800
#: The Events' source.component and reportingComponent under `--events`.
COMPONENT = "perfect-client"


def fatal_on_error(target: Callable[..., None]) -> Callable[..., None]:
    """Exit the process when a thread dies: a half-dead client would hang the benchmark."""

    def run(*args: Any) -> None:
        try:
            target(*args)
        except BaseException as e:
            print(f"perfect client: {target.__name__} failed: {e!r}", file=sys.stderr, flush=True)
            os._exit(1)

    return run


class Api:
    """One keep-alive connection (one per thread: http.client is not thread-safe)."""

    def __init__(self, server: str) -> None:
        parts = urlsplit(server)
        self.host, self.port = parts.hostname or "127.0.0.1", int(parts.port or 80)
        self.conn = http.client.HTTPConnection(self.host, self.port, timeout=60)

    def call(
        self, method: str, path: str, body: JSON | None = None, patch: bool = False
    ) -> tuple[int, JSON]:
        ctype = "application/merge-patch+json" if patch else "application/json"
        data = json.dumps(body).encode() if body is not None else None
        self.conn.request(
            method, path, body=data, headers={"Content-Type": ctype, "User-Agent": USER_AGENT}
        )
        resp = self.conn.getresponse()
        raw = resp.read()
        return resp.status, (json.loads(raw) if raw else {})


@dataclass
class Job:
    """What the dispatcher knows of one job; `decided` is read by its shard when it writes."""

    body: JSON
    #: The replicaStatuses of the pods as they were when `decided` last moved (set first, so
    #: a shard that reads `decided` then this sees counts at least as new as the state).
    counts: JSON
    decided: str | None = None
    written: str | None = None
    ran: bool = False  # Running was written, so a finished job sets it False as ours does

    @property
    def name(self) -> str:
        return str(self.body["metadata"]["name"])


@dataclass
class Paths:
    namespace: str

    @property
    def jobs(self) -> str:
        return f"/apis/{GROUP}/{VERSION}/namespaces/{self.namespace}/{PLURAL}"

    @property
    def pods(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/pods"

    @property
    def services(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/services"

    @property
    def events(self) -> str:
        return f"/api/v1/namespaces/{self.namespace}/events"


def watch_forever(server: str, path: str, selector: str, kind: str, out: queue.Queue[Any]) -> None:
    """LIST then WATCH `path` for ever, putting (kind, type, object) on `out`.

    A closed stream resumes from the last resourceVersion seen; a 410 (or any error event)
    lists again. Runs in its own daemon thread.
    """
    query = f"labelSelector={quote(selector)}&" if selector else ""
    while True:
        api = Api(server)
        code, page = api.call("GET", f"{path}?{query}")
        if code != 200:
            raise RuntimeError(f"LIST {path} -> {code}")
        for item in page.get("items") or []:
            out.put((kind, "ADDED", item))
        rv = page["metadata"]["resourceVersion"]
        while rv:
            rv = _watch_once(
                api, f"{path}?{query}watch=true&timeoutSeconds={WATCH_SECONDS}", rv, kind, out
            )
        api.conn.close()


def _watch_once(api: Api, path: str, rv: str, kind: str, out: queue.Queue[Any]) -> str:
    """One watch request; returns the resourceVersion to resume from, '' to list again."""
    api.conn.request("GET", f"{path}&resourceVersion={rv}", headers={"User-Agent": USER_AGENT})
    resp = api.conn.getresponse()
    if resp.status != 200:
        resp.read()
        return ""
    for line in resp:
        event = json.loads(line)
        etype, obj = event.get("type"), event.get("object") or {}
        if etype == "ERROR":
            resp.close()
            return ""
        rv = (obj.get("metadata") or {}).get("resourceVersion") or rv
        if etype != "BOOKMARK":
            out.put((kind, etype, obj))
    return rv


@dataclass
class Perfect:
    """The dispatcher's state and the shards' queues."""

    server: str
    paths: Paths
    events: queue.Queue[Any] = field(default_factory=queue.Queue)
    jobs: dict[str, Job] = field(default_factory=dict)
    # job -> pod -> (replica-type label, phase)
    phases: dict[str, dict[str, tuple[str | None, str | None]]] = field(default_factory=dict)
    shards: list[queue.Queue[tuple[str, Job]]] = field(default_factory=list)
    #: The Events to send (`--events`), None when the client sends none.
    outbox: queue.Queue[JSON] | None = None

    def run(self) -> None:
        if self.outbox is not None:
            threading.Thread(
                target=fatal_on_error(self._send_events), args=(self.outbox,), daemon=True
            ).start()
        for _ in range(SHARDS):
            self.shards.append(queue.Queue())
            threading.Thread(
                target=fatal_on_error(self._shard), args=(self.shards[-1],), daemon=True
            ).start()
        for path, selector, kind in (
            (self.paths.jobs, "", "job"),
            (self.paths.pods, JOB_LABEL, "pod"),
        ):
            args = (self.server, path, selector, kind, self.events)
            threading.Thread(target=fatal_on_error(watch_forever), args=args, daemon=True).start()
        while True:
            kind, etype, obj = self.events.get()
            if kind == "job":
                self._on_job(etype, obj)
            else:
                self._on_pod(etype, obj)

    def _submit(self, task: str, job: Job) -> None:
        self.shards[zlib.crc32(job.name.encode()) % SHARDS].put((task, job))

    def _on_job(self, etype: str, obj: JSON) -> None:
        name = obj["metadata"]["name"]
        if etype == "DELETED":
            self.jobs.pop(name, None)
            return
        if name in self.jobs:
            return  # our own status writes coming back: nothing the plan reads changed
        state = state_of_status(obj.get("status"))
        counts = replica_statuses(name, replica_types(obj), [])  # no pod seen yet
        job = Job(obj, counts, decided=state or CREATED, written=state, ran=state == RUNNING)
        self.jobs[name] = job
        if state not in TERMINAL:
            self._submit("start", job)
        self._decide(job)

    def _on_pod(self, etype: str, obj: JSON) -> None:
        meta = obj["metadata"]
        job_name = (meta.get("labels") or {}).get(JOB_LABEL)
        if not job_name:
            return
        pods = self.phases.setdefault(job_name, {})
        if etype == "DELETED":
            pods.pop(meta["name"], None)
        else:
            rtype = (meta.get("labels") or {}).get(TYPE_LABEL)
            pods[meta["name"]] = (rtype, (obj.get("status") or {}).get("phase"))
        job = self.jobs.get(job_name)
        if job is not None:
            self._decide(job)

    def _decide(self, job: Job) -> None:
        """Move `decided` forward only; queue a status write when it moved."""
        pods = self.phases.get(job.name, {})
        phases = [phase for _, phase in pods.values()]
        state = state_of(phases, len(replicas(job.body))) if pods else CREATED
        if RANK[state] > RANK[job.decided]:
            job.counts = replica_statuses(job.name, replica_types(job.body), pods.values())
            job.decided = state
            self._submit("sync", job)

    def _shard(self, tasks: queue.Queue[tuple[str, Job]]) -> None:
        api = Api(self.server)
        while True:
            task, job = tasks.get()
            if task == "start":
                self._create_children(api, job)
            self._write_status(api, job)

    def _create_children(self, api: Api, job: Job) -> None:
        """Service, then the pods with its ClusterIP; an existing child (409) is kept."""
        svc = service_body(job.body)
        svc["metadata"]["ownerReferences"] = [owner_reference(job.body)]
        code, out = api.call("POST", self.paths.services, svc)
        if code == 409:
            code, out = api.call("GET", f"{self.paths.services}/{service_name(job.name)}")
        if code >= 300:
            raise RuntimeError(f"Service of {job.name}: {code} {out}")
        cluster_ip = out["spec"]["clusterIP"]
        for rtype, index in replicas(job.body):
            pod = pod_body(job.body, rtype, index, cluster_ip)
            pod["metadata"]["ownerReferences"] = [owner_reference(job.body)]
            code, out = api.call("POST", self.paths.pods, pod)
            if code >= 300 and code != 409:
                raise RuntimeError(f"pod of {job.name}: {code} {out}")
        self._announce(job, CREATED)

    def _write_status(self, api: Api, job: Job) -> None:
        """Write the latest decided state if it is ahead of what was written."""
        target = job.decided
        if target is None or RANK[target] <= RANK[job.written]:
            return
        key = f"{self.paths.namespace}/{job.name}"
        body = status_patch(target, key, ran=job.ran, replica_status=job.counts)
        code, out = api.call("PATCH", f"{self.paths.jobs}/{job.name}/status", body, patch=True)
        if code >= 300:
            raise RuntimeError(f"status of {job.name}: {code} {out}")
        job.written, job.ran = target, job.ran or target == RUNNING
        if target in TERMINAL:
            code, out = api.call("DELETE", f"{self.paths.services}/{service_name(job.name)}")
            if code >= 300 and code != 404:
                raise RuntimeError(f"delete Service of {job.name}: {code} {out}")
            self._announce(job, target)

    def _announce(self, job: Job, state: str) -> None:
        """Hand the Events ours sends on reaching `state` to the sender (`--events` only)."""
        if self.outbox is None:
            return
        for type_, reason, message in lifecycle_events(job.body, state):
            self.outbox.put(event_body(job.body, type_, reason, message, COMPONENT))

    def _send_events(self, outbox: queue.Queue[JSON]) -> None:
        """POST each Event in turn on a connection of its own, off the shards' path."""
        api = Api(self.server)
        while True:
            body = outbox.get()
            code, out = api.call("POST", self.paths.events, body)
            if code >= 300:
                raise RuntimeError(f"Event {body['reason']}: {code} {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="API server URL (the counting proxy)")
    parser.add_argument("--namespace", required=True)
    parser.add_argument(
        "--events", action="store_true", help="also send ours' Events (an analysis variant)"
    )
    args = parser.parse_args(argv)
    outbox: queue.Queue[JSON] | None = queue.Queue() if args.events else None
    Perfect(args.server, Paths(args.namespace), outbox=outbox).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The benchmark job's lifecycle as a kopf operator, written the way kopf's docs suggest.

Run as `python -m kopf run --standalone --namespace NS -m hack.peers.kopf_operator` with
KUBECONFIG pointing at the API server (the counting proxy in `hack/bench_peers.py`).

* `@kopf.on.create` for AscendJobs writes the Created status, then creates the leader
  Service and one pod per replica (bodies from hack/peers/lifecycle.py, owned through
  `kopf.adopt`), the pods' rendezvous env carrying the Service's ClusterIP.
* Two in-memory indices (`@kopf.index`) keep every pod's phase by job and every job's
  replica count and state, so handlers never LIST or GET to learn them.
* `@kopf.on.event` for the job's pods recomputes the job's state from the pod index and
  moves the status forward; a finished job's Service is deleted there.

Correctness under load, as a careful kopf user must handle it:

* kopf re-runs a create handler when the patch with which it marked the job handled is not
  seen on the watch within `settings.persistence.consistency_timeout` (5 s), which happens
  when the operator is busy. The create handler is therefore idempotent: a 409 on a child
  is that child already existing, and a job already finished (the Service deleted) creates
  nothing, or the rerun would resurrect the Service.
* Pod events of one job are handled concurrently in kopf's thread pool, each with its own
  snapshot of the index. A per-job lock and a ledger of the highest state this process wrote
  make every status write move forward only, so a late handler cannot regress the job.

kopf's defaults are kept where they are sensible: progress in annotations, handler log lines
not posted as Events (kopf 1.45's default), sync handlers on kopf's thread pool with the
official `kubernetes` client (kopf's docs do the same).
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

import kopf
import kubernetes
from kubernetes.client import ApiException

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

JobKey = tuple[str, str]  # (namespace, name); both kinds are namespaced


class Ledger:
    """Per job: a lock, and the highest state this process wrote (never moves back)."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[JobKey, threading.Lock] = {}
        self._written: dict[JobKey, str] = {}
        self.ran: set[JobKey] = set()  # Running was written: a finished job sets it False

    @contextmanager
    def locked(self, key: JobKey) -> Iterator[None]:
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            yield

    def written(self, key: JobKey) -> str | None:
        return self._written.get(key)

    def wrote(self, key: JobKey, state: str) -> None:
        self._written[key] = state
        if state == RUNNING:
            self.ran.add(key)


class Clients:
    """The official client's APIs, built once at startup and shared by the handlers."""

    def __init__(self) -> None:
        kubernetes.config.load_kube_config()
        self.core = kubernetes.client.CoreV1Api()
        self.custom = kubernetes.client.CustomObjectsApi()


_ledger = Ledger()
_clients: Clients | None = None


def clients() -> Clients:
    assert _clients is not None, "the startup handler builds the clients"
    return _clients


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    """Build the clients; keep kopf's progress out of our status (annotations only)."""
    global _clients
    _clients = Clients()
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage()


#: A pod as the indexes keep it: (name, replica-type label, phase).
PodEntry = tuple[str, str | None, str | None]
#: A job as the indexes keep it: (pods it asks for, its replica types, state in its status).
JobEntry = tuple[int, tuple[str, ...], str | None]


@kopf.index("pods", labels={JOB_LABEL: kopf.PRESENT})
def pod_phases(
    namespace: str | None, name: str, labels: Mapping[str, str], status: Mapping[str, Any], **_: Any
) -> dict[JobKey, PodEntry]:
    entry = (name, labels.get(TYPE_LABEL), status.get("phase"))
    return {(namespace or "", labels[JOB_LABEL]): entry}


@kopf.index(GROUP, VERSION, PLURAL)
def job_states(
    namespace: str | None, name: str, body: kopf.Body, status: Mapping[str, Any], **_: Any
) -> dict[JobKey, JobEntry]:
    job = dict(body)
    entry = (len(replicas(job)), tuple(replica_types(job)), state_of_status(dict(status)))
    return {(namespace or "", name): entry}


def furthest(a: str | None, b: str | None) -> str | None:
    """The more advanced of two states (what we wrote vs what the watch last showed)."""
    return a if RANK[a] >= RANK[b] else b


def write_state(key: JobKey, state: str, counts: dict[str, Any]) -> None:
    """Patch the status to `state` with the pods' `counts` (replicaStatuses); on a finished
    job delete its Service. Caller holds the lock."""
    namespace, name = key
    body = status_patch(state, f"{namespace}/{name}", ran=key in _ledger.ran, replica_status=counts)
    clients().custom.patch_namespaced_custom_object_status(
        GROUP, VERSION, namespace, PLURAL, name, body
    )
    _ledger.wrote(key, state)
    if state in TERMINAL:
        try:
            clients().core.delete_namespaced_service(service_name(name), namespace)
        except ApiException as e:
            if e.status != 404:
                raise


def create_service(body: kopf.Body, namespace: str) -> str:
    """Create (or, on a rerun, find) the leader Service; returns its ClusterIP."""
    svc = service_body(dict(body))
    kopf.adopt(svc, owner=body)
    try:
        # The official client serialises a plain dict body as it is.
        created = clients().core.create_namespaced_service(namespace, cast(Any, svc))
    except ApiException as e:
        if e.status != 409:
            raise
        created = clients().core.read_namespaced_service(svc["metadata"]["name"], namespace)
    assert created.spec is not None
    return str(created.spec.cluster_ip)


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_children(
    body: kopf.Body,
    namespace: str | None,
    name: str,
    status: kopf.Status,
    logger: kopf.Logger,
    **_: Any,
) -> None:
    """Created status, the Service, the pods: idempotent, since kopf may call it again."""
    assert namespace is not None, "AscendJobs are namespaced"
    key = (namespace, name)
    job = dict(body)
    with _ledger.locked(key):
        known = furthest(_ledger.written(key), state_of_status(dict(status)))
        if known in TERMINAL:
            logger.info("Job already finished: nothing to create.")
            return
        if known is None:
            write_state(key, CREATED, replica_statuses(name, replica_types(job), []))
        cluster_ip = create_service(body, namespace)
        for rtype, index in replicas(job):
            pod = pod_body(job, rtype, index, cluster_ip)
            kopf.adopt(pod, owner=body)
            try:
                clients().core.create_namespaced_pod(namespace, cast(Any, pod))
            except ApiException as e:
                if e.status != 409:
                    raise


@kopf.on.event("pods", labels={JOB_LABEL: kopf.PRESENT})
def pod_changed(namespace: str | None, labels: Mapping[str, str], **kwargs: Any) -> None:
    """Move the job's status forward when its pods' phases say so."""
    # kopf passes each index as a keyword argument named after its function.
    pod_phases: kopf.Index[JobKey, PodEntry] = kwargs["pod_phases"]
    job_states: kopf.Index[JobKey, JobEntry] = kwargs["job_states"]
    assert namespace is not None, "pods are namespaced"
    key = (namespace, labels[JOB_LABEL])
    with _ledger.locked(key):
        jobs: Collection[JobEntry] = job_states.get(key, [])
        if not jobs:
            return  # the job is gone (or not yet seen): nothing to write to
        desired, types, stored = next(iter(jobs))
        known = furthest(_ledger.written(key), stored)
        if known is None:
            return  # the create handler has not run yet: it writes Created first
        pods = [(rtype, phase) for _, rtype, phase in pod_phases.get(key, [])]
        state = state_of([phase for _, phase in pods], desired)
        if RANK[state] > RANK[known]:
            write_state(key, state, replica_statuses(key[1], types, pods))

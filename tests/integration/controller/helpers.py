"""Helpers for the controller integration tests: jobs, a hand-driven kubelet, waits.

The cluster runs with no kubelet, so these helpers write pod status through the pods/status
subresource exactly as kubelet would; every status the controller reacts to went over HTTP.
"""

from __future__ import annotations

import threading
import time
import uuid
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ascendjob_controller import metrics
from ascendjob_controller.controller import AscendJobController, ControllerOptions
from ascendjob_controller.kube.client import (
    ASCENDJOBS,
    EVENTS,
    PODGROUPS,
    PODS,
    SERVICES,
    KubeClient,
    is_not_found,
)
from tests.namespaces import create_namespace

WAIT = 45.0  # generous: two cores shared with other engineers
JOB_LABEL = "training.kubeflow.org/job-name"


def make_client(cluster: Any) -> KubeClient:
    return KubeClient.from_kubeconfig(str(cluster.kubeconfig_path), qps=1000.0, burst=1000)


def started(cluster: Any, options: ControllerOptions) -> AscendJobController:
    """A controller with `options`, its reconciles recorded, once its informers have synced."""
    ctl = AscendJobController(make_client(cluster), options)
    reconciles(ctl)
    ctl.start()
    wait_for(ctl.has_synced, "the informers to sync")
    return ctl


def batched(cluster: Any, period: float) -> AscendJobController:
    """A started controller whose syncs that can wait wait `period` seconds (2 workers, no
    gang scheduling): the batching tests' controller."""
    return started(
        cluster, ControllerOptions(workers=2, gang_scheduling=False, pod_batch_seconds=period)
    )


def fresh_namespace(client: KubeClient, prefix: str = "t") -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    return create_namespace(client, name)


def wait_for(fn: Callable[[], Any], what: str, timeout: float = WAIT) -> Any:
    """Poll until `fn` returns something truthy; fail with the last value seen."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        pause.wait(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- jobs ----------------------------------------------------------------------------------------
def container(name: str = "ascend", npus: int = 1) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "image": "train:latest"}
    if npus:
        c["resources"] = {
            "requests": {"huawei.com/Ascend910": npus},
            "limits": {"huawei.com/Ascend910": npus},
        }
    return c


def replica(replicas: int, policy: str = "Never") -> dict[str, Any]:
    return {
        "replicas": replicas,
        "restartPolicy": policy,
        "template": {"spec": {"containers": [container()]}},
    }


def pytorch_job(
    name: str,
    *,
    workers: int = 1,
    policy: str = "Never",
    run_policy: dict[str, Any] | None = None,
    framework: str = "pytorch",
    scheduler: str | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "replicaSpecs": {"Master": replica(1, policy), "Worker": replica(workers, policy)}
    }
    if run_policy:
        spec["runPolicy"] = run_policy
    if scheduler:
        spec["schedulerName"] = scheduler
    return {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {"name": name, "labels": {"framework": framework}},
        "spec": spec,
    }


def get_job(client: KubeClient, ns: str, name: str) -> dict[str, Any] | None:
    try:
        return client.get(ASCENDJOBS, ns, name)
    except Exception as err:
        if is_not_found(err):
            return None
        raise


def status_of(client: KubeClient, ns: str, name: str) -> dict[str, Any]:
    job = get_job(client, ns, name)
    return (job or {}).get("status") or {}


def state_of(status: dict[str, Any]) -> str | None:
    conditions = status.get("conditions") or []
    return conditions[-1]["type"] if conditions else None


def condition(status: dict[str, Any], ctype: str) -> dict[str, Any] | None:
    for c in status.get("conditions") or []:
        if c.get("type") == ctype:
            return dict(c)
    return None


def wait_state(client: KubeClient, ns: str, name: str, state: str, timeout: float = WAIT) -> Any:
    def check() -> dict[str, Any] | None:
        status = status_of(client, ns, name)
        return status if state_of(status) == state else None

    return wait_for(check, f"job {ns}/{name} in state {state}", timeout)


def job_events(client: KubeClient, ns: str, name: str) -> list[dict[str, Any]]:
    items = client.list(EVENTS, ns).get("items") or []
    return [e for e in items if (e.get("involvedObject") or {}).get("name") == name]


def wait_event(client: KubeClient, ns: str, name: str, reason: str) -> dict[str, Any]:
    def check() -> dict[str, Any] | None:
        for event in job_events(client, ns, name):
            if event.get("reason") == reason:
                return event
        return None

    result: dict[str, Any] = wait_for(check, f"event {reason} on {ns}/{name}")
    return result


def pods_of(client: KubeClient, ns: str, name: str) -> dict[str, dict[str, Any]]:
    items = client.list(PODS, ns, label_selector=f"{JOB_LABEL}={name}").get("items") or []
    return {p["metadata"]["name"]: p for p in items}


def wait_recreated(
    client: KubeClient, ns: str, job: str, pod_name: str, old_uid: str
) -> dict[str, Any]:
    """The pod `pod_name` of `job` once it exists again under a uid other than `old_uid`."""

    def check() -> dict[str, Any] | None:
        pod = pods_of(client, ns, job).get(pod_name)
        return pod if pod and pod["metadata"]["uid"] != old_uid else None

    result: dict[str, Any] = wait_for(check, f"{pod_name} recreated")
    return result


def wait_pods(client: KubeClient, ns: str, name: str, count: int) -> dict[str, dict[str, Any]]:
    def check() -> dict[str, dict[str, Any]] | None:
        pods = {
            n: p
            for n, p in pods_of(client, ns, name).items()
            if not p["metadata"].get("deletionTimestamp")
        }
        return pods if len(pods) == count else None

    result: dict[str, dict[str, Any]] = wait_for(check, f"{count} pods of {ns}/{name}")
    return result


def podgroup_of(client: KubeClient, ns: str, job: dict[str, Any]) -> dict[str, Any] | None:
    name = f"{job['metadata']['name']}-{job['metadata']['uid']}"
    try:
        return client.get(PODGROUPS, ns, name)
    except Exception as err:
        if is_not_found(err):
            return None
        raise


def sample(name: str, labels: dict[str, str]) -> float:
    return metrics.REGISTRY.get_sample_value(name, labels) or 0.0


def reconcile_total(controller: str = metrics.CONTROLLER_NAME) -> float:
    """controller_runtime_reconcile_total over every result (the registry is process-wide)."""
    return sum(
        sample("controller_runtime_reconcile_total", {"controller": controller, "result": r})
        for r in metrics.RECONCILE_RESULTS
    )


# --- what the controller has reconciled ----------------------------------------------------------
# (job resourceVersion, {(kind, name, resourceVersion)} of its pods, services and PodGroup)
Snapshot = tuple[str | None, frozenset[tuple[str, str, str]]]


def _rv(obj: dict[str, Any]) -> str:
    return str(obj["metadata"].get("resourceVersion") or "")


def _snapshot(
    job: dict[str, Any] | None,
    pods: list[dict[str, Any]],
    services: list[dict[str, Any]],
    podgroup: dict[str, Any] | None,
) -> Snapshot:
    children = {("Pod", p["metadata"]["name"], _rv(p)) for p in pods}
    children |= {("Service", s["metadata"]["name"], _rv(s)) for s in services}
    if podgroup is not None:
        children.add(("PodGroup", podgroup["metadata"]["name"], _rv(podgroup)))
    return (_rv(job) if job is not None else None), frozenset(children)


class Reconciles:
    """Every reconcile the controller finished, with what its caches held when it began.

    This is the positive event a "must not happen" check waits for instead of a sleep: once a
    reconcile that started from the job and children as they are now has returned, the
    controller has acted on everything that happened to them (its requests are sent before
    the reconcile returns), so whatever it was going to do about it, it has done.
    """

    def __init__(self, ctl: AscendJobController) -> None:
        self._ctl = ctl
        self._lock = threading.Lock()
        self._seen: dict[str, set[Snapshot]] = {}
        self._count: dict[str, int] = {}
        # The runner looks its reconcile function up on every key: wrapping it records every
        # reconcile from now on without touching the controller's code.
        inner = ctl.runner._reconcile

        def recorded(key: str) -> Any:
            began = self.cached(key)
            try:
                return inner(key)
            finally:
                with self._lock:
                    self._seen.setdefault(key, set()).add(began)
                    self._count[key] = self._count.get(key, 0) + 1

        ctl.runner._reconcile = recorded  # type: ignore[method-assign]

    def count(self, key: str) -> int:
        """How many reconciles of `key` have finished."""
        with self._lock:
            return self._count.get(key, 0)

    def cached(self, key: str) -> Snapshot:
        """The job `key` and its children as the controller's caches hold them now."""
        ctl = self._ctl
        ns, _, name = key.partition("/")
        job = ctl.jobs.store.get(key)

        def labelled(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [
                o
                for o in objs
                if o["metadata"].get("namespace") == ns
                and (o["metadata"].get("labels") or {}).get(JOB_LABEL) == name
            ]

        podgroup = None
        if job is not None and ctl.podgroups is not None:
            podgroup = ctl.podgroups.store.get(f"{ns}/{name}-{job['metadata']['uid']}")
        return _snapshot(
            job, labelled(ctl.pods.store.list()), labelled(ctl.services.store.list()), podgroup
        )

    def on_server(self, client: KubeClient, key: str) -> Snapshot:
        """The job `key` and its children as the API server holds them now."""
        ns, _, name = key.partition("/")
        job = get_job(client, ns, name)
        selector = f"{JOB_LABEL}={name}"
        pods = client.list(PODS, ns, label_selector=selector).get("items") or []
        services = client.list(SERVICES, ns, label_selector=selector).get("items") or []
        podgroup = podgroup_of(client, ns, job) if job is not None else None
        return _snapshot(job, pods, services, podgroup)

    def reconciled(self, key: str, snapshot: Snapshot) -> bool:
        with self._lock:
            return snapshot in self._seen.get(key, set())

    def wait_caught_up(self, client: KubeClient, ns: str, name: str) -> Snapshot:
        """Wait until a reconcile of `ns/name` has finished that began from what the server
        holds now; the snapshot it saw. Afterwards nothing more is due from the controller."""
        key = f"{ns}/{name}"
        last: list[Snapshot] = []

        def check() -> Snapshot | None:
            server = self.on_server(client, key)
            last[:] = [server, self.cached(key)]
            return server if self.reconciled(key, server) else None

        try:
            result: Snapshot = wait_for(check, f"a reconcile of {key} from the server's state")
        except AssertionError as err:
            raise AssertionError(f"{err}; server then cache: {last}") from None
        return result

    def wait_cache_reconciled(self, key: str) -> Snapshot:
        """Like wait_caught_up, from the controller's caches only (no request to the API)."""

        def check() -> Snapshot | None:
            cached = self.cached(key)
            return cached if self.reconciled(key, cached) else None

        result: Snapshot = wait_for(check, f"a reconcile of {key} from what its caches hold now")
        return result

    def wait_count(self, key: str, count: int) -> None:
        wait_for(lambda: self.count(key) >= count, f"{count} finished reconciles of {key}")


_RECONCILES: weakref.WeakKeyDictionary[AscendJobController, Reconciles] = (
    weakref.WeakKeyDictionary()
)


def reconciles(ctl: AscendJobController) -> Reconciles:
    """The reconcile log of `ctl` (start_controller installs it before the workers start)."""
    found = _RECONCILES.get(ctl)
    if found is None:
        found = _RECONCILES[ctl] = Reconciles(ctl)
    return found


# --- a kubelet by hand ---------------------------------------------------------------------------
class Kubelet:
    """Writes pod status through pods/status as kubelet would (no scheduling, no timing)."""

    def __init__(self, client: KubeClient) -> None:
        self.client = client

    def _write(self, pod: dict[str, Any], status: dict[str, Any]) -> None:
        meta = pod["metadata"]
        self.client.patch(
            PODS, meta["namespace"], meta["name"], {"status": status}, subresource="status"
        )

    @staticmethod
    def _names(pod: dict[str, Any]) -> list[str]:
        return [c["name"] for c in pod["spec"]["containers"]]

    def running(
        self, pod: dict[str, Any], restart_count: int = 0, last_code: int | None = None
    ) -> None:
        statuses = []
        for cname in self._names(pod):
            cs: dict[str, Any] = {
                "name": cname,
                "ready": True,
                "started": True,
                "restartCount": restart_count,
                "image": "train:latest",
                "imageID": "",
                "state": {"running": {"startedAt": now()}},
            }
            if last_code is not None:
                cs["lastState"] = {
                    "terminated": {"exitCode": last_code, "reason": "Error", "finishedAt": now()}
                }
            statuses.append(cs)
        self._write(
            pod,
            {
                "phase": "Running",
                "podIP": "10.244.0.10",
                "hostIP": "172.18.0.2",
                "startTime": now(),
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": statuses,
            },
        )

    def terminated(self, pod: dict[str, Any], code: int, restart_count: int = 0) -> None:
        phase = "Succeeded" if code == 0 else "Failed"
        statuses = [
            {
                "name": cname,
                "ready": False,
                "restartCount": restart_count,
                "image": "train:latest",
                "imageID": "",
                "state": {
                    "terminated": {
                        "exitCode": code,
                        "reason": "Completed" if code == 0 else "Error",
                        "finishedAt": now(),
                    }
                },
            }
            for cname in self._names(pod)
        ]
        self._write(pod, {"phase": phase, "containerStatuses": statuses})

    def succeeded(self, pod: dict[str, Any]) -> None:
        self.terminated(pod, 0)

    def failed(self, pod: dict[str, Any], code: int) -> None:
        self.terminated(pod, code)

    def restart_container(
        self, pod: dict[str, Any], restart_count: int, last_code: int = 1
    ) -> None:
        """An in-place restart (OnFailure/Always): Running again with the counter raised."""
        self.running(pod, restart_count=restart_count, last_code=last_code)

    def run_all(self, pods: dict[str, dict[str, Any]]) -> None:
        for pod in pods.values():
            self.running(pod)

    def succeed_all(self, pods: dict[str, dict[str, Any]]) -> None:
        for pod in pods.values():
            self.succeeded(pod)

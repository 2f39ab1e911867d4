"""What the two peers create and write for an AscendJob: the bodies and the state rule.

The peers do the lifecycle our controller does for the benchmark's job (a Master and a Worker,
restartPolicy Never, cleanPodPolicy Running): the leader Service, one pod per replica, status
Created -> Running -> Succeeded (or Failed) as conditions with `conditions[-1].type` the state,
and the Service deleted once the job is finished. Every status write also carries
`replicaStatuses`, which the API reference makes mandatory beside the conditions: a status
without it is not one a conforming controller may write, so no peer leaves it out.

The children are the ones MindCluster's ascend-operator makes for this job
(docs/ascend-parity.md, "Children" and "Environment the real operator injects"), as ours are:
the names `<job>-<rtype>-<index>`; the `training.kubeflow.org/*`, short and `group-name`
labels; the `hccl/rankIndex` annotation; on the training container the Ascend variables
(`ASCEND_VISIBLE_DEVICES` by fieldRef, `MINDX_TASK_ID`, `HostNetwork`,
`HCCL_LOGIC_SUPERPOD_ID`, `REPLICA_TYPE`) and the torch ones (`MASTER_ADDR` at the Service's
ClusterIP, `MASTER_PORT`, `WORLD_SIZE`, `LOCAL_WORLD_SIZE`, `RANK`, `LOCAL_RANK`). A pod
without them would not train on an Ascend node, so a peer that left them out would be
measured doing less than the job needs. Written for the benchmark's job only (PyTorch, every
replica requesting NPUs, no `sp-block`); bench_peers checks every contender's pods against
ours, so a drift is caught.

Kept free of `ascendjob_controller` and `kubernetes` imports on purpose: the perfect client
imports only this and the standard library, so its RSS is that of a minimal client.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Iterable
from typing import Any

GROUP = "mindxdl.gitee.com"
VERSION = "v1"
PLURAL = "ascendjobs"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "AscendJob"
JOB_LABEL = "training.kubeflow.org/job-name"
TYPE_LABEL = "training.kubeflow.org/replica-type"
INDEX_LABEL = "training.kubeflow.org/replica-index"
ROLE_LABEL = "training.kubeflow.org/job-role"
OPERATOR_LABEL = "training.kubeflow.org/operator-name"
GROUP_LABEL = "group-name"
SHORT_JOB_LABEL = "job-name"
SHORT_TYPE_LABEL = "replica-type"
SHORT_INDEX_LABEL = "replica-index"
#: The operator the pods say manages them: the peers stand in for ours, so the same value.
OPERATOR_NAME = "ascendjob-controller"
RANK_ANNOTATION = "hccl/rankIndex"
NPU_PREFIX = "huawei.com/"
TRAINING_CONTAINER = "ascend"
LEADER = "Master"
PORT = 2222
PORT_NAME = "ascendjob-port"

CREATED, RUNNING, SUCCEEDED, FAILED = "Created", "Running", "Succeeded", "Failed"
TERMINAL = frozenset({SUCCEEDED, FAILED})
# Progress order: a status write may only move a job to a higher rank (no regressions).
RANK: dict[str | None, int] = {None: 0, CREATED: 1, RUNNING: 2, SUCCEEDED: 3, FAILED: 3}
_REASONS = {
    CREATED: ("JobCreated", "is created."),
    RUNNING: ("JobRunning", "is running."),
    SUCCEEDED: ("JobSucceeded", "successfully completed."),
    FAILED: ("JobFailed", "has failed."),
}

JSON = dict[str, Any]


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def replicas(job: JSON) -> list[tuple[str, int]]:
    """(replica type, index) of every pod the job asks for, the leader first."""
    specs: JSON = (job.get("spec") or {}).get("replicaSpecs") or {}
    order = sorted(specs, key=lambda rtype: (rtype != LEADER, rtype))
    return [(rtype, i) for rtype in order for i in range(int(specs[rtype].get("replicas", 1)))]


def pod_name(job_name: str, rtype: str, index: int) -> str:
    return f"{job_name}-{rtype.lower()}-{index}"


def service_name(job_name: str) -> str:
    return pod_name(job_name, LEADER, 0)


def owner_reference(job: JSON) -> JSON:
    """The controller reference our pods carry (garbage collection follows it)."""
    meta = job["metadata"]
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def service_body(job: JSON) -> JSON:
    """The leader's ClusterIP Service (no ownerReference: each peer adds it its own way)."""
    name = job["metadata"]["name"]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(name),
            "labels": {
                GROUP_LABEL: GROUP,
                JOB_LABEL: name,
                TYPE_LABEL: LEADER.lower(),
                OPERATOR_LABEL: OPERATOR_NAME,
                SHORT_JOB_LABEL: name,
            },
        },
        "spec": {
            "type": "ClusterIP",
            "selector": {JOB_LABEL: name, TYPE_LABEL: LEADER.lower(), INDEX_LABEL: "0"},
            "ports": [{"name": PORT_NAME, "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
        },
    }


def lifecycle_events(job: JSON, state: str) -> list[tuple[str, str, str]]:
    """(type, reason, message) of the Events ours sends when the benchmark's job reaches
    `state`: job/child_events.py's (one Event per kind of child created; on success, the
    transition's Event naming the Service its cleanup deleted). For the perfect client's
    analysis variant, which sends what ours sends so that only the way of sending differs.
    The benchmark's jobs succeed; a failure's Event carries the failure's own message, which
    the peers do not know, so none is given for it."""
    name = job["metadata"]["name"]
    if state == CREATED:
        pods = [pod_name(name, rtype, index) for rtype, index in replicas(job)]
        what = f"pod: {pods[0]}" if len(pods) == 1 else f"{len(pods)} pods: {', '.join(pods)}"
        return [
            ("Normal", "SuccessfulCreateService", f"Created service: {service_name(name)}"),
            ("Normal", "SuccessfulCreatePod", f"Created {what}"),
        ]
    if state == SUCCEEDED:
        reason, text = _REASONS[state]
        key = f"{job['metadata'].get('namespace', '')}/{name}"
        return [
            (
                "Normal",
                reason,
                f"AscendJob {key} {text[:-1]}. Deleted service: {service_name(name)}.",
            )
        ]
    return []


def event_body(job: JSON, type_: str, reason: str, message: str, component: str) -> JSON:
    """A core/v1 Event about `job`, shaped as ours (kube/events.py): a new Event, count 1."""
    meta = job["metadata"]
    stamp = now()
    involved = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": meta["name"],
        "namespace": meta.get("namespace", ""),
        "uid": meta.get("uid", ""),
        "resourceVersion": meta.get("resourceVersion", ""),
    }
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": f"{meta['name']}.{time.time_ns():x}", "namespace": meta["namespace"]},
        "involvedObject": {k: v for k, v in involved.items() if v},
        "reason": reason,
        "message": message,
        "type": type_,
        "count": 1,
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "source": {"component": component},
        "reportingComponent": component,
    }


def pod_body(job: JSON, rtype: str, index: int, cluster_ip: str) -> JSON:
    """One replica's pod from its template: labels, rank annotation and env as ours (the
    module docstring says which); no ownerReference, each peer adds it its own way."""
    name = job["metadata"]["name"]
    template = copy.deepcopy(job["spec"]["replicaSpecs"][rtype].get("template") or {})
    meta = template.get("metadata") or {}
    spec: JSON = template.get("spec") or {}
    rank = replicas(job).index((rtype, index))  # the leader first, then the Workers
    labels = {**(meta.get("labels") or {}), **pod_labels(name, rtype, index)}
    annotations = {**(meta.get("annotations") or {}), RANK_ANNOTATION: str(rank)}
    containers = spec.get("containers") or []
    for container in containers:
        _quantities_as_strings(container.get("resources") or {})
    if containers:
        main = next((c for c in containers if c.get("name") == TRAINING_CONTAINER), containers[0])
        taken = {item.get("name") for item in main.get("env") or []}
        env = pod_env(job, rtype, rank, cluster_ip, main, spec.get("hostNetwork") is True)
        main["env"] = [*(main.get("env") or []), *(e for e in env if e["name"] not in taken)]
    spec["restartPolicy"] = "Never"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(name, rtype, index),
            "labels": labels,
            "annotations": annotations,
        },
        "spec": spec,
    }


def pod_labels(job_name: str, rtype: str, index: int) -> dict[str, str]:
    """The labels every replica pod carries; the leader's also names its role."""
    labels = {
        GROUP_LABEL: GROUP,
        JOB_LABEL: job_name,
        TYPE_LABEL: rtype.lower(),
        INDEX_LABEL: str(index),
        OPERATOR_LABEL: OPERATOR_NAME,
        SHORT_JOB_LABEL: job_name,
        SHORT_TYPE_LABEL: rtype.lower(),
        SHORT_INDEX_LABEL: str(index),
    }
    if rtype == LEADER:
        labels[ROLE_LABEL] = "master"
    return labels


def pod_env(
    job: JSON, rtype: str, rank: int, cluster_ip: str, container: JSON, host_network: bool
) -> list[JSON]:
    """The Ascend and torch variables of one pod's training container.

    Every replica of the benchmark's job requests NPUs, so the world is every replica's
    NPUs and the ranks count the leader as 0.
    """
    device, npus = _npu_request(container)
    env: list[JSON] = []
    if device is not None:
        path = f"metadata.annotations['{device}']"
        env.append(
            {"name": "ASCEND_VISIBLE_DEVICES", "valueFrom": {"fieldRef": {"fieldPath": path}}}
        )
    env += [
        _var("MINDX_TASK_ID", job["metadata"]["uid"]),
        _var("HostNetwork", str(host_network).lower()),
        _var("HCCL_LOGIC_SUPERPOD_ID", "0"),  # no sp-block annotation on the bench's job
        _var("REPLICA_TYPE", rtype),
        _var("MASTER_ADDR", cluster_ip),
        _var("MASTER_PORT", str(PORT)),
        _var("WORLD_SIZE", str(npus * len(replicas(job)))),
        _var("LOCAL_WORLD_SIZE", str(npus)),
        _var("RANK", str(rank)),
        _var("LOCAL_RANK", ",".join(str(i) for i in range(npus))),
    ]
    return env


def _var(name: str, value: str) -> JSON:
    return {"name": name, "value": value}


def _npu_request(container: JSON) -> tuple[str | None, int]:
    """The container's first `huawei.com/*` request: its name and count."""
    requests = (container.get("resources") or {}).get("requests") or {}
    for key, value in requests.items():
        if key.startswith(NPU_PREFIX):
            return key, int(str(value))
    return None, 0


def _quantities_as_strings(resources: JSON) -> None:
    """`1` -> `"1"`: the canonical form, and the official client's models reject numbers."""
    for kind in ("requests", "limits"):
        values = resources.get(kind)
        if isinstance(values, dict):
            resources[kind] = {name: str(value) for name, value in values.items()}


def state_of(phases: Iterable[str | None], desired: int) -> str:
    """The job's state from its pods' phases, by our controller's rule for restartPolicy Never.

    Any Failed pod fails the job; all Succeeded succeeds it; all Running or Succeeded is Running.
    """
    seen = list(phases)
    if FAILED in seen:
        return FAILED
    done = seen.count(SUCCEEDED)
    if desired and done == desired:
        return SUCCEEDED
    if desired and done + seen.count(RUNNING) == desired:
        return RUNNING
    return CREATED


def state_of_status(status: JSON | None) -> str | None:
    """`conditions[-1].type` when it is True: what the bench and kubectl read as the state."""
    conditions = (status or {}).get("conditions") or []
    if conditions and conditions[-1].get("status") == "True":
        return str(conditions[-1].get("type"))
    return None


def conditions(state: str, job_key: str, ran: bool, stamp: str) -> list[JSON]:
    """The full condition list for `state`, shaped as ours (Running set False once finished)."""

    def condition(ctype: str, status: str, reason_of: str) -> JSON:
        reason, text = _REASONS[reason_of]
        return {
            "type": ctype,
            "status": status,
            "reason": reason,
            "message": f"AscendJob {job_key} {text}",
            "lastUpdateTime": stamp,
            "lastTransitionTime": stamp,
        }

    out = [condition(CREATED, "True", CREATED)]
    if state == RUNNING:
        out.append(condition(RUNNING, "True", RUNNING))
    elif state in TERMINAL:
        if ran:
            out.append(condition(RUNNING, "False", state))
        out.append(condition(state, "True", state))
    return out


def replica_types(job: JSON) -> list[str]:
    """The job's replica types, as its spec names them."""
    return sorted((job.get("spec") or {}).get("replicaSpecs") or {})


def replica_statuses(
    job_name: str, types: Iterable[str], pods: Iterable[tuple[str | None, str | None]]
) -> JSON:
    """`status.replicaStatuses` from the job's pods, given as (replica-type label, phase).

    Counted as our controller counts (job/status.py): a Running pod is active, Succeeded and
    Failed ones are counted as such, a Pending one not at all; each with the label selector
    that finds that type's pods.
    """
    seen = list(pods)
    out: JSON = {}
    for rtype in types:
        label = rtype.lower()
        phases = [phase for pod_type, phase in seen if pod_type == label]
        out[rtype] = {
            "active": phases.count(RUNNING),
            "succeeded": phases.count(SUCCEEDED),
            "failed": phases.count(FAILED),
            "labelSelector": {"matchLabels": {JOB_LABEL: job_name, TYPE_LABEL: label}},
        }
    return out


def status_patch(state: str, job_key: str, ran: bool, replica_status: JSON) -> JSON:
    """A merge patch for the status subresource: the conditions list is replaced whole, and
    `replicaStatuses` (mandatory, as the conditions are) says what the pods were doing."""
    status: JSON = {
        "conditions": conditions(state, job_key, ran, now()),
        "replicaStatuses": replica_status,
    }
    if state in TERMINAL:
        status["completionTime"] = now()
    return {"status": status}

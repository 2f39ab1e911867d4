"""What the two peers create and write for an AscendJob: the bodies and the state rule.

The peers do the lifecycle our controller does for the benchmark's job (a Master and a Worker,
restartPolicy Never, cleanPodPolicy Running): the leader Service, one pod per replica, status
Created -> Running -> Succeeded (or Failed) as conditions with `conditions[-1].type` the state,
and the Service deleted once the job is finished. Every status write also carries
`replicaStatuses`, which the API reference makes mandatory beside the conditions: a status
without it is not one a conforming controller may write, so no peer leaves it out. The
bodies carry what our pods minimally carry (ascendjob_controller/job/desired.py): the
deterministic names `<job>-<rtype>-<index>`, the `training.kubeflow.org/*` and short
`job-name` labels, the template's annotations, the torch rendezvous env pointing at the
Service's ClusterIP, restartPolicy Never.

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
SHORT_JOB_LABEL = "job-name"
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
            "labels": {JOB_LABEL: name, TYPE_LABEL: LEADER.lower(), SHORT_JOB_LABEL: name},
        },
        "spec": {
            "type": "ClusterIP",
            "selector": {JOB_LABEL: name, TYPE_LABEL: LEADER.lower(), INDEX_LABEL: "0"},
            "ports": [{"name": PORT_NAME, "port": PORT, "targetPort": PORT, "protocol": "TCP"}],
        },
    }


def pod_body(job: JSON, rtype: str, index: int, cluster_ip: str) -> JSON:
    """One replica's pod from its template, with the rendezvous env (no ownerReference)."""
    name = job["metadata"]["name"]
    template = copy.deepcopy(job["spec"]["replicaSpecs"][rtype].get("template") or {})
    meta = template.get("metadata") or {}
    spec: JSON = template.get("spec") or {}
    everyone = replicas(job)
    labels = {
        **(meta.get("labels") or {}),
        JOB_LABEL: name,
        TYPE_LABEL: rtype.lower(),
        INDEX_LABEL: str(index),
        SHORT_JOB_LABEL: name,
    }
    if rtype == LEADER:
        labels[ROLE_LABEL] = "master"
    env = [
        {"name": "MASTER_ADDR", "value": cluster_ip},
        {"name": "MASTER_PORT", "value": str(PORT)},
        {"name": "WORLD_SIZE", "value": str(len(everyone))},
        {"name": "RANK", "value": str(everyone.index((rtype, index)))},
        {"name": "REPLICA_TYPE", "value": rtype},
    ]
    for container in spec.get("containers") or []:
        container["env"] = [*(container.get("env") or []), *env]
        _quantities_as_strings(container.get("resources") or {})
    spec["restartPolicy"] = "Never"
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(name, rtype, index),
            "labels": labels,
            "annotations": dict(meta.get("annotations") or {}),
        },
        "spec": spec,
    }


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

"""Per-framework environment of the training container (design section 4, "Environment").

Rank numbering, the one subtle rule: when the leader's container requests NPUs too (as in the
sample job) the leader trains as well, so it is rank 0 and Worker i is rank i+1, and `n` counts
every replica; otherwise only the Workers train and Worker i is rank i (the leader is given
rank 0 in its annotation, which no training process reads).

Decisions the design leaves open, made here:
- `npus` for the global sizes (WORLD_SIZE, MS_WORKER_NUM, CM_WORKER_SIZE) is the Worker
  container's NPU request (the leader's when there is no Worker type); the LOCAL_* values use
  the pod's own container, so a leader without NPUs gets LOCAL_WORLD_SIZE 0 and no LOCAL_RANK.
- Framework variables are left out for every pod when that reference container requests no
  NPUs: such a job is not an HCCL job and the variables would only mislead it.
- REPLICA_TYPE is the lower-case replica type, the same spelling as the replica-type label.
- Variables the template already sets are left exactly as the template has them.
"""

from __future__ import annotations

from typing import Any

from ascendjob_controller.job.quantity import parse_quantity
from ascendjob_controller.job.types import (
    DEFAULT_PORT,
    MAX_NPUS,
    MINDSPORE,
    NPU_RESOURCE,
    NPU_RESOURCE_PREFIX,
    PORT_NAME,
    PYTORCH,
    TENSORFLOW,
    JobView,
    ReplicaView,
    dig,
    training_container,
)


def npus_of(container: dict[str, Any] | None) -> int:
    """NPUs the container requests: `huawei.com/Ascend910`, else any other `huawei.com/*`.

    Limits are read when requests are absent, because for extended resources the API server
    defaults requests to the limits.
    """
    if container is None:
        return 0
    for section in ("requests", "limits"):
        resources = dig(container, "resources", section) or {}
        if not isinstance(resources, dict):
            continue
        keys = [NPU_RESOURCE, *sorted(k for k in resources if k.startswith(NPU_RESOURCE_PREFIX))]
        for key in keys:
            if key in resources:
                return _quantity_int(resources[key])
    return 0


def _quantity_int(value: Any) -> int:
    """Whole devices; 0 for anything else (validation rejects it before pods are built)."""
    amount = parse_quantity(value)
    if amount is None or amount < 0 or amount != int(amount):
        return 0
    return min(int(amount), MAX_NPUS)


def spec_container(spec: ReplicaView | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    containers = dig(spec.template, "spec", "containers") or []
    return training_container(containers)


def leader_port(view: JobView) -> int:
    """The leader's `ascendjob-port`, 2222 when the leader container does not declare it."""
    container = spec_container(view.leader_spec)
    for port in (container or {}).get("ports") or []:
        if port.get("name") == PORT_NAME and isinstance(port.get("containerPort"), int):
            return int(port["containerPort"])
    return DEFAULT_PORT


def leader_trains(view: JobView) -> bool:
    """True when the leader's container requests NPUs, i.e. the leader takes a rank."""
    return npus_of(spec_container(view.leader_spec)) > 0


def rank_of(view: JobView, rtype: str, index: int) -> int:
    """The pod's global rank (also its `hccl/rankIndex` annotation)."""
    if rtype == view.leader:
        return 0
    return index + 1 if leader_trains(view) else index


def world_nodes(view: JobView) -> int:
    """`n` of design section 4: Worker replicas, plus the leader when it trains."""
    worker = view.worker_spec
    workers = worker.replicas if worker else 0
    return workers + (1 if leader_trains(view) and view.leader_spec else 0)


def reference_npus(view: JobView) -> int:
    spec = view.worker_spec or view.leader_spec
    return npus_of(spec_container(spec))


def _var(name: str, value: str | int) -> dict[str, Any]:
    return {"name": name, "value": str(value)}


def _pod_ip(name: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def job_env(view: JobView, rtype: str, index: int, service_ip: str | None) -> list[dict[str, Any]]:
    """Every variable we set on this pod's training container, in a stable order."""
    env = [_var("MINDX_TASK_ID", view.uid), _var("REPLICA_TYPE", rtype.lower())]
    npus = reference_npus(view)
    if npus <= 0:
        return env
    own = npus_of(spec_container(view.replica(rtype)))
    is_leader = rtype == view.leader
    has_leader = view.leader_spec is not None
    world = npus * world_nodes(view)
    rank = rank_of(view, rtype, index)
    port = leader_port(view)
    ip = service_ip or ""

    if view.framework == PYTORCH:
        env += [_var("MASTER_ADDR", ip), _var("MASTER_PORT", port)] if has_leader else []
        env += [_var("WORLD_SIZE", world), _var("LOCAL_WORLD_SIZE", own), _var("RANK", rank)]
        if own > 0:
            env.append(_var("LOCAL_RANK", ",".join(str(i) for i in range(own))))
    elif view.framework == MINDSPORE:
        if has_leader:
            host = _pod_ip("MS_SCHED_HOST") if is_leader else _var("MS_SCHED_HOST", ip)
            env += [host, _var("MS_SCHED_PORT", port)]
        env += [
            _var("MS_ROLE", "MS_SCHED" if is_leader else "MS_WORKER"),
            _var("MS_WORKER_NUM", world),
            _var("MS_LOCAL_WORKER", own),
            _var("MS_NODE_RANK", rank),
            _var("MS_SERVER_NUM", 0),
        ]
    elif view.framework == TENSORFLOW:
        chief = _pod_ip("CM_CHIEF_IP") if is_leader else _var("CM_CHIEF_IP", ip)
        env += [
            chief,
            _var("CM_CHIEF_PORT", port),
            _var("CM_CHIEF_DEVICE", 0),
            _var("CM_WORKER_SIZE", world),
            _var("CM_LOCAL_WORKER", own),
            _var("CM_RANK", rank),
            _pod_ip("CM_WORKER_IP"),
        ]
    return env


def merge_env(existing: list[dict[str, Any]], ours: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The template's env followed by ours, skipping names the template already sets."""
    taken = {item.get("name") for item in existing}
    return list(existing) + [item for item in ours if item["name"] not in taken]

"""Per-framework environment of the training container (design section 4, "Environment"), and
what MindCluster's ascend-operator adds to it (ascend-parity.md section 2).

Rank numbering, the one subtle rule: when the leader's container requests NPUs too (as in the
sample job) the leader trains as well, so it is rank 0 and Worker i is rank i+1, and `n` counts
every replica; otherwise only the Workers train and Worker i is rank i (the leader is given
rank 0 in its annotation, which no training process reads).

Every pod gets the common variables, in MindCluster's order:
- `ASCEND_VISIBLE_DEVICES`: a fieldRef to the pod annotation named like its NPU resource, which
  Volcano's Ascend plugin fills with the devices it allocated (`Ascend910-0,...`). Only for a
  container that requests whole NPUs: virtual resources (vNPU slices) are set up by the
  device plugin itself, and a pointer to an annotation nobody writes would only mislead.
- `MINDX_TASK_ID` (the job uid), `HostNetwork` ("true"/"false", from the template).
- `HCCL_LOGIC_SUPERPOD_ID`, only on pods that request NPUs, as MindCluster does: the pod's
  rank divided by the servers of one logical super-pod (`sp-block` chips / the pod's chips).
- `REPLICA_TYPE`: the replica type as the spec spells it once normalised (`Master`, `Worker`).

Framework variables (only when the reference container requests NPUs, see below) include the
process-recovery ones asked for by the job annotation `recover-strategy`, and for MindSpore
`NPU_POD` and the `pod-rescheduling=on` label's `RSC:1`. Those read the job's labels and
annotations, which only a `JobViewWithMeta` carries; a plain `JobView` reads as a job with
none (and `fault-retry-times` does not apply to it).

Decisions the design leaves open, made here:
- `npus` for the global sizes (WORLD_SIZE, MS_WORKER_NUM, CM_WORKER_SIZE) is the Worker
  container's NPU request (the leader's when there is no Worker type); the LOCAL_* values use
  the pod's own container, so a leader without NPUs gets LOCAL_WORLD_SIZE 0 and no LOCAL_RANK.
- Framework variables are left out for every pod when that reference container requests no
  NPUs: such a job is not an HCCL job and the variables would only mislead it.
- Variables the template already sets are left exactly as the template has them.
- A `recover-strategy` without any strategy we know sets nothing (MindCluster would still
  turn the HCCL watchdog off and set an empty HIGH_AVAILABILITY).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ascendjob_controller.job.quantity import parse_quantity
from ascendjob_controller.job.restart import backoff_limit
from ascendjob_controller.job.types import (
    ANNOTATION_RECOVER_STRATEGY,
    ANNOTATION_SP_BLOCK,
    DEFAULT_PORT,
    LABEL_POD_RESCHEDULING,
    MAX_NPUS,
    MINDSPORE,
    NPU_RESOURCE,
    NPU_RESOURCE_PREFIX,
    PHYSICAL_NPU_RESOURCES,
    PORT_NAME,
    PYTORCH,
    SWITCH_ON,
    TENSORFLOW,
    JobView,
    ReplicaView,
    as_dict,
    dig,
    parse_job,
    training_container,
)

#: strategy -> (its HIGH_AVAILABILITY entry for PyTorch, its MS_ENABLE_TFT entries for
#: MindSpore). `recover-in-place` also sets ENABLE_RESTART_FAULT_PROCESS; `elastic-training`
#: is PyTorch-only and does not set ELASTIC_PROCESS_RECOVER_ENABLE.
RECOVER_STRATEGIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "recover": ("recover", ("ARF:1",)),
    "retry": ("retry", ("HCCE:1", "UCE:1")),
    "dump": ("dump", ("TTP:1",)),
    "recover-in-place": ("recover", ("ARF:1",)),
    "exit": ("recover", ("ARF:1",)),
    "elastic-training": ("elastic-training", ()),
}
IN_PLACE = "recover-in-place"
ELASTIC = "elastic-training"
MS_RESCHEDULE = "RSC:1"


@dataclass(frozen=True)
class JobViewWithMeta(JobView):
    """A `JobView` plus the job's own labels and annotations (string values only).

    MindCluster reads several knobs from the job's metadata (recover-strategy, sp-block,
    pod-rescheduling, fault-retry-times) and copies it onto the PodGroup; `JobView` only
    holds the spec, so this view carries the rest. Build it with `parse_job_with_meta`.
    """

    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)


def _strings(value: Any) -> dict[str, str]:
    """The string entries of a metadata map; anything else (a hand-made object) is dropped."""
    return {k: v for k, v in as_dict(value).items() if isinstance(k, str) and isinstance(v, str)}


def parse_job_with_meta(job: dict[str, Any]) -> JobViewWithMeta:
    """`parse_job` plus metadata; the backoff limit falls back to `fault-retry-times`.

    Same precondition as `parse_job`: the job passed `validation.validate`.
    """
    base = parse_job(job)
    values = {f.name: getattr(base, f.name) for f in fields(JobView)}
    values["backoff_limit"] = backoff_limit(job)
    return JobViewWithMeta(
        **values,
        labels=_strings(dig(job, "metadata", "labels")),
        annotations=_strings(dig(job, "metadata", "annotations")),
    )


def job_labels(view: JobView) -> Mapping[str, str]:
    return view.labels if isinstance(view, JobViewWithMeta) else {}


def job_annotations(view: JobView) -> Mapping[str, str]:
    return view.annotations if isinstance(view, JobViewWithMeta) else {}


# --- NPU requests ------------------------------------------------------------------------------
def _npu_section(container: dict[str, Any] | None) -> dict[str, Any]:
    """The resources section NPUs are read from: requests, else limits when requests name no
    `huawei.com/*` resource (the API server defaults extended requests to the limits)."""
    for section in ("requests", "limits"):
        resources = as_dict(dig(container, "resources", section))
        if any(str(key).startswith(NPU_RESOURCE_PREFIX) for key in resources):
            return resources
    return {}


def npu_resource(container: dict[str, Any] | None) -> str | None:
    """The NPU resource the container requests: `huawei.com/Ascend910`, else the first other
    `huawei.com/*` name in sorted order (MindCluster takes whichever its map yields first)."""
    return _npu_request(container)[0]


def npus_of(container: dict[str, Any] | None) -> int:
    """NPUs the container requests (see `npu_resource`); 0 when it requests none."""
    return _npu_request(container)[1]


def _npu_request(container: dict[str, Any] | None) -> tuple[str | None, int]:
    """(resource, count), memoised on the only part of the container it reads.

    A plan asks a dozen times per pod (env, rank, superpod id, the rank table), and every
    pod of a replica type has the same resources: parsing their quantities again each time
    was a third of building a pod. The memo key keeps each quantity's type beside it, so
    `1`, `1.0` and `True` (equal and hash-equal in Python, not in JSON) stay apart.
    """
    resources = dig(container, "resources")
    if not isinstance(resources, dict):
        return None, 0
    try:
        return _npu_request_of(
            _typed_items(resources.get("requests")), _typed_items(resources.get("limits"))
        )
    except TypeError:  # an unhashable quantity (a list, say): computed without the memo
        return _read_npu_request(container)


def _typed_items(section: Any) -> tuple[tuple[Any, type, Any], ...]:
    if not isinstance(section, dict):
        return ()
    return tuple((key, type(value), value) for key, value in section.items())


@functools.lru_cache(maxsize=256)
def _npu_request_of(
    requests: tuple[tuple[Any, type, Any], ...], limits: tuple[tuple[Any, type, Any], ...]
) -> tuple[str | None, int]:
    container = {
        "resources": {
            "requests": {key: value for key, _, value in requests},
            "limits": {key: value for key, _, value in limits},
        }
    }
    return _read_npu_request(container)


def _read_npu_request(container: dict[str, Any] | None) -> tuple[str | None, int]:
    section = _npu_section(container)
    names = sorted(str(k) for k in section if str(k).startswith(NPU_RESOURCE_PREFIX))
    if not names:
        return None, 0
    name = NPU_RESOURCE if NPU_RESOURCE in names else names[0]
    return name, _quantity_int(section[name])


def clear_npu_cache() -> None:
    """Forget every memoised NPU request (for benchmarks of the cold path, and tests)."""
    _npu_request_of.cache_clear()


def _quantity_int(value: Any) -> int:
    """Whole devices; 0 for anything else (validation rejects it before pods are built)."""
    amount = parse_quantity(value)
    if amount is None or amount < 0 or amount != int(amount):
        return 0
    return min(int(amount), MAX_NPUS)


def visible_devices_resource(container: dict[str, Any] | None) -> str | None:
    """The annotation ASCEND_VISIBLE_DEVICES points at, or None.

    None when the container requests no NPUs, or any virtual `huawei.com/*` resource: as in
    MindCluster, a vNPU request gets no such variable. (MindCluster also counts cpu or memory
    requests as "virtual" and then sets nothing; only NPU names are judged here.)
    """
    section = _npu_section(container)
    if any(
        str(k).startswith(NPU_RESOURCE_PREFIX) and k not in PHYSICAL_NPU_RESOURCES for k in section
    ):
        return None
    return npu_resource(container) if npus_of(container) > 0 else None


def spec_container(spec: ReplicaView | None) -> dict[str, Any] | None:
    if spec is None:
        return None
    containers = dig(spec.template, "spec", "containers") or []
    return training_container(containers)


# --- ranks and sizes ---------------------------------------------------------------------------
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


def sp_block(view: JobView) -> int:
    """The job's `sp-block` annotation (chips per logical super-pod); 0 when absent or not a
    whole number, which MindCluster reads as "no super-pod"."""
    raw = job_annotations(view).get(ANNOTATION_SP_BLOCK, "")
    return int(raw) if raw.isascii() and raw.isdigit() else 0


def logic_superpod_id(rank: int, block: int, chips: int) -> int:
    """`rank / max(1, block / chips)`, 0 without a super-pod block or chips."""
    if block <= 0 or chips <= 0:
        return 0
    return rank // max(1, block // chips)


# --- the variables -----------------------------------------------------------------------------
def _var(name: str, value: str | int) -> dict[str, Any]:
    return {"name": name, "value": str(value)}


def _field(name: str, path: str) -> dict[str, Any]:
    return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}


def _pod_ip(name: str) -> dict[str, Any]:
    return _field(name, "status.podIP")


def common_env(view: JobView, rtype: str, index: int) -> list[dict[str, Any]]:
    """The variables every pod gets, whatever its framework and NPUs (module docstring)."""
    spec = view.replica(rtype)
    container = spec_container(spec)
    env: list[dict[str, Any]] = []
    device = visible_devices_resource(container)
    if device is not None:
        env.append(_field("ASCEND_VISIBLE_DEVICES", f"metadata.annotations['{device}']"))
    host_network = spec is not None and dig(spec.template, "spec", "hostNetwork") is True
    env += [_var("MINDX_TASK_ID", view.uid), _var("HostNetwork", str(host_network).lower())]
    own = npus_of(container)
    if own > 0:
        superpod = logic_superpod_id(rank_of(view, rtype, index), sp_block(view), own)
        env.append(_var("HCCL_LOGIC_SUPERPOD_ID", superpod))
    env.append(_var("REPLICA_TYPE", rtype))
    return env


def recover_strategies(view: JobView) -> list[str]:
    """The known strategies of the `recover-strategy` annotation, in order, once each.

    Unknown entries are skipped, as MindCluster does; blanks around commas are tolerated.
    """
    raw = job_annotations(view).get(ANNOTATION_RECOVER_STRATEGY, "")
    seen: list[str] = []
    for item in raw.split(","):
        name = item.strip()
        if name in RECOVER_STRATEGIES and name not in seen:
            seen.append(name)
    return seen


def _recover_flags(strategies: list[str]) -> list[dict[str, Any]]:
    """The switches every recovery strategy turns on (ascend-parity.md section 2)."""
    env = [_var("PROCESS_RECOVER", SWITCH_ON)]
    if any(name != ELASTIC for name in strategies):
        env.append(_var("ELASTIC_PROCESS_RECOVER_ENABLE", 1))
    if IN_PLACE in strategies:
        env.append(_var("ENABLE_RESTART_FAULT_PROCESS", SWITCH_ON))
    return env


def pytorch_recover_env(view: JobView) -> list[dict[str, Any]]:
    """PyTorch's process-recovery variables for the job's `recover-strategy`."""
    strategies = recover_strategies(view)
    if not strategies:
        return []
    available = sorted({RECOVER_STRATEGIES[name][0] for name in strategies})
    return [
        *_recover_flags(strategies),
        _var("HIGH_AVAILABILITY", ",".join(available)),
        _var("HCCL_ASYNC_ERROR_HANDLING", 0),
    ]


def mindspore_recover_env(view: JobView) -> list[dict[str, Any]]:
    """MindSpore's process-recovery variables: `recover-strategy`, and `pod-rescheduling=on`
    (RSC:1), which alone sets only MS_ENABLE_TFT={RSC:1}."""
    strategies = [name for name in recover_strategies(view) if name != ELASTIC]
    features = {item for name in strategies for item in RECOVER_STRATEGIES[name][1]}
    if job_labels(view).get(LABEL_POD_RESCHEDULING) == SWITCH_ON:
        features.add(MS_RESCHEDULE)
    tft = _var("MS_ENABLE_TFT", "{" + ",".join(sorted(features)) + "}")
    if not strategies:
        return [tft] if features else []
    return [
        *_recover_flags(strategies),
        tft,
        _var("MINDIO_FOR_MINDSPORE", 1),
        _var("MS_ENABLE_THM", "{HCCL_WATCHDOG:0}"),
    ]


@dataclass(frozen=True)
class _Pod:
    """What the framework variables of one pod are computed from."""

    is_leader: bool
    has_leader: bool
    own: int  # this pod's NPUs
    world: int  # npus * n
    rank: int
    port: int
    ip: str  # the leader Service's ClusterIP


def _pytorch_env(view: JobView, pod: _Pod) -> list[dict[str, Any]]:
    env = [_var("MASTER_ADDR", pod.ip), _var("MASTER_PORT", pod.port)] if pod.has_leader else []
    env += [_var("WORLD_SIZE", pod.world), _var("LOCAL_WORLD_SIZE", pod.own)]
    env.append(_var("RANK", pod.rank))
    if pod.own > 0:
        env.append(_var("LOCAL_RANK", ",".join(str(i) for i in range(pod.own))))
    return env + pytorch_recover_env(view)


def _mindspore_env(view: JobView, pod: _Pod) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = []
    if pod.has_leader:
        host = _pod_ip("MS_SCHED_HOST") if pod.is_leader else _var("MS_SCHED_HOST", pod.ip)
        env += [host, _var("MS_SCHED_PORT", pod.port)]
    env += [
        _var("MS_ROLE", "MS_SCHED" if pod.is_leader else "MS_WORKER"),
        _var("MS_WORKER_NUM", pod.world),
        _var("MS_LOCAL_WORKER", pod.own),
        _var("MS_NODE_RANK", pod.rank),
        _var("MS_SERVER_NUM", 0),
        _var("NPU_POD", str(pod.own > 0).lower()),
    ]
    return env + mindspore_recover_env(view)


def _tensorflow_env(pod: _Pod) -> list[dict[str, Any]]:
    chief = _pod_ip("CM_CHIEF_IP") if pod.is_leader else _var("CM_CHIEF_IP", pod.ip)
    return [
        chief,
        _var("CM_CHIEF_PORT", pod.port),
        _var("CM_CHIEF_DEVICE", 0),
        _var("CM_WORKER_SIZE", pod.world),
        _var("CM_LOCAL_WORKER", pod.own),
        _var("CM_RANK", pod.rank),
        _pod_ip("CM_WORKER_IP"),
    ]


def job_env(view: JobView, rtype: str, index: int, service_ip: str | None) -> list[dict[str, Any]]:
    """Every variable we set on this pod's training container, in a stable order."""
    env = common_env(view, rtype, index)
    npus = reference_npus(view)
    if npus <= 0:
        return env
    pod = _Pod(
        is_leader=rtype == view.leader,
        has_leader=view.leader_spec is not None,
        own=npus_of(spec_container(view.replica(rtype))),
        world=npus * world_nodes(view),
        rank=rank_of(view, rtype, index),
        port=leader_port(view),
        ip=service_ip or "",
    )
    if view.framework == PYTORCH:
        return env + _pytorch_env(view, pod)
    if view.framework == MINDSPORE:
        return env + _mindspore_env(view, pod)
    if view.framework == TENSORFLOW:
        return env + _tensorflow_env(pod)
    return env


def merge_env(existing: list[dict[str, Any]], ours: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The template's env followed by ours, skipping names the template already sets."""
    taken = {item.get("name") for item in existing}
    return list(existing) + [item for item in ours if item["name"] not in taken]

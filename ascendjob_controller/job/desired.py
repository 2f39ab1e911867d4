"""The children a job should have: pods, the leader Service, the Volcano PodGroup.

Names are deterministic (`<job>-<rtype lowercase>-<index>`, `<job>-<leader lowercase>-0`,
`<job>-<uid>`), which is our second guard against double creation after the reconciler's
expectations: a duplicate create fails with AlreadyExists instead of producing a twin.

Every body is built from deep copies of the template, so the caller's job dict (shared with the
informer cache) is never mutated.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from ascendjob_controller.job.env import (
    job_annotations,
    job_env,
    job_labels,
    leader_port,
    merge_env,
    rank_of,
)
from ascendjob_controller.job.quantity import add_requests, format_quantity
from ascendjob_controller.job.types import (
    ANNOTATION_LAST_APPLIED,
    ANNOTATION_PODGROUP,
    ANNOTATION_RANK_INDEX,
    ANNOTATION_RECOVER_STRATEGY,
    ANNOTATION_TASK_SPEC,
    API_VERSION,
    DEFAULT_OPERATOR_NAME,
    DEFAULT_PORT,
    EXIT_CODE,
    GROUP,
    KIND,
    LABEL_GROUP_NAME,
    LABEL_JOB_NAME,
    LABEL_JOB_ROLE,
    LABEL_OPERATOR_NAME,
    LABEL_PROCESS_RECOVER,
    LABEL_REPLICA_INDEX,
    LABEL_REPLICA_TYPE,
    NEVER,
    PODGROUP_API_VERSION,
    PODGROUP_KIND,
    PORT_NAME,
    SHORT_JOB_NAME,
    SHORT_REPLICA_INDEX,
    SHORT_REPLICA_TYPE,
    SWITCH_ON,
    TRAINING_CONTAINER,
    VOLCANO,
    JobView,
    as_int,
    dig,
    json_copy,
)


def pod_name(job_name: str, rtype: str, index: int) -> str:
    return f"{job_name}-{rtype.lower()}-{index}"


def service_name(view: JobView) -> str:
    return pod_name(view.name, view.leader, 0)


def podgroup_name(view: JobView) -> str:
    """`<job>-<job uid>`, as MindCluster names it, so Volcano tooling finds it."""
    return f"{view.name}-{view.uid}"


def gang_enabled(view: JobView, gang_scheduling_enabled: bool) -> bool:
    return gang_scheduling_enabled and view.scheduler_name == VOLCANO


def owner_reference(view: JobView) -> dict[str, Any]:
    """The controller ownerReference: garbage collection and the informer's job mapping use it."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "name": view.name,
        "uid": view.uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def desired_pod_names(view: JobView) -> dict[str, tuple[str, int]]:
    """Every pod the spec asks for: name -> (replica type, index), leader first."""
    names: dict[str, tuple[str, int]] = {}
    for spec in view.replicas:
        for index in range(spec.replicas):
            names[pod_name(view.name, spec.rtype, index)] = (spec.rtype, index)
    return names


def selector_labels(view: JobView, rtype: str) -> dict[str, str]:
    """The labels that select one replica type's pods (for replicaStatuses.labelSelector)."""
    return {LABEL_JOB_NAME: view.name, LABEL_REPLICA_TYPE: rtype.lower()}


def pod_labels(
    view: JobView, rtype: str, index: int, operator_name: str = DEFAULT_OPERATOR_NAME
) -> dict[str, str]:
    labels = {
        LABEL_GROUP_NAME: GROUP,
        LABEL_JOB_NAME: view.name,
        LABEL_REPLICA_TYPE: rtype.lower(),
        LABEL_REPLICA_INDEX: str(index),
        LABEL_OPERATOR_NAME: operator_name,
        SHORT_JOB_NAME: view.name,
        SHORT_REPLICA_TYPE: rtype.lower(),
        SHORT_REPLICA_INDEX: str(index),
    }
    if rtype == view.leader:
        labels[LABEL_JOB_ROLE] = "master"
    return labels


def pod_restart_policy(policy: str) -> str:
    """ExitCode is ours, not kubelet's: the pod runs with Never and the controller decides."""
    return NEVER if policy == EXIT_CODE else policy


def _with_default_port(container: dict[str, Any]) -> None:
    ports = list(container.get("ports") or [])
    declared = any(
        port.get("name") == PORT_NAME or port.get("containerPort") == DEFAULT_PORT for port in ports
    )
    if not declared:
        ports.append({"name": PORT_NAME, "containerPort": DEFAULT_PORT, "protocol": "TCP"})
    container["ports"] = ports


def _training_index(containers: list[dict[str, Any]]) -> int:
    for position, container in enumerate(containers):
        if container.get("name") == TRAINING_CONTAINER:
            return position
    return 0


def desired_pod(
    view: JobView,
    rtype: str,
    index: int,
    service_ip: str | None,
    *,
    gang: bool,
    operator_name: str = DEFAULT_OPERATOR_NAME,
) -> dict[str, Any]:
    """The complete pod body for one replica (apiVersion, kind, metadata, spec)."""
    spec = view.replica(rtype)
    if spec is None:
        raise ValueError(f"job {view.name} has no replica type {rtype}")
    template = json_copy(spec.template)
    meta = template.get("metadata") or {}
    pod_spec: dict[str, Any] = template.get("spec") or {}

    labels = dict(meta.get("labels") or {})
    labels.update(pod_labels(view, rtype, index, operator_name))
    annotations = dict(meta.get("annotations") or {})
    annotations[ANNOTATION_RANK_INDEX] = str(rank_of(view, rtype, index))
    if gang:
        annotations[ANNOTATION_PODGROUP] = podgroup_name(view)
        annotations[ANNOTATION_TASK_SPEC] = rtype.lower()
        pod_spec["schedulerName"] = VOLCANO

    containers = pod_spec.get("containers") or []
    if containers:
        main = containers[_training_index(containers)]
        if rtype == view.leader:
            _with_default_port(main)
        main["env"] = merge_env(main.get("env") or [], job_env(view, rtype, index, service_ip))
    pod_spec["restartPolicy"] = pod_restart_policy(spec.restart_policy)

    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": pod_name(view.name, rtype, index),
            "namespace": view.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [owner_reference(view)],
        },
        "spec": pod_spec,
    }


def desired_service(
    view: JobView, operator_name: str = DEFAULT_OPERATOR_NAME
) -> dict[str, Any] | None:
    """The leader's ClusterIP Service, or None for a job without a leader replica."""
    leader = view.leader_spec
    if leader is None:
        return None
    containers = json_copy(dig(leader.template, "spec", "containers") or [])
    ports: list[dict[str, Any]] = []
    if containers:
        main = containers[_training_index(containers)]
        _with_default_port(main)
        for port in main.get("ports") or []:
            number = as_int(port.get("containerPort"))
            if number is None:
                continue
            ports.append(
                {
                    "name": port.get("name") or f"port-{number}",
                    "port": number,
                    "targetPort": number,
                    "protocol": port.get("protocol") or "TCP",
                }
            )
    if not ports:
        ports.append(
            {"name": PORT_NAME, "port": leader_port(view), "targetPort": leader_port(view)}
        )
    selector = {
        LABEL_JOB_NAME: view.name,
        LABEL_REPLICA_TYPE: view.leader.lower(),
        LABEL_REPLICA_INDEX: "0",
    }
    labels = {
        LABEL_GROUP_NAME: GROUP,
        LABEL_JOB_NAME: view.name,
        LABEL_REPLICA_TYPE: view.leader.lower(),
        LABEL_OPERATOR_NAME: operator_name,
        SHORT_JOB_NAME: view.name,
    }
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": service_name(view),
            "namespace": view.namespace,
            "labels": labels,
            "ownerReferences": [owner_reference(view)],
        },
        "spec": {"type": "ClusterIP", "selector": selector, "ports": ports},
    }


def podgroup_metadata(view: JobView, operator_name: str) -> dict[str, dict[str, str]]:
    """The PodGroup's labels and annotations: the job's own, as MindCluster copies them.

    Ours win over the job's on a clash. `process-recover-enable=on` tells Volcano's Ascend
    plugin and ClusterD that the job asked for process-level recovery (any `recover-strategy`,
    as MindCluster tests only its presence). kubectl's
    last-applied copy of the job is left out: on the PodGroup it would only mislead
    `kubectl apply` and double the object's size.
    """
    labels = dict(job_labels(view))
    labels.update({LABEL_JOB_NAME: view.name, LABEL_OPERATOR_NAME: operator_name})
    annotations = {k: v for k, v in job_annotations(view).items() if k != ANNOTATION_LAST_APPLIED}
    if ANNOTATION_RECOVER_STRATEGY in annotations:
        labels[LABEL_PROCESS_RECOVER] = SWITCH_ON
    out = {"labels": labels}
    if annotations:
        out["annotations"] = annotations
    return out


def desired_podgroup(view: JobView, operator_name: str = DEFAULT_OPERATOR_NAME) -> dict[str, Any]:
    """The Volcano PodGroup; minMember is schedulingPolicy.minAvailable, else every replica.

    minResources is schedulingPolicy.minResources when given; otherwise the requests of the
    first minMember pods (leader first), so that Volcano does not admit a gang it cannot fit.
    minTaskMember is every replica of each type, as MindCluster sets it; Volcano skips that
    per-task check when minMember is smaller than its sum, so minAvailable keeps its meaning.
    """
    policy = view.scheduling_policy
    min_available = as_int(policy.get("minAvailable"))
    spec: dict[str, Any] = {
        "minMember": view.total_replicas if min_available is None else min_available,
        "minTaskMember": {s.rtype.lower(): s.replicas for s in view.replicas},
    }
    if policy.get("queue"):
        spec["queue"] = policy["queue"]
    if policy.get("priorityClass"):
        spec["priorityClassName"] = policy["priorityClass"]
    if policy.get("minResources"):
        spec["minResources"] = json_copy(policy["minResources"])
    else:
        computed = _gang_requests(view, spec["minMember"])
        if computed:
            spec["minResources"] = computed
    return {
        "apiVersion": PODGROUP_API_VERSION,
        "kind": PODGROUP_KIND,
        "metadata": {
            "name": podgroup_name(view),
            "namespace": view.namespace,
            **podgroup_metadata(view, operator_name),
            "ownerReferences": [owner_reference(view)],
        },
        "spec": spec,
    }


def _pod_requests(template: dict[str, Any]) -> dict[str, Decimal]:
    """One pod's requests: per container, requests, falling back to limits per resource."""
    total: dict[str, Decimal] = {}
    for container in dig(template, "spec", "containers") or []:
        resources = container.get("resources") or {}
        merged = {**(resources.get("limits") or {}), **(resources.get("requests") or {})}
        add_requests(total, merged, 1)
    return total


def _gang_requests(view: JobView, min_member: int) -> dict[str, str]:
    total: dict[str, Decimal] = {}
    left = min_member
    for spec in view.replicas:
        count = min(spec.replicas, left)
        if count <= 0:
            break
        for name, amount in _pod_requests(spec.template).items():
            total[name] = total.get(name, Decimal(0)) + amount * count
        left -= count
    return {name: format_quantity(amount) for name, amount in sorted(total.items()) if amount}

"""What the pod registry computes beyond plain field defaults (kube-apiserver v1.37).

- `default_requests`: a container with limits but no request for a resource gets the limit
  as its request (NPU pods usually declare limits only);
- `qos_class`: status.qosClass from the containers' cpu and memory requests and limits,
  per container first (a BestEffort container beside a Guaranteed one makes the pod
  Burstable), as pkg/apis/core/helper/qos does;
- `grace_period`: how long a DELETE lets a pod terminate: the request's gracePeriodSeconds,
  else the pod's terminationGracePeriodSeconds; 0 (deleted at once) for a pod never bound to
  a node or already Succeeded/Failed.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ascendjob_controller.localcluster import quantity

_QOS_RESOURCES = ("cpu", "memory")


def _containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            if isinstance(container, dict):
                yield container


def default_requests(spec: dict[str, Any]) -> None:
    """requests[r] = limits[r] for every limit without a request (in place)."""
    for container in _containers(spec):
        resources = container.get("resources")
        if not isinstance(resources, dict) or not isinstance(resources.get("limits"), dict):
            continue
        limits = resources["limits"]
        if not limits:
            continue
        requests = resources.get("requests")
        if not isinstance(requests, dict):
            requests = resources["requests"] = {}
        for name, value in limits.items():
            requests.setdefault(name, value)


def _resource_qos(resources: dict[str, Any], name: str) -> str:
    request = quantity.parse((resources.get("requests") or {}).get(name)) or 0
    limit = quantity.parse((resources.get("limits") or {}).get(name)) or 0
    if request != limit:
        return "Burstable"
    return "BestEffort" if request == 0 else "Guaranteed"


def _container_qos(resources: Any) -> str:
    if not isinstance(resources, dict) or not (
        resources.get("requests") or resources.get("limits")
    ):
        return "BestEffort"
    classes = {_resource_qos(resources, name) for name in _QOS_RESOURCES}
    return classes.pop() if len(classes) == 1 else "Burstable"


def qos_class(spec: dict[str, Any]) -> str:
    """The pod's QoS class (pure)."""
    classes = {_container_qos(c.get("resources")) for c in _containers(spec)}
    if not classes:
        return "BestEffort"
    return classes.pop() if len(classes) == 1 else "Burstable"


def grace_period(pod: dict[str, Any], requested: int | None) -> int:
    """Seconds a DELETE gives the pod (0 means remove it now)."""
    spec = pod.get("spec") or {}
    period = requested
    if period is None:
        default = spec.get("terminationGracePeriodSeconds")
        period = default if isinstance(default, int) and not isinstance(default, bool) else 0
    if not spec.get("nodeName"):
        period = 0
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        period = 0
    return 1 if period < 0 else period

"""A simulated Ascend device plugin and scheduler placement, for the simulated kubelet.

On a real cluster the Ascend device plugin (or Volcano's Ascend plugin) picks a pod's NPUs on
its node and writes them on the pod, before the pod runs:
- `ascend.kubectl.kubernetes.io/ascend-910-configuration`: JSON naming the node (server_id,
  host_ip) and each device (device_id, device_ip), which the rank table is built from;
- `huawei.com/Ascend910: "Ascend910-0,Ascend910-1,..."`, which `ASCEND_VISIBLE_DEVICES` reads.

Here every node has `NPUS_PER_NODE` devices with deterministic ids and IPs, so tests can write
the expected table down. Placement spreads pods the way the samples' anti-affinity asks (one
training pod per node when there is room): the node with the most free devices that fits,
then the fewest pods, then the name. A pod that fits nowhere still lands (on the least loaded
node) but gets no devices: this test bed never leaves pods Pending for capacity.

This module is the test bed's own; it imports nothing of the controller.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from typing import Any

NPUS_PER_NODE = 8
DEVICES_ANNOTATION = "ascend.kubectl.kubernetes.io/ascend-910-configuration"
NPU_RESOURCES = ("huawei.com/Ascend910", "huawei.com/npu")


@dataclass
class SimNode:
    """One simulated node: its name, InternalIP and which devices are free."""

    name: str
    ip: str
    index: int  # 1-based, part of every device IP
    free: set[int] = field(default_factory=lambda: set(range(NPUS_PER_NODE)))
    pods: set[str] = field(default_factory=set)  # uids placed here


@dataclass(frozen=True)
class Placement:
    node: SimNode
    devices: tuple[int, ...]
    resource: str | None  # the NPU resource name the pod asked for, None for none


def npu_request(pod: dict[str, Any]) -> tuple[str | None, int]:
    """(resource name, count) of the pod's NPU request, from limits or requests; (None, 0)."""
    total, name = 0, None
    for container in (pod.get("spec") or {}).get("containers") or []:
        resources = container.get("resources") if isinstance(container, dict) else None
        for section in ("limits", "requests"):
            values = (resources or {}).get(section) if isinstance(resources, dict) else None
            found = _first_npu(values)
            if found is not None:
                name, count = found
                total += count
                break
    return name, total


def _first_npu(values: Any) -> tuple[str, int] | None:
    if not isinstance(values, dict):
        return None
    for resource in NPU_RESOURCES:
        if resource in values:
            try:
                return resource, max(0, int(str(values[resource])))
            except ValueError:
                return resource, 0
    return None


def device_ip(node: SimNode, device: int) -> str:
    return f"192.168.{device}.{node.index + 1}"


def annotations_for(pod_name: str, placement: Placement) -> dict[str, str]:
    """What the device plugin writes on the pod for this placement ({} without devices)."""
    if not placement.devices or placement.resource is None:
        return {}
    node = placement.node
    value = {
        "pod_name": pod_name,
        "server_id": node.ip,
        "host_ip": node.ip,
        "devices": [
            {"device_id": str(d), "device_ip": device_ip(node, d)} for d in placement.devices
        ],
    }
    short = placement.resource.split("/", 1)[1]
    return {
        DEVICES_ANNOTATION: json.dumps(value, separators=(",", ":")),
        placement.resource: ",".join(f"{short}-{d}" for d in placement.devices),
    }


class DevicePool:
    """Free devices of every simulated node; thread-safe."""

    def __init__(self, nodes: list[SimNode]) -> None:
        self.nodes = nodes
        self._lock = threading.Lock()
        self._placed: dict[str, Placement] = {}  # pod uid -> where it went

    def place(self, uid: str, pod: dict[str, Any], on: str | None = None) -> Placement:
        """Choose the pod's node (`on`, when already bound) and devices; stable per uid."""
        resource, count = npu_request(pod)
        with self._lock:
            if uid in self._placed:
                return self._placed[uid]
            pinned = [n for n in self.nodes if n.name == on] if on else []
            nodes = pinned or self.nodes
            fitting = [n for n in nodes if len(n.free) >= count]
            candidates = fitting or nodes
            node = min(candidates, key=lambda n: (-len(n.free), len(n.pods), n.name))
            devices = tuple(sorted(node.free)[:count]) if fitting and count else ()
            node.free.difference_update(devices)
            node.pods.add(uid)
            placement = Placement(node, devices, resource if devices else None)
            self._placed[uid] = placement
            return placement

    def release(self, uid: str) -> None:
        """The pod finished or is gone: its devices are free again."""
        with self._lock:
            placement = self._placed.pop(uid, None)
            if placement is not None:
                placement.node.free.update(placement.devices)
                placement.node.pods.discard(uid)

    def node_of(self, name: str) -> SimNode | None:
        return next((n for n in self.nodes if n.name == name), None)

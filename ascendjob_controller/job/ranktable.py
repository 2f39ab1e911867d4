"""The HCCL rank table (`hccl.json`) of a job, as a pure function of the job and its pods.

Specification: `docs/ranktable.md` and section 1 of the ascend-parity notes (MindCluster's
ascend-operator). HCCL reads this table to find every device of every server, so a wrong table
is worse than none: whatever we cannot read with confidence means "not allocated yet", and the
table stays `{"status": "initializing"}` until every replica is allocated.

Totality: the device annotations are written by another component (the device plugin or
Volcano) and can be edited by anyone, so no annotation, however malformed, makes these
functions raise. A pod we cannot read is simply not allocated.

Nothing here mutates its inputs, and the only state is a memo of parsed annotation texts
(`_annotation`), which changes how fast a table is built, never what it holds. The caller
decides when to write, for example when `dumps(rank_table(job, pods))` differs from what it
last wrote.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ascendjob_controller.job.env import npus_of
from ascendjob_controller.job.quantity import parse_quantity
from ascendjob_controller.job.types import (
    ANNOTATION_RANK_INDEX,
    MAX_NPUS,
    MAX_REPLICAS,
    NPU_RESOURCE_PREFIX,
    as_dict,
    as_int,
    dicts,
    dig,
    parse_job,
)
from ascendjob_controller.job.validation import validate

# --- names ------------------------------------------------------------------------------------
ANNOTATION_DEVICES = "ascend.kubectl.kubernetes.io/ascend-910-configuration"
ANNOTATION_DEVICES_FALLBACK = "ascend.kubectl.kubernetes.io/ascend-npu-configuration"
ANNOTATION_SCHEDULE_POLICY = "huawei.com/schedule_policy"
ANNOTATION_SP_BLOCK = "sp-block"
NODE_SELECTOR_ACCELERATOR = "accelerator-type"
#: Schedule policies of super-pod (A3) jobs; `multilevel` only counts without huawei.com/npu,
#: which holds because v2.0 is decided first.
SUPER_POD_POLICIES = frozenset({"chip2-node16-sp", "chip2-node8-sp", "multilevel"})
SUPER_POD_ACCELERATORS = frozenset({"module-a3-16-super-pod", "module-a3-8-super-pod"})
GENERIC_NPU_RESOURCE = "huawei.com/npu"

V1_0 = "1.0"
V1_2 = "1.2"
V2_0 = "2.0"
INITIALIZING = "initializing"
COMPLETED = "completed"
#: The device IP the device plugin writes when a device has none; v1.0 HCCL cannot use it.
NO_DEVICE_IP = "-1"
#: v2.0 port address types, most preferred first (MindCluster's default priority).
PORT_PRIORITY = ("ROCE", "UBOE", "UBG")
#: The port types a level-2 or level-3 element is kept for (UB ports, or RoCE).
_LEVEL_PORTS = {2: frozenset({"UBOE", "UBG"}), 3: frozenset({"ROCE"})}
_DIGITS = re.compile(r"[0-9]{1,9}")
#: Parsed annotations kept: a 4,096-pod job's worth. An entry holds its key text and about
#: 2 KB per 8 v1.x devices; texts longer than CACHEABLE_TEXT are parsed every time instead,
#: so garbage cannot make the memo large.
ANNOTATION_CACHE_SIZE = 4096
CACHEABLE_TEXT = 64 * 1024


# --- what one pod contributes ---------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Device:
    """One device of an annotation.

    v2.0 only: `levels` holds the level_list elements a table may use, as (level, port type,
    element as compact JSON text) in level order; `ports` every port type the device offers.
    The text is parsed afresh for every table, so no table shares a mutable part with the
    parse cache.
    """

    device_id: str
    device_ip: str
    super_device_id: str | None
    levels: tuple[tuple[int, str, str], ...] = ()
    ports: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Annotation:
    """What the table reads from one device annotation; host_ip/server_id None when absent."""

    server_id: str | None
    host_ip: str | None
    devices: tuple[Device, ...]


@dataclass(frozen=True, slots=True)
class Server:
    """One NPU pod as the table sees it (server_id still the annotation's)."""

    rank_index: int
    server_id: str
    host_ip: str
    container_ip: str
    devices: tuple[Device, ...]


def initializing() -> dict[str, Any]:
    """The table before every replica is allocated (a fresh dict: callers may keep it)."""
    return {"status": INITIALIZING}


def dumps(table: dict[str, Any]) -> str:
    """The `hccl.json` text: compact, keys in the order built, so equal tables give equal
    strings and the caller can compare strings to decide whether to write.

    The initializing table gives `{"status":"initializing"}`, exactly what MindCluster's docs
    tell users to put in the ConfigMap by hand.
    """
    return json.dumps(table, separators=(",", ":"), ensure_ascii=True)


# --- format ----------------------------------------------------------------------------------
def _templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Every replica template, read raw so that a job failing validation is still total."""
    specs = as_dict(dig(job, "spec", "replicaSpecs"))
    return [as_dict(as_dict(spec).get("template")) for spec in specs.values()]


def _requests_generic_npu(template: dict[str, Any]) -> bool:
    for container in dicts(dig(template, "spec", "containers")):
        for section in ("requests", "limits"):
            amount = parse_quantity(
                as_dict(dig(container, "resources", section)).get(GENERIC_NPU_RESOURCE)
            )
            if amount is not None and amount > 0:
                return True
    return False


def table_format(job: dict[str, Any]) -> str:
    """The table version: 2.0 when a container requests huawei.com/npu, 1.2 for a super-pod
    job (schedule_policy, sp-block or accelerator-type node selector), else 1.0.

    v2.0 is decided first: the doc's v1.2 trigger `multilevel` applies only without
    huawei.com/npu. Unlike MindCluster, a `schedule_policy` of another value does not hide
    the other v1.2 triggers: any one of them suffices, as the specification says.
    """
    templates = _templates(job)
    if any(_requests_generic_npu(template) for template in templates):
        return V2_0
    annotations = as_dict(dig(job, "metadata", "annotations"))
    if annotations.get(ANNOTATION_SCHEDULE_POLICY) in SUPER_POD_POLICIES:
        return V1_2
    if ANNOTATION_SP_BLOCK in annotations:
        return V1_2
    for template in templates:
        selector = as_dict(dig(template, "spec", "nodeSelector"))
        if selector.get(NODE_SELECTOR_ACCELERATOR) in SUPER_POD_ACCELERATORS:
            return V1_2
    return V1_0


def sp_block(job: dict[str, Any]) -> int:
    """The job's `sp-block` annotation as a positive integer, 0 when absent or unreadable."""
    value = _small_int(dig(job, "metadata", "annotations", ANNOTATION_SP_BLOCK))
    return value or 0


def logical_super_pod(rank_index: int, block: int, chips_per_node: int) -> int:
    """`rankIndex / max(1, spBlock / chipsPerNode)`; 0 without a usable sp-block."""
    if block <= 0 or chips_per_node <= 0:
        return 0
    return rank_index // max(1, block // chips_per_node)


# --- reading pods ------------------------------------------------------------------------------
def _small_int(value: Any) -> int | None:
    """A non-negative decimal string of at most 9 digits (a strict Atoi), else None."""
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return int(value)
    return None


def _text(value: Any) -> str | None:
    """A non-empty string field, else None."""
    return value if isinstance(value, str) and value else None


def is_live(pod: Any) -> bool:
    """A pod that can still be part of the table: not being deleted, not Failed.

    Both kinds are about to be replaced (the reconciler deletes Failed pods it restarts, and
    their IPs are released), so counting them would keep a table that names a dead address.
    Excluding them brings the count below the replica total: back to "initializing", as the
    spec requires while "a pod is being replaced". Succeeded pods still count: nothing will
    replace them, and the others may still be training with the table.
    """
    if not isinstance(pod, dict) or dig(pod, "metadata", "deletionTimestamp"):
        return False
    return dig(pod, "status", "phase") != "Failed"


def requests_npus(pod: Any) -> bool:
    """True when any container of the pod requests a `huawei.com/*` resource (npus_of > 0)."""
    return any(_container_npus(c) > 0 for c in dicts(dig(pod, "spec", "containers")))


def _container_npus(container: dict[str, Any]) -> int:
    """env.npus_of, memoised on the only part of the container it reads: the `huawei.com/*`
    entries of requests and of limits. Parsing quantities was half the time of a large
    table, and every pod of a replica type has the same entries."""
    try:
        return _npus_of_entries(
            _npu_entries(container, "requests"), _npu_entries(container, "limits")
        )
    except TypeError:  # an unhashable quantity (a list, say): no memo for that one
        return npus_of(container)


def _npu_entries(container: dict[str, Any], section: str) -> tuple[tuple[str, Any], ...]:
    resources = dig(container, "resources", section)
    if not isinstance(resources, dict):
        return ()
    return tuple(
        (key, value)
        for key, value in resources.items()
        if isinstance(key, str) and key.startswith(NPU_RESOURCE_PREFIX)
    )


@functools.lru_cache(maxsize=256)
def _npus_of_entries(
    requests: tuple[tuple[str, Any], ...], limits: tuple[tuple[str, Any], ...]
) -> int:
    return npus_of({"resources": {"requests": dict(requests), "limits": dict(limits)}})


def _raw_annotation(pod: Any) -> Any:
    """The device annotation's value: the 910 key, else the fallback key."""
    annotations = as_dict(dig(pod, "metadata", "annotations"))
    raw = annotations.get(ANNOTATION_DEVICES)
    return annotations.get(ANNOTATION_DEVICES_FALLBACK) if raw is None else raw


def _levels(value: Any) -> tuple[tuple[tuple[int, str, str], ...], frozenset[str]] | None:
    """A device's v2.0 `level_list` ([{"level": n, "info": {port: element}}]): the usable
    elements and the offered port types; None when malformed.

    Usable, as MindCluster reads them: the first entry of each level; for levels 0 and 1 its
    first element (by port name here, for determinism); for level 2 its UB elements and for
    level 3 its RoCE element, of which the table takes the job's port type.
    """
    if value is None:
        return (), frozenset()
    if not isinstance(value, list):
        return None
    usable: dict[int, list[tuple[int, str, str]]] = {}
    ports: set[str] = set()
    for item in value:
        level = as_int(dig(item, "level"))
        info = dig(item, "info")
        if level is None or level < 0 or not isinstance(info, dict):
            return None
        if not all(isinstance(element, dict) for element in info.values()):
            return None
        ports.update(info)
        if level in usable or level > 3:
            continue
        wanted = (
            ([min(info)] if info else [])
            if level < 2
            else sorted(_LEVEL_PORTS[level] & info.keys())
        )
        usable[level] = [(level, port, dumps(info[port])) for port in wanted]
    return tuple(entry for level in sorted(usable) for entry in usable[level]), frozenset(ports)


def _device(raw: Any, version: str) -> Device | None:
    """One device entry, None when a field the format writes is missing or mistyped.

    Only those fields are read (level_list for v2.0, super_device_id for v1.2), so a
    device plugin's extra or newer fields never hold a table back.
    """
    if not isinstance(raw, dict):
        return None
    device_id = _text(raw.get("device_id"))
    if device_id is None:
        return None
    if version == V2_0:
        levels = _levels(raw.get("level_list"))
        if levels is None or _small_int(device_id) is None:
            return None
        return Device(device_id, "", None, *levels)
    device_ip = raw.get("device_ip")
    if not isinstance(device_ip, str) or (version == V1_0 and device_ip == NO_DEVICE_IP):
        return None
    super_id = raw.get("super_device_id") if version == V1_2 else None
    if not isinstance(super_id, str | None):
        return None
    return Device(device_id, device_ip, super_id)


def _parse_annotation(raw: str, version: str) -> Annotation | None:
    """Parse and check one annotation text for a `version` table; None when unusable."""
    try:
        info = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(info, dict):
        return None
    raw_devices = info.get("devices")
    if not isinstance(raw_devices, list) or not 0 < len(raw_devices) <= MAX_NPUS:
        return None
    devices = tuple(_device(item, version) for item in raw_devices)
    if any(device is None for device in devices):
        return None
    found = tuple(device for device in devices if device is not None)
    return Annotation(_text(info.get("server_id")), _text(info.get("host_ip")), found)


_cached_annotation = functools.lru_cache(maxsize=ANNOTATION_CACHE_SIZE)(_parse_annotation)


def _annotation(raw: str, version: str) -> Annotation | None:
    """`_parse_annotation`, memoised for texts up to CACHEABLE_TEXT characters.

    A pure function of its arguments, and the reconciler recomputes the table on every sync
    from the same annotation strings, so parsing is paid once per pod, not once per sync
    (docs/ranktable.md has the figures). The result is immutable, and the table builders
    copy what they hand out, so no table shares a mutable part with the memo.
    """
    if len(raw) > CACHEABLE_TEXT:
        return _parse_annotation(raw, version)
    return _cached_annotation(raw, version)


def clear_annotation_cache() -> None:
    """Forget every parsed annotation (for benchmarks of the cold path, and tests)."""
    _cached_annotation.cache_clear()


def parse_server(pod: Any, version: str = V1_0) -> Server | None:
    """The NPU pod as a server of a `version` table; None when it is not allocated yet.

    Needs a podIP, a readable rankIndex, and a device annotation with 1..MAX_NPUS devices.
    v1.x also needs server_id and a host IP (the annotation's host_ip, else status.hostIP).
    """
    container_ip = _text(dig(pod, "status", "podIP"))
    rank_index = _small_int(dig(pod, "metadata", "annotations", ANNOTATION_RANK_INDEX))
    raw = _raw_annotation(pod)
    if container_ip is None or rank_index is None or rank_index > MAX_REPLICAS:
        return None
    info = _annotation(raw, version) if isinstance(raw, str) else None
    if info is None:
        return None
    host_ip = info.host_ip or _text(dig(pod, "status", "hostIP"))
    server_id = info.server_id
    if version == V2_0:
        host_ip, server_id = host_ip or "", server_id or ""
    if host_ip is None or server_id is None:
        return None
    return Server(rank_index, server_id, host_ip, container_ip, info.devices)


def is_allocated(pod: Any, version: str = V1_0) -> bool:
    """Live, with a podIP, and (for an NPU pod) with a readable device annotation."""
    if not is_live(pod):
        return False
    if requests_npus(pod):
        return parse_server(pod, version) is not None
    return _text(dig(pod, "status", "podIP")) is not None


def member_uids(pods: Iterable[Any]) -> frozenset[str]:
    """The uids of the live pods: the set whose change means "regenerate" to MindCluster."""
    return frozenset(
        uid for pod in pods if is_live(pod) and (uid := _text(dig(pod, "metadata", "uid")))
    )


# --- building the table ------------------------------------------------------------------------
def _servers(job: dict[str, Any], pods: Sequence[Any], version: str) -> list[Server] | None:
    """The sorted servers, or None while fewer pods are allocated than the replica total.

    The count must equal the total exactly: more live pods than replicas means a stale pod is
    still around, and its rank would collide with its replacement's. Every pod is read even
    after one is found unallocated, so each annotation is parsed (and memoised) in the sync
    that first sees it, not all at once in the sync that completes the table.
    """
    if validate(job):
        return None
    servers: list[Server] = []
    allocated = 0
    complete = True
    for pod in pods:
        if not is_live(pod):
            continue
        if requests_npus(pod):
            server = parse_server(pod, version)
            ready = server is not None
            if server is not None:
                servers.append(server)
        else:
            ready = _text(dig(pod, "status", "podIP")) is not None
        allocated += ready
        complete = complete and ready
    if not complete or allocated != parse_job(job).total_replicas:
        return None
    servers.sort(key=lambda s: (s.rank_index * len(s.devices), s.server_id, s.container_ip))
    return servers


def rank_table(job: dict[str, Any], pods: Sequence[Any]) -> dict[str, Any]:
    """The job's rank table: `{"status": "initializing"}`, or the completed v1.0/1.2/2.0 table.

    `pods` are the job's pods (any order; others' pods must not be passed). An invalid job
    gives "initializing": it gets no pods anyway, and this function must stay total.
    """
    version = table_format(job)
    servers = _servers(job, pods, version)
    if servers is None:
        return initializing()
    if version == V2_0:
        return _v2_table(servers)
    return _v1_table(servers, version, sp_block(job))


def _server_ids(servers: list[Server]) -> list[str]:
    """server_id per server: host_ip when every server is on its own node, else the
    annotation's (pods sharing a node then keep the id the device plugin gave that node)."""
    hosts = [server.host_ip for server in servers]
    if len(set(hosts)) == len(hosts):
        return hosts
    return [server.server_id for server in servers]


def _v1_devices(server: Server, version: str) -> list[dict[str, str]]:
    """The server's devices with rank_id = rankIndex * len(devices) + i (built in one
    comprehension per format: this is the hot loop of a large table)."""
    base = server.rank_index * len(server.devices)
    if version == V1_2:
        return [_with_super_id(device, str(base + i)) for i, device in enumerate(server.devices)]
    return [
        {"device_id": d.device_id, "device_ip": d.device_ip, "rank_id": str(base + i)}
        for i, d in enumerate(server.devices)
    ]


def _with_super_id(device: Device, rank_id: str) -> dict[str, str]:
    """A v1.2 device: super_device_id between device_ip and rank_id, when the plugin gave one."""
    if device.super_device_id is None:
        return {"device_id": device.device_id, "device_ip": device.device_ip, "rank_id": rank_id}
    return {
        "device_id": device.device_id,
        "device_ip": device.device_ip,
        "super_device_id": device.super_device_id,
        "rank_id": rank_id,
    }


def _v1_table(servers: list[Server], version: str, block: int) -> dict[str, Any]:
    """v1.0 (and v1.2, which adds super_device_id and super_pod_list)."""
    ids = _server_ids(servers)
    server_list = [
        {
            "device": _v1_devices(server, version),
            "server_id": server_id,
            "host_ip": server.host_ip,
            "container_ip": server.container_ip,
        }
        for server, server_id in zip(servers, ids, strict=True)
    ]
    table: dict[str, Any] = {
        "status": COMPLETED,
        "server_list": server_list,
        "server_count": str(len(server_list)),
        "version": version,
    }
    if version == V1_2:
        table["super_pod_list"] = _super_pods(servers, ids, block)
    return table


def _super_pods(servers: list[Server], ids: list[str], block: int) -> list[dict[str, Any]]:
    """Servers grouped by logical super-pod id, ids ascending, servers in table order.

    chipsPerNode is the first server's device count, as MindCluster takes it.
    """
    chips = len(servers[0].devices) if servers else 0
    groups: dict[int, list[dict[str, str]]] = {}
    for server, server_id in zip(servers, ids, strict=True):
        vid = logical_super_pod(server.rank_index, block, chips)
        groups.setdefault(vid, []).append({"server_id": server_id})
    return [{"super_pod_id": str(vid), "server_list": groups[vid]} for vid in sorted(groups)]


def _port_type(servers: list[Server]) -> str:
    """The job's v2.0 port address type: the most preferred one any device offers."""
    offered: set[str] = set()
    for server in servers:
        for device in server.devices:
            offered |= device.ports
    return next((port for port in PORT_PRIORITY if port in offered), "")


def _level_list(device: Device, port: str) -> list[dict[str, Any]]:
    """Levels 0 and 1 as they are; level 2 or 3 only in the job's port type (see _levels).

    A level a device lacks is left out (MindCluster fills in a placeholder instead).
    """
    texts = [text for level, kind, text in device.levels if level < 2 or kind == port]
    parsed: list[dict[str, Any]] = json.loads("[" + ",".join(texts) + "]")
    return parsed


def _v2_table(servers: list[Server]) -> dict[str, Any]:
    """v2.0: one flat, rank-sorted list of devices with integer ids."""
    port = _port_type(servers)
    numbered = [
        (server.rank_index * len(server.devices) + i, device)
        for server in servers
        for i, device in enumerate(server.devices)
    ]
    numbered.sort(key=lambda pair: pair[0])
    ranks = [
        {
            "rank_id": rank_id,
            "local_id": int(device.device_id),
            "device_id": int(device.device_id),
            "level_list": _level_list(device, port),
        }
        for rank_id, device in numbered
    ]
    return {"status": COMPLETED, "version": V2_0, "rank_count": len(ranks), "rank_list": ranks}

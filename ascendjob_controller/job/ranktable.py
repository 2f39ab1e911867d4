"""The HCCL rank table (`hccl.json`) of a job, as a pure function of the job and its pods.

Specification: `docs/ranktable.md` and section 1 of the ascend-parity notes (MindCluster's
ascend-operator). HCCL reads this table to find every device of every server, so a wrong table
is worse than none: whatever we cannot read with confidence means "not allocated yet", and the
table stays `{"status": "initializing"}` until every replica is allocated.

Totality: the device annotations are written by another component (the device plugin or
Volcano) and can be edited by anyone, so no annotation, however malformed, makes these
functions raise. A pod we cannot read is simply not allocated.

Speed: the reconciler recomputes the table on every sync, and a 1,000-pod job's table is
megabytes of JSON. So each annotation is parsed once into the JSON text it contributes (each
device's object up to its rank_id), and a table is string joins: `rank_table_text` builds the
`hccl.json` text directly, byte for byte what `dumps(rank_table(...))` gives, and
`rank_table` decodes that text, so the two can never disagree.

Nothing here mutates its inputs, and the only state is memos of parsed annotation texts
(`_annotation`) and NPU requests, which change how fast a table is built, never what it holds.
The caller decides when to write, for example when `rank_table_text(job, pods)` differs from
what it last wrote.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii as _quote
from operator import itemgetter
from typing import Any, NamedTuple

from ascendjob_controller.job.env import clear_npu_cache, npus_of
from ascendjob_controller.job.quantity import parse_quantity
from ascendjob_controller.job.types import (
    ANNOTATION_RANK_INDEX,
    MAX_NPUS,
    MAX_REPLICAS,
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
#: The job port types a v2.0 device's text is built for: PORT_PRIORITY, then none offered.
_PORT_VARIANTS = (*PORT_PRIORITY, "")
#: Parsed annotations kept: a 4,096-pod job's worth. An entry holds its key text (the pod's
#: own string) and about 1 KB per 8 v1.x devices, 7 KB per 8 v2.0 devices with four-level
#: level_lists; texts longer than CACHEABLE_TEXT are parsed every time instead, so garbage
#: cannot make the memo large.
ANNOTATION_CACHE_SIZE = 4096
CACHEABLE_TEXT = 64 * 1024
#: The most a ConfigMap's data may hold. The API server sums the lengths of the values of
#: `data` and `binaryData` (ValidateConfigMap, MaxSecretSize) and refuses a larger ConfigMap
#: with 422 Invalid; a request body over 3 MiB is refused before that with 413.
CONFIGMAP_DATA_LIMIT = 1024 * 1024

#: `json.dumps(value, separators=(",", ":"))`, made once (dumps would build one per call).
_ENCODER = json.JSONEncoder(separators=(",", ":"))


# --- what one pod contributes ---------------------------------------------------------------
#: The end of a v2.0 rank entry whose level_list has nothing for the job's port type.
_END = "]}"


@dataclass(frozen=True, slots=True)
class Annotation:
    """What the table takes from one device annotation of a pod with a given rankIndex, as the
    JSON text it contributes, built once; host_ip/server_id None when absent.

    v1.x: `text` is the server's device list, `{"device_id":"0","device_ip":"192.168.0.1",
    "rank_id":"8"},...`, the i-th device with rank_id rankIndex * devices + i.

    v2.0: device i's rank entry after its rank_id is `heads[i] + ends[variant][i]`, where
    heads[i] runs up to its level-1 element (`,"local_id":4,"device_id":4,"level_list":[...`)
    and ends[variant][i] holds its level-2 or level-3 element for the job's port type
    _PORT_VARIANTS[variant], if any, and `]}`: the job's port type depends on every pod, so
    there is an end for each. `ports` is every port type any device offers.
    """

    server_id: str | None
    host_ip: str | None
    devices: int
    text: str = ""
    heads: tuple[str, ...] = ()
    ends: tuple[tuple[str, ...], ...] = ()
    ports: frozenset[str] = frozenset()


class Server(NamedTuple):
    """One NPU pod as the table sees it (server_id still the annotation's). A named tuple, not
    a frozen dataclass: one is made per pod per sync, and a frozen dataclass's __init__ cost
    several times more."""

    rank_index: int
    server_id: str
    host_ip: str
    container_ip: str
    info: Annotation


def initializing() -> dict[str, Any]:
    """The table before every replica is allocated (a fresh dict: callers may keep it)."""
    return {"status": INITIALIZING}


def dumps(table: dict[str, Any]) -> str:
    """The `hccl.json` text: compact, keys in the order built, so equal tables give equal
    strings and the caller can compare strings to decide whether to write.

    The initializing table gives `{"status":"initializing"}`, exactly what MindCluster's docs
    tell users to put in the ConfigMap by hand.
    """
    return _ENCODER.encode(table)


INITIALIZING_TEXT = dumps(initializing())


def configmap_fits(content: str, version: str = "") -> bool:
    """Whether a ConfigMap holding `content` as hccl.json and `version` stays within
    CONFIGMAP_DATA_LIMIT, so the writer can tell "too large" from a failure worth retrying.

    Only our two keys are counted: other keys a user put in the ConfigMap count too, so the
    API server may still refuse one that fits here.
    """
    return _utf8_length(content) + _utf8_length(version) <= CONFIGMAP_DATA_LIMIT


def _utf8_length(text: str) -> int:
    """The bytes the API server counts (our own texts are ASCII: dumps escapes the rest)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


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
    """A non-negative decimal string of at most 9 digits (a strict Atoi), else None.

    For an ASCII string, isdigit() means exactly 0-9: a regex per pod cost more than this."""
    if isinstance(value, str) and 0 < len(value) <= 9 and value.isascii() and value.isdigit():
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
    if not isinstance(pod, dict):
        return False
    meta = pod.get("metadata")
    if isinstance(meta, dict) and meta.get("deletionTimestamp"):
        return False
    status = pod.get("status")
    return not isinstance(status, dict) or status.get("phase") != "Failed"


def requests_npus(pod: Any) -> bool:
    """True when any container of the pod requests a `huawei.com/*` resource (npus_of > 0)."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list):
        return False
    for container in containers:  # noqa: SIM110 - a loop, not any(): no generator per pod
        if isinstance(container, dict) and npus_of(container) > 0:
            return True
    return False


def _levels(value: Any) -> tuple[tuple[tuple[int, str, str], ...], frozenset[str]] | None:
    """A device's v2.0 `level_list` ([{"level": n, "info": {port: element}}]): the usable
    elements as (level, port type, element as compact JSON), in level order, and the offered
    port types; None when malformed.

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
    for item in value:  # plain loops and lookups: this runs for every level of every device
        if not isinstance(item, dict):
            return None
        level, info = as_int(item.get("level")), item.get("info")
        if level is None or level < 0 or not isinstance(info, dict):
            return None
        for element in info.values():
            if not isinstance(element, dict):
                return None
        ports.update(info)
        if level in usable or level > 3:
            continue
        if level < 2:
            wanted = [min(info)] if info else []
        else:
            wanted = sorted(_LEVEL_PORTS[level].intersection(info))
        usable[level] = [(level, port, _ENCODER.encode(info[port])) for port in wanted]
    return tuple(entry for level in sorted(usable) for entry in usable[level]), frozenset(ports)


def _v2_texts(number: int, levels: tuple[tuple[int, str, str], ...]) -> tuple[str, list[str]]:
    """The device's head and its end per job port type in _PORT_VARIANTS (see Annotation).

    Its level_list keeps levels 0 and 1, and a level 2 or 3 element only of the job's port
    type (see _levels). A level the device lacks is left out (MindCluster fills in a
    placeholder instead). Levels come sorted, so levels 0 and 1 always lead.
    """
    base = [text for level, _, text in levels if level < 2]
    head = f',"local_id":{number},"device_id":{number},"level_list":[' + ",".join(base)
    comma = "," if base else ""
    kinds = {kind for level, kind, _ in levels if level >= 2}
    ends = [
        comma + ",".join([t for lv, k, t in levels if lv >= 2 and k == port]) + _END
        if port in kinds
        else _END
        for port in _PORT_VARIANTS
    ]
    return head, ends


#: What _v2_devices finds: each device's head, ends[variant][device], and the ports offered.
_V2Devices = tuple[tuple[str, ...], tuple[tuple[str, ...], ...], frozenset[str]]


def _v2_devices(raw_devices: list[Any]) -> _V2Devices | None:
    """v2.0 devices: a decimal device_id and, if present, a well-formed level_list each."""
    heads: list[str] = []
    ends: list[list[str]] = []
    ports: set[str] = set()
    for raw in raw_devices:
        if not isinstance(raw, dict):
            return None
        number = _small_int(raw.get("device_id"))
        levels = _levels(raw.get("level_list"))
        if number is None or levels is None:
            return None
        head, end = _v2_texts(number, levels[0])
        heads.append(head)
        ends.append(end)
        ports |= levels[1]
    return tuple(heads), tuple(zip(*ends, strict=True)), frozenset(ports)


def _v1_devices(raw_devices: list[Any], version: str, rank_index: int) -> str | None:
    """The v1.x device list: a non-empty device_id and a string device_ip (not "-1" in v1.0)
    each, and in v1.2 a string super_device_id if any, written between device_ip and rank_id.

    One plain loop: on the cold path (a controller's first sync of a large job) this runs for
    every device, and a function call per device and field cost more than the work.
    """
    base = rank_index * len(raw_devices)
    entries: list[str] = []
    strict_ip = version == V1_0
    for i, raw in enumerate(raw_devices):
        if not isinstance(raw, dict):
            return None
        device_id, device_ip = raw.get("device_id"), raw.get("device_ip")
        if not isinstance(device_id, str) or not device_id or not isinstance(device_ip, str):
            return None
        extra = ""
        if strict_ip:
            if device_ip == NO_DEVICE_IP:
                return None
        elif (super_id := raw.get("super_device_id")) is not None:
            if not isinstance(super_id, str):
                return None
            extra = ',"super_device_id":' + _quote(super_id)
        entries.append(
            f'{{"device_id":{_quote(device_id)},"device_ip":{_quote(device_ip)}{extra},'
            f'"rank_id":"{base + i}"}}'
        )
    return ",".join(entries)


def _parse_annotation(raw: str, version: str, rank_index: int) -> Annotation | None:
    """Parse and check one annotation text for a `version` table; None when unusable.

    Only the fields the format writes are read (level_list for v2.0, super_device_id for
    v1.2), so a device plugin's extra or newer fields never hold a table back.
    """
    try:
        info = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(info, dict):
        return None
    raw_devices = info.get("devices")
    if not isinstance(raw_devices, list) or not 0 < len(raw_devices) <= MAX_NPUS:
        return None
    server_id, host_ip = _text(info.get("server_id")), _text(info.get("host_ip"))
    count = len(raw_devices)
    if version == V2_0:
        found = _v2_devices(raw_devices)
        if found is None:
            return None
        heads, ends, ports = found
        return Annotation(server_id, host_ip, count, heads=heads, ends=ends, ports=ports)
    text = _v1_devices(raw_devices, version, rank_index)
    return None if text is None else Annotation(server_id, host_ip, count, text=text)


_cached_annotation = functools.lru_cache(maxsize=ANNOTATION_CACHE_SIZE)(_parse_annotation)


def _annotation(raw: str, version: str, rank_index: int) -> Annotation | None:
    """`_parse_annotation`, memoised for texts up to CACHEABLE_TEXT characters.

    A pure function of its arguments, and the reconciler recomputes the table on every sync
    from the same annotation strings and rankIndex (a pod keeps both), so parsing and making
    the pod's part of the text are paid once per pod, not once per sync (docs/ranktable.md
    has the figures). The result is immutable text, and a table is decoded afresh from the
    text it builds, so no table shares a mutable part with the memo.
    """
    if len(raw) > CACHEABLE_TEXT:
        return _parse_annotation(raw, version, rank_index)
    return _cached_annotation(raw, version, rank_index)


def clear_annotation_cache() -> None:
    """Forget every parsed annotation, NPU request and v2.0 pod text (for benchmarks of the
    cold path, and tests)."""
    _cached_annotation.cache_clear()
    clear_npu_cache()
    _v2_ranks.cache_clear()


def parse_server(pod: Any, version: str = V1_0) -> Server | None:
    """The NPU pod as a server of a `version` table; None when it is not allocated yet.

    Needs a podIP, a readable rankIndex, and a device annotation with 1..MAX_NPUS devices.
    v1.x also needs server_id and a host IP (the annotation's host_ip, else status.hostIP).
    Read with plain dict lookups: this runs for every pod on every sync.
    """
    status = pod.get("status") if isinstance(pod, dict) else None
    meta = pod.get("metadata") if isinstance(pod, dict) else None
    notes = meta.get("annotations") if isinstance(meta, dict) else None
    if not isinstance(status, dict) or not isinstance(notes, dict):
        return None
    container_ip = _text(status.get("podIP"))
    rank_index = _small_int(notes.get(ANNOTATION_RANK_INDEX))
    if container_ip is None or rank_index is None or rank_index > MAX_REPLICAS:
        return None
    raw = notes.get(ANNOTATION_DEVICES)
    if raw is None:
        raw = notes.get(ANNOTATION_DEVICES_FALLBACK)
    info = _annotation(raw, version, rank_index) if isinstance(raw, str) else None
    if info is None:
        return None
    host_ip = info.host_ip or _text(status.get("hostIP"))
    server_id = info.server_id
    if version == V2_0:
        host_ip, server_id = host_ip or "", server_id or ""
    if host_ip is None or server_id is None:
        return None
    return Server(rank_index, server_id, host_ip, container_ip, info)


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
    servers.sort(key=lambda s: (s.rank_index * s.info.devices, s.server_id, s.container_ip))
    return servers


def rank_table_text(job: dict[str, Any], pods: Sequence[Any]) -> str:
    """The job's `hccl.json` text: exactly `dumps(rank_table(job, pods))`, built from the
    texts each annotation contributed instead of through dicts, which for a large table
    cost several times more to build and then to encode (docs/ranktable.md, Speed).

    This is what to write and to compare with what was written.
    """
    version = table_format(job)
    servers = _servers(job, pods, version)
    if servers is None:
        return INITIALIZING_TEXT
    if version == V2_0:
        return _v2_table(servers)
    return _v1_table(servers, version, sp_block(job))


def rank_table(job: dict[str, Any], pods: Sequence[Any]) -> dict[str, Any]:
    """The job's rank table: `{"status": "initializing"}`, or the completed v1.0/1.2/2.0 table.

    `pods` are the job's pods (any order; others' pods must not be passed). An invalid job
    gives "initializing": it gets no pods anyway, and this function must stay total. Decoded
    from `rank_table_text`, so the table is the text, and every part of it is fresh: a
    caller may change it without touching the memo.
    """
    table: dict[str, Any] = json.loads(rank_table_text(job, pods))
    return table


def _server_ids(servers: list[Server]) -> list[str]:
    """server_id per server: host_ip when every server is on its own node, else the
    annotation's (pods sharing a node then keep the id the device plugin gave that node)."""
    hosts = [server.host_ip for server in servers]
    if len(set(hosts)) == len(hosts):
        return hosts
    return [server.server_id for server in servers]


def _v1_server(server: Server, server_id: str) -> str:
    """One server_list entry."""
    return (
        f'{{"device":[{server.info.text}],"server_id":{_quote(server_id)},'
        f'"host_ip":{_quote(server.host_ip)},"container_ip":{_quote(server.container_ip)}}}'
    )


def _v1_table(servers: list[Server], version: str, block: int) -> str:
    """v1.0 (and v1.2, which adds super_device_id and super_pod_list), keys in this order:
    status, server_list, server_count, version, super_pod_list."""
    ids = _server_ids(servers)
    entries = ",".join([_v1_server(s, sid) for s, sid in zip(servers, ids, strict=True)])
    super_pods = ""
    if version == V1_2:
        super_pods = ',"super_pod_list":' + _super_pods(servers, ids, block)
    return (
        f'{{"status":"{COMPLETED}","server_list":[{entries}],'
        f'"server_count":"{len(servers)}","version":{_quote(version)}{super_pods}}}'
    )


def _super_pods(servers: list[Server], ids: list[str], block: int) -> str:
    """Servers grouped by logical super-pod id, ids ascending, servers in table order.

    chipsPerNode is the first server's device count, as MindCluster takes it.
    """
    chips = servers[0].info.devices if servers else 0
    groups: dict[int, list[str]] = {}
    for server, server_id in zip(servers, ids, strict=True):
        vid = logical_super_pod(server.rank_index, block, chips)
        groups.setdefault(vid, []).append('{"server_id":' + _quote(server_id) + "}")
    pods = [
        f'{{"super_pod_id":"{vid}","server_list":[{",".join(groups[vid])}]}}'
        for vid in sorted(groups)
    ]
    return "[" + ",".join(pods) + "]"


def _port_type(servers: list[Server]) -> str:
    """The job's v2.0 port address type: the most preferred one any device offers."""
    offered: set[str] = set()
    for server in servers:
        offered |= server.info.ports
    return next((port for port in PORT_PRIORITY if port in offered), "")


def _v2_table(servers: list[Server]) -> str:
    """v2.0: one flat, rank-sorted list of devices with integer ids, keys status, version,
    rank_count, rank_list.

    When the servers' rank ranges follow one another (the usual case: one rankIndex per pod,
    the same device count), that list is each server's entries in server order, memoised per
    pod; otherwise the devices are sorted by rank (a stable sort: equal rank ids keep the
    server order).
    """
    variant = _PORT_VARIANTS.index(_port_type(servers))
    if _ranks_follow(servers):
        chunks = [_v2_ranks(s.info, s.rank_index * s.info.devices, variant) for s in servers]
        ranks, count = ",".join(chunks), sum(s.info.devices for s in servers)
    else:
        ranks, count = _v2_sorted_ranks(servers, variant)
    return (
        f'{{"status":"{COMPLETED}","version":"{V2_0}","rank_count":{count},"rank_list":[{ranks}]}}'
    )


def _ranks_follow(servers: list[Server]) -> bool:
    """Whether each server's ranks start at or after the previous server's last rank + 1."""
    following = 0
    for server in servers:
        first = server.rank_index * server.info.devices
        if first < following:
            return False
        following = first + server.info.devices
    return True


@functools.lru_cache(maxsize=ANNOTATION_CACHE_SIZE)
def _v2_ranks(info: Annotation, base: int, variant: int) -> str:
    """A pod's rank entries, the i-th with rank_id base + i, for the job's port type.

    Memoised: a pod keeps its annotation and rankIndex, and the job its port type, so this
    is made once per pod; making it on every sync was most of a warm v2.0 table, and its
    8,000 small tuples woke the garbage collector.
    """
    ends = info.ends[variant]
    return ",".join([f'{{"rank_id":{base + i}{head}{ends[i]}' for i, head in enumerate(info.heads)])


def _v2_sorted_ranks(servers: list[Server], variant: int) -> tuple[str, int]:
    """Every device's rank entry in rank order, and how many."""
    numbered = [
        (server.rank_index * server.info.devices + i, head, end)
        for server in servers
        for i, (head, end) in enumerate(
            zip(server.info.heads, server.info.ends[variant], strict=True)
        )
    ]
    numbered.sort(key=itemgetter(0))
    entries = [f'{{"rank_id":{rank}{head}{end}' for rank, head, end in numbered]
    return ",".join(entries), len(entries)

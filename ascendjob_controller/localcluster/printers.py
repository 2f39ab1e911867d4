"""kube-apiserver's built-in Table printers (pkg/printers/internalversion), the rows kubectl shows.

The server prints wide (every column, priorities tell kubectl which to hide), so `kubectl get
events` has LAST SEEN, TYPE, REASON, OBJECT, MESSAGE and the rest. Columns come from
printer_columns.py; kinds without a printer there, and custom resources, are tables.py's.
Pure functions: `now` is passed in so ages are testable.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from ascendjob_controller.localcluster import eventsapi, tables
from ascendjob_controller.localcluster.printer_columns import COLUMNS, NAME_DESCRIPTION
from ascendjob_controller.localcluster.resources import ResourceType

Cells = Callable[[dict[str, Any], datetime], list[Any]]


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _age(obj: dict[str, Any], now: datetime) -> str:
    return tables.age(_meta(obj).get("creationTimestamp"), now)


def _configmap(obj: dict[str, Any], now: datetime) -> list[Any]:
    count = len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    return [_meta(obj).get("name", ""), count, _age(obj, now)]


def _secret(obj: dict[str, Any], now: datetime) -> list[Any]:
    meta = _meta(obj)
    return [meta.get("name", ""), obj.get("type", ""), len(obj.get("data") or {}), _age(obj, now)]


def _namespace(obj: dict[str, Any], now: datetime) -> list[Any]:
    phase = (obj.get("status") or {}).get("phase", "")
    return [_meta(obj).get("name", ""), phase, _age(obj, now)]


def _lease(obj: dict[str, Any], now: datetime) -> list[Any]:
    holder = (obj.get("spec") or {}).get("holderIdentity") or ""
    return [_meta(obj).get("name", ""), holder, _age(obj, now)]


def _service_account(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [_meta(obj).get("name", ""), _age(obj, now)]


def _since(stamp: Any, now: datetime) -> str:
    return tables.age(stamp, now) if stamp else "<unknown>"


def _event(obj: dict[str, Any], now: datetime) -> list[Any]:
    """printEvent on a core/v1 Event (events.k8s.io ones are converted to it first)."""
    first = _since(obj.get("firstTimestamp"), now)
    if not obj.get("firstTimestamp"):
        first = _since(obj.get("eventTime"), now)
    last = _since(obj.get("lastTimestamp"), now) if obj.get("lastTimestamp") else first
    count = int(obj.get("count") or 0)
    series = obj.get("series")
    if isinstance(series, dict):
        last = _since(series.get("lastObservedTime"), now)
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1  # singleton events have no count in the new API
    involved = obj.get("involvedObject") or {}
    kind = str(involved.get("kind", "")).lower()
    target = f"{kind}/{involved['name']}" if involved.get("name") else kind
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    instance = source.get("host") or obj.get("reportingInstance") or ""
    return [
        last,
        obj.get("type", ""),
        obj.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        f"{component}, {instance}" if instance else component,
        str(obj.get("message", "")).strip(),
        first,
        count,
        _meta(obj).get("name", ""),
    ]


def _node(obj: dict[str, Any], now: datetime) -> list[Any]:
    status = obj.get("status") or {}
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    states = [("Ready" if ready[0].get("status") == "True" else "NotReady")] if ready else []
    if not states:
        states = ["Unknown"]
    if (obj.get("spec") or {}).get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = sorted(
        k.removeprefix("node-role.kubernetes.io/")
        for k in _meta(obj).get("labels") or {}
        if k.startswith("node-role.kubernetes.io/") and k != "node-role.kubernetes.io/"
    )
    info = status.get("nodeInfo") or {}
    addresses = {a.get("type"): a.get("address") for a in status.get("addresses") or []}
    kernel = info.get("kernelVersion") or "<unknown>"
    if info.get("architecture"):
        kernel += f" ({info['architecture']})"
    return [
        _meta(obj).get("name", ""),
        ",".join(states),
        ",".join(roles) or "<none>",
        _age(obj, now),
        info.get("kubeletVersion", ""),
        addresses.get("InternalIP") or "<none>",
        addresses.get("ExternalIP") or "<none>",
        info.get("osImage") or "<unknown>",
        kernel,
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


def _builtin_cells(kind: str) -> Cells | None:
    own: dict[str, Cells] = {
        "ConfigMap": _configmap,
        "Secret": _secret,
        "Namespace": _namespace,
        "Lease": _lease,
        "ServiceAccount": _service_account,
        "Event": _event,
        "Node": _node,
    }
    return own.get(kind)


def columns_and_cells(rt: ResourceType) -> tuple[list[dict[str, Any]], Cells]:
    """The columns and row function of a kind, the real printer's where there is one."""
    columns, cells = tables.columns_and_cells(rt)
    if not rt.builtin:
        for column in columns:
            if column["name"] == "Name":
                column["description"] = NAME_DESCRIPTION
        return columns, cells
    defined = COLUMNS.get(rt.kind)
    if defined is None:
        return columns, cells
    columns = [
        {"name": n, "type": t, "format": f, "description": d, "priority": p}
        for n, t, f, p, d in defined
    ]
    return columns, _builtin_cells(rt.kind) or cells


def to_table(
    rt: ResourceType, objects: list[dict[str, Any]], include_object: str, now: datetime
) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table as kube-apiserver prints it (see tables.to_table)."""
    table = tables.to_table(rt, objects, include_object, now)
    columns, cells = columns_and_cells(rt)
    table["columnDefinitions"] = columns
    for row, obj in zip(table["rows"], objects, strict=True):
        if rt.group == "events.k8s.io":  # printed from the stored core/v1 form
            obj = eventsapi.to_core(obj)
        row["cells"] = cells(obj, now)
        if include_object == "None":
            row["object"] = None  # the real server sends the key, empty
    return table

"""Server-side printing: `meta.k8s.io/v1` Table responses for `kubectl get` (`as=Table`).

kubectl 1.32 asks every list, get and watch for a Table and prints the columns it is given,
so the columns here ARE what users see. Custom resources get Name plus their CRD's
additionalPrinterColumns (a small JSONPath evaluator below covers the expressions CRDs use);
pods and services mimic the built-in printers; any other kind prints NAME and AGE.
Pure functions: `now` is passed in so ages are testable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from ascendjob_controller.localcluster.resources import ResourceType

_NAME_COLUMN = {
    "name": "Name",
    "type": "string",
    "format": "name",
    "description": "Name must be unique within a namespace. More info: "
    "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
    "priority": 0,
}
_AGE_DESCRIPTION = (
    "CreationTimestamp is a timestamp representing the server time when this object was created."
)


def _column(
    name: str, type_: str, description: str = "", priority: int = 0, fmt: str = ""
) -> dict[str, Any]:
    return {
        "name": name,
        "type": type_,
        "format": fmt,
        "description": description,
        "priority": priority,
    }


# --- ages ----------------------------------------------------------------------------------


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware datetime, None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    text = value.replace("z", "Z")
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    return parsed if parsed.tzinfo else None


def human_duration(d: timedelta) -> str:
    """A duration the way kubectl prints ages: 5s, 3m2s, 4h, 2d, 3y45d (coarser as it grows)."""
    seconds = int(d.total_seconds())
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes = seconds // 60
    if minutes < 10:
        rest = seconds % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    hours = seconds // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def age(timestamp: Any, now: datetime) -> str:
    when = parse_time(timestamp)
    return human_duration(now - when) if when else "<unknown>"


# --- JSONPath (the subset CRD printer columns use) ------------------------------------------

_TOKEN_RE = re.compile(
    r"""\.\.?(?P<field>[A-Za-z0-9_\-$/]+)      # .field
      | \.?\[(?P<bracket>[^\]]*)\]          # [0], [-1:], [*], ['a.b']
      | \.(?P<star>\*)                      # .*
    """,
    re.VERBOSE,
)


class JSONPathError(ValueError):
    pass


def _parse_jsonpath(expr: str) -> list[tuple[str, str]]:
    text = expr.strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if text.startswith("$"):
        text = text[1:]
    steps: list[tuple[str, str]] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if not m or m.end() == pos:
            raise JSONPathError(f"unrecognized JSONPath {expr!r} at {pos}")
        if m.group("field") is not None:
            steps.append(("field", m.group("field")))
        elif m.group("star") is not None:
            steps.append(("all", ""))
        else:
            steps.append(("bracket", m.group("bracket").strip()))
        pos = m.end()
    return steps


def _apply_bracket(value: Any, spec: str) -> list[Any]:
    if spec in ("*", ""):
        if isinstance(value, list):
            return list(value)
        if isinstance(value, dict):
            return list(value.values())
        return []
    if spec[0] in "'\"" and spec[-1] == spec[0]:
        key = spec[1:-1]
        return [value[key]] if isinstance(value, dict) and key in value else []
    if not isinstance(value, list):
        return []
    n = len(value)
    if ":" in spec:
        parts = spec.split(":")
        try:
            start = int(parts[0]) if parts[0].strip() else None
            stop = int(parts[1]) if len(parts) > 1 and parts[1].strip() else None
            step = int(parts[2]) if len(parts) > 2 and parts[2].strip() else None
        except ValueError:
            raise JSONPathError(f"bad slice [{spec}]") from None
        return list(value[slice(start, stop, step)])
    try:
        index = int(spec)
    except ValueError:
        raise JSONPathError(f"bad index [{spec}]") from None
    if -n <= index < n:
        return [value[index]]
    return []


def jsonpath(obj: Any, expr: str) -> list[Any]:
    """All values expr selects in obj (empty when the path is absent)."""
    current = [obj]
    for kind, arg in _parse_jsonpath(expr):
        nxt: list[Any] = []
        for value in current:
            if kind == "field":
                if isinstance(value, dict) and arg in value:
                    nxt.append(value[arg])
            elif kind == "all":
                nxt.extend(_apply_bracket(value, "*"))
            else:
                nxt.extend(_apply_bracket(value, arg))
        current = nxt
    return current


# --- custom resources ----------------------------------------------------------------------


def _format_cell(values: list[Any], type_: str, now: datetime) -> Any:
    if not values:
        return None
    if type_ == "date":
        return age(values[0], now) if len(values) == 1 else None
    if len(values) > 1:
        return ",".join(_as_text(v) for v in values)
    value = values[0]
    if type_ == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if type_ == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if type_ == "boolean" and isinstance(value, bool):
        return value
    return _as_text(value) if type_ == "string" or isinstance(value, (dict, list)) else value


def _as_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), sort_keys=True)
    return str(value)


def _custom_columns(resource: ResourceType) -> list[dict[str, Any]]:
    cols = [dict(_NAME_COLUMN)]
    for pc in resource.printer_columns:
        cols.append(
            _column(
                str(pc.get("name", "")),
                str(pc.get("type", "string")),
                str(
                    pc.get("description", "")
                    or "Custom resource definition column (in JSONPath format): "
                    + str(pc.get("jsonPath", ""))
                ),
                int(pc.get("priority", 0) or 0),
                str(pc.get("format", "") or ""),
            )
        )
    return cols


def _custom_cells(resource: ResourceType, obj: dict[str, Any], now: datetime) -> list[Any]:
    cells: list[Any] = [_name(obj)]
    for pc in resource.printer_columns:
        try:
            values = jsonpath(obj, str(pc.get("jsonPath", "")))
        except JSONPathError:
            values = []
        cells.append(_format_cell(values, str(pc.get("type", "string")), now))
    return cells


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


# --- built-in printers ----------------------------------------------------------------------


def _pod_columns() -> list[dict[str, Any]]:
    return [
        dict(_NAME_COLUMN),
        _column(
            "Ready", "string", "The aggregate readiness state of this pod for accepting traffic."
        ),
        _column("Status", "string", "The aggregate status of the containers in this pod."),
        _column(
            "Restarts",
            "string",
            "The number of times the containers in this pod have been restarted and when the "
            "last container in this pod has restarted.",
        ),
        _column("Age", "string", _AGE_DESCRIPTION),
        _column(
            "IP",
            "string",
            "IP address allocated to the pod. Routable at least within the cluster.",
            1,
        ),
        _column("Node", "string", "Name of the node where the pod is scheduled.", 1),
        _column(
            "Nominated Node", "string", "Name of the node where the pod may be preempting pods.", 1
        ),
        _column("Readiness Gates", "string", "Readiness gates of the pod.", 1),
    ]


def _pod_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    statuses = status.get("containerStatuses") or []
    total = len(spec.get("containers") or []) or len(statuses)
    reason = status.get("reason") or status.get("phase") or ""
    restarts = 0
    last_restart: datetime | None = None
    ready = 0
    running = False
    for cs in reversed(statuses):
        restarts += int(cs.get("restartCount") or 0)
        finished = parse_time(
            ((cs.get("lastState") or {}).get("terminated") or {}).get("finishedAt")
        )
        if finished and (last_restart is None or finished > last_restart):
            last_restart = finished
        state = cs.get("state") or {}
        waiting, terminated = state.get("waiting"), state.get("terminated")
        if waiting and waiting.get("reason"):
            reason = waiting["reason"]
        elif terminated and terminated.get("reason"):
            reason = terminated["reason"]
        elif terminated:
            if terminated.get("signal"):
                reason = f"Signal:{terminated['signal']}"
            else:
                reason = f"ExitCode:{terminated.get('exitCode', 0)}"
        elif cs.get("ready") and state.get("running") is not None:
            running = True
            ready += 1
    if reason == "Completed" and running:
        conditions = status.get("conditions") or []
        pod_ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
        reason = "Running" if pod_ready else "NotReady"
    if meta.get("deletionTimestamp"):
        reason = "Unknown" if status.get("reason") == "NodeLost" else "Terminating"
    restarts_text = str(restarts)
    if restarts and last_restart is not None:
        restarts_text = f"{restarts} ({human_duration(now - last_restart)} ago)"
    gates = spec.get("readinessGates") or []
    gate_text = "<none>"
    if gates:
        conds = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
        met = sum(1 for g in gates if conds.get(g.get("conditionType")) == "True")
        gate_text = f"{met}/{len(gates)}"
    return [
        _name(obj),
        f"{ready}/{total}",
        reason,
        restarts_text,
        age(meta.get("creationTimestamp"), now),
        status.get("podIP") or "<none>",
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gate_text,
    ]


def _service_columns() -> list[dict[str, Any]]:
    return [
        dict(_NAME_COLUMN),
        _column("Type", "string", "The type of the service."),
        _column("Cluster-IP", "string", "The cluster ip of the service."),
        _column("External-IP", "string", "The external ip of the service."),
        _column("Port(s)", "string", "The ports of the service."),
        _column("Age", "string", _AGE_DESCRIPTION),
        _column("Selector", "string", "The label selector of the service.", 1),
    ]


def _service_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    spec = obj.get("spec") or {}
    type_ = spec.get("type") or "ClusterIP"
    external = "<none>"
    if type_ == "ExternalName":
        external = spec.get("externalName") or "<none>"
    elif type_ == "LoadBalancer":
        ingress = ((obj.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
        ips = [i.get("ip") or i.get("hostname") for i in ingress] + list(
            spec.get("externalIPs") or []
        )
        external = ",".join(ip for ip in ips if ip) or "<pending>"
    elif spec.get("externalIPs"):
        external = ",".join(spec["externalIPs"])
    ports = []
    for p in spec.get("ports") or []:
        proto = p.get("protocol") or "TCP"
        if p.get("nodePort"):
            ports.append(f"{p.get('port')}:{p['nodePort']}/{proto}")
        else:
            ports.append(f"{p.get('port')}/{proto}")
    selector = spec.get("selector") or {}
    selector_text = ",".join(f"{k}={v}" for k, v in sorted(selector.items())) or "<none>"
    cluster_ip = spec.get("clusterIP") or ("<none>" if type_ == "ExternalName" else "")
    return [
        _name(obj),
        type_,
        cluster_ip,
        external,
        ",".join(ports) or "<none>",
        age((obj.get("metadata") or {}).get("creationTimestamp"), now),
        selector_text,
    ]


def _generic_columns() -> list[dict[str, Any]]:
    return [dict(_NAME_COLUMN), _column("Age", "string", _AGE_DESCRIPTION)]


def _generic_cells(obj: dict[str, Any], now: datetime) -> list[Any]:
    return [_name(obj), age((obj.get("metadata") or {}).get("creationTimestamp"), now)]


_BUILTIN: dict[
    tuple[str, str],
    tuple[Callable[[], list[dict[str, Any]]], Callable[[dict[str, Any], datetime], list[Any]]],
] = {
    ("", "Pod"): (_pod_columns, _pod_cells),
    ("", "Service"): (_service_columns, _service_cells),
}


# --- the table -----------------------------------------------------------------------------


def _row_object(obj: dict[str, Any], include_object: str) -> dict[str, Any] | None:
    if include_object == "None":
        return None
    if include_object == "Object":
        return obj
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata") or {},
    }


def columns_and_cells(
    resource: ResourceType,
) -> tuple[list[dict[str, Any]], Callable[[dict[str, Any], datetime], list[Any]]]:
    """The column definitions of a resource and the function computing one row's cells."""
    if not resource.builtin:
        return _custom_columns(resource), lambda obj, now: _custom_cells(resource, obj, now)
    columns, cells = _BUILTIN.get(
        (resource.group, resource.kind), (_generic_columns, _generic_cells)
    )
    return columns(), cells


def to_table(
    resource: ResourceType,
    objects: list[dict[str, Any]],
    include_object: str,
    now: datetime,
    include_headers: bool = True,
) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table of objects; include_object is None, Metadata (default) or Object.

    Watches send one Table per event and only the first carries column definitions
    (include_headers=False for the rest), as kube-apiserver does.
    """
    columns, cells = columns_and_cells(resource)
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": cells(obj, now)}
        embedded = _row_object(obj, include_object or "Metadata")
        if embedded is not None:
            row["object"] = embedded
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {},
        "columnDefinitions": columns if include_headers else [],
        "rows": rows,
    }


def watch_event_table(
    resource: ResourceType, obj: dict[str, Any], include_object: str, now: datetime, first: bool
) -> dict[str, Any]:
    """The Table sent as the object of one watch event (column definitions only when first)."""
    table = to_table(resource, [obj], include_object, now, include_headers=first)
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    if rv:
        table["metadata"] = {"resourceVersion": rv}
    return table

"""Table rendering for `kubectl get`: ages, JSONPath printer columns, pod and service printers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from ascendjob_controller.localcluster.resources import ResourceType
from ascendjob_controller.localcluster.tables import (
    JSONPathError,
    human_duration,
    jsonpath,
    to_table,
    watch_event_table,
)

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)


def ts(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize(
    ("seconds", "expected"),
    [
        (-5, "<invalid>"),
        (-0.5, "0s"),
        (0, "0s"),
        (5, "5s"),
        (119, "119s"),
        (120, "2m"),
        (182, "3m2s"),
        (599, "9m59s"),
        (600, "10m"),
        (3 * 3600 - 1, "179m"),
        (3 * 3600, "3h"),
        (4 * 3600 + 5 * 60, "4h5m"),
        (8 * 3600 + 5 * 60, "8h"),
        (47 * 3600, "47h"),
        (2 * 86400, "2d"),
        (2 * 86400 + 3 * 3600, "2d3h"),
        (10 * 86400, "10d"),
        (365 * 2 * 86400 + 45 * 86400, "2y45d"),
        (365 * 9 * 86400, "9y"),
    ],
)
def test_human_duration(seconds: float, expected: str) -> None:
    assert human_duration(timedelta(seconds=seconds)) == expected


DOC = {
    "metadata": {"name": "j", "annotations": {"a.b/c": "x"}},
    "status": {"conditions": [{"type": "Created"}, {"type": "Running"}], "restartCount": 2},
    "spec": {"list": [1, 2, 3], "map": {"k": "v"}},
}


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        (".status.conditions[-1:].type", ["Running"]),
        (".status.conditions[0].type", ["Created"]),
        (".status.conditions[*].type", ["Created", "Running"]),
        ("{.status.restartCount}", [2]),
        ("$.status.restartCount", [2]),
        (".spec.list[1:]", [2, 3]),
        (".spec.list[5]", []),
        (".spec.missing", []),
        (".metadata.annotations['a.b/c']", ["x"]),
        (".spec.map.*", ["v"]),
    ],
)
def test_jsonpath(expr: str, expected: list[Any]) -> None:
    assert jsonpath(DOC, expr) == expected


def test_jsonpath_rejects_garbage() -> None:
    with pytest.raises(JSONPathError):
        jsonpath(DOC, ".status..[[")


ACJOB = ResourceType(
    "mindxdl.gitee.com",
    "v1",
    "AscendJob",
    "ascendjobs",
    "ascendjob",
    True,
    ("acjob",),
    builtin=False,
    printer_columns=(
        {"name": "Status", "type": "string", "jsonPath": ".status.conditions[-1:].type"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        {"name": "Restarts", "type": "integer", "jsonPath": ".status.restartCount"},
        {"name": "Queue", "type": "string", "jsonPath": ".spec.queue", "priority": 1},
    ),
)


def job(name: str, age_s: float, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "mindxdl.gitee.com/v1",
        "kind": "AscendJob",
        "metadata": {
            "name": name,
            "namespace": "default",
            "creationTimestamp": ts(age_s),
            "resourceVersion": "7",
        },
        "spec": {},
        "status": status,
    }


def test_custom_resource_table_uses_printer_columns() -> None:
    objs = [
        job("a", 5, conditions=[{"type": "Created"}, {"type": "Running"}], restartCount=1),
        job("b", 3700),
    ]
    table = to_table(ACJOB, objs, "Metadata", NOW)
    assert table["kind"] == "Table" and table["apiVersion"] == "meta.k8s.io/v1"
    cols = table["columnDefinitions"]
    assert [c["name"] for c in cols] == ["Name", "Status", "Age", "Restarts", "Queue"]
    assert cols[0]["format"] == "name"
    assert [c["priority"] for c in cols] == [0, 0, 0, 0, 1]
    assert table["rows"][0]["cells"] == ["a", "Running", "5s", 1, None]
    assert table["rows"][1]["cells"] == ["b", None, "61m", None, None]
    obj = table["rows"][0]["object"]
    assert obj["kind"] == "PartialObjectMetadata" and obj["apiVersion"] == "meta.k8s.io/v1"
    assert obj["metadata"]["name"] == "a"


@pytest.mark.parametrize(
    ("include", "expect"),
    [
        ("None", None),
        ("Object", "AscendJob"),
        ("Metadata", "PartialObjectMetadata"),
        ("", "PartialObjectMetadata"),
    ],
)
def test_include_object(include: str, expect: str | None) -> None:
    row = to_table(ACJOB, [job("a", 1)], include, NOW)["rows"][0]
    if expect is None:
        assert "object" not in row
    else:
        assert row["object"]["kind"] == expect


def test_watch_event_table_has_headers_only_first() -> None:
    first = watch_event_table(ACJOB, job("a", 1), "Metadata", NOW, first=True)
    later = watch_event_table(ACJOB, job("a", 1), "Metadata", NOW, first=False)
    assert first["columnDefinitions"] and later["columnDefinitions"] == []
    assert later["metadata"] == {"resourceVersion": "7"}
    assert len(later["rows"]) == 1


PODS = ResourceType("", "v1", "Pod", "pods", "pod", True, ("po",))


def pod(**status: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "creationTimestamp": ts(30)},
        "spec": {"nodeName": "local-node-1", "containers": [{"name": "c"}]},
        "status": status,
    }


def test_pod_columns_and_running_row() -> None:
    table = to_table(
        PODS,
        [
            pod(
                phase="Running",
                podIP="10.244.0.5",
                containerStatuses=[
                    {"name": "c", "ready": True, "restartCount": 0, "state": {"running": {}}}
                ],
            )
        ],
        "None",
        NOW,
    )
    assert [c["name"] for c in table["columnDefinitions"]] == [
        "Name",
        "Ready",
        "Status",
        "Restarts",
        "Age",
        "IP",
        "Node",
        "Nominated Node",
        "Readiness Gates",
    ]
    assert [c["priority"] for c in table["columnDefinitions"]][5:] == [1, 1, 1, 1]
    assert table["rows"][0]["cells"] == [
        "p",
        "1/1",
        "Running",
        "0",
        "30s",
        "10.244.0.5",
        "local-node-1",
        "<none>",
        "<none>",
    ]


@pytest.mark.parametrize(
    ("status", "deleting", "ready", "reason", "restarts"),
    [
        ({"phase": "Pending"}, False, "0/1", "Pending", "0"),
        (
            {
                "phase": "Succeeded",
                "containerStatuses": [
                    {
                        "restartCount": 0,
                        "state": {"terminated": {"exitCode": 0, "reason": "Completed"}},
                    }
                ],
            },
            False,
            "0/1",
            "Completed",
            "0",
        ),
        (
            {
                "phase": "Failed",
                "containerStatuses": [
                    {
                        "restartCount": 0,
                        "state": {"terminated": {"exitCode": 137, "reason": "Error"}},
                    }
                ],
            },
            False,
            "0/1",
            "Error",
            "0",
        ),
        (
            {
                "phase": "Running",
                "containerStatuses": [
                    {"restartCount": 0, "state": {"terminated": {"exitCode": 3}}}
                ],
            },
            False,
            "0/1",
            "ExitCode:3",
            "0",
        ),
        (
            {
                "phase": "Pending",
                "containerStatuses": [
                    {"restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}}
                ],
            },
            False,
            "0/1",
            "ContainerCreating",
            "0",
        ),
        (
            {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "ready": True,
                        "restartCount": 2,
                        "state": {"running": {}},
                        "lastState": {"terminated": {"exitCode": 1, "finishedAt": ts(65)}},
                    }
                ],
            },
            False,
            "1/1",
            "Running",
            "2 (65s ago)",
        ),
        ({"phase": "Running"}, True, "0/1", "Terminating", "0"),
    ],
)
def test_pod_status_column(
    status: dict, deleting: bool, ready: str, reason: str, restarts: str
) -> None:
    p = pod(**status)
    if deleting:
        p["metadata"]["deletionTimestamp"] = ts(1)
    cells = to_table(PODS, [p], "None", NOW)["rows"][0]["cells"]
    assert cells[1:4] == [ready, reason, restarts]


SERVICES = ResourceType("", "v1", "Service", "services", "service", True, ("svc",))


def test_service_row() -> None:
    svc = {
        "metadata": {"name": "s", "creationTimestamp": ts(200)},
        "spec": {
            "type": "ClusterIP",
            "clusterIP": "None",
            "ports": [{"port": 2222, "protocol": "TCP"}, {"port": 80, "nodePort": 30080}],
            "selector": {"job": "j"},
        },
    }
    table = to_table(SERVICES, [svc], "None", NOW)
    assert [c["name"] for c in table["columnDefinitions"]][:6] == [
        "Name",
        "Type",
        "Cluster-IP",
        "External-IP",
        "Port(s)",
        "Age",
    ]
    assert table["rows"][0]["cells"] == [
        "s",
        "ClusterIP",
        "None",
        "<none>",
        "2222/TCP,80:30080/TCP",
        "3m20s",
        "job=j",
    ]


def test_other_builtins_print_name_and_age() -> None:
    cm = ResourceType("", "v1", "ConfigMap", "configmaps", "configmap", True)
    table = to_table(
        cm,
        [
            {"metadata": {"name": "c", "creationTimestamp": ts(86400 * 3)}},
            {"metadata": {"name": "d"}},
        ],
        "None",
        NOW,
    )
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert [r["cells"] for r in table["rows"]] == [["c", "3d"], ["d", "<unknown>"]]

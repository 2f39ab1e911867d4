"""Built-in Table printers: the cells `kubectl get` shows for configmaps, events, leases..."""

from __future__ import annotations

from datetime import UTC, datetime

from ascendjob_controller.localcluster import builtin, eventsapi, printers
from ascendjob_controller.localcluster.gc import namespace_conditions

NOW = datetime(2026, 1, 1, 0, 1, 0, tzinfo=UTC)
META = {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}


def _cells(rt: object, obj: dict) -> list:  # type: ignore[type-arg]
    table = printers.to_table(rt, [obj], "None", NOW)  # type: ignore[arg-type]
    assert table["rows"][0]["object"] is None
    return table["rows"][0]["cells"]  # type: ignore[no-any-return]


def test_configmap_namespace_lease_cells() -> None:
    assert _cells(
        builtin.CONFIGMAPS, {"metadata": META, "data": {"a": "1"}, "binaryData": {"b": ""}}
    ) == ["x", 2, "60s"]
    assert _cells(builtin.NAMESPACES, {"metadata": META, "status": {"phase": "Active"}}) == [
        "x",
        "Active",
        "60s",
    ]
    assert _cells(builtin.LEASES, {"metadata": META, "spec": {"holderIdentity": "me"}}) == [
        "x",
        "me",
        "60s",
    ]
    columns = printers.columns_and_cells(builtin.CONFIGMAPS)[0]
    assert [c["name"] for c in columns] == ["Name", "Data", "Age"]


def test_event_rows_from_either_api() -> None:
    core = {
        "metadata": META,
        "involvedObject": {"kind": "Pod", "name": "p"},
        "reason": "Started",
        "message": " started \n",
        "type": "Normal",
        "source": {"component": "kubelet", "host": "n1"},
        "firstTimestamp": "2026-01-01T00:00:00Z",
        "lastTimestamp": "2026-01-01T00:00:30Z",
        "count": 3,
    }
    row = ["30s", "Normal", "Started", "pod/p", "", "kubelet, n1", "started", "60s", 3, "x"]
    assert _cells(builtin.EVENTS, core) == row
    new = eventsapi.to_new({**core, "source": {}, "reportingComponent": "ctl", "count": 0})
    cells = _cells(builtin.NEW_EVENTS, new)
    assert cells[5] == "ctl" and cells[8] == 1  # a singleton event counts once


def test_event_conversion_round_trip_keeps_the_always_present_fields() -> None:
    new = {
        "metadata": META,
        "regarding": {"kind": "Pod", "name": "p"},
        "note": "n",
        "reportingController": "c",
        "eventTime": "2026-01-01T00:00:00.000000Z",
    }
    core = eventsapi.to_core(new)
    assert core["involvedObject"] == {"kind": "Pod", "name": "p"} and core["message"] == "n"
    assert (core["source"], core["firstTimestamp"], core["reportingInstance"]) == ({}, None, "")
    back = eventsapi.to_new(core)
    assert back["deprecatedSource"] == {} and back["deprecatedFirstTimestamp"] is None
    assert back["regarding"] == new["regarding"] and back["reportingController"] == "c"


def test_namespace_conditions_name_what_is_left() -> None:
    left = [("configmaps", {"metadata": {"finalizers": ["a/b"]}}), ("pods", {"metadata": {}})]
    conditions = {c["type"]: c for c in namespace_conditions(left, "2026-01-01T00:00:00Z")}
    assert conditions["NamespaceContentRemaining"]["message"] == (
        "Some resources are remaining: configmaps. has 1 resource instances, pods. has 1 "
        "resource instances"
    )
    assert conditions["NamespaceFinalizersRemaining"]["message"] == (
        "Some content in the namespace has finalizers remaining: a/b in 1 resource instances"
    )

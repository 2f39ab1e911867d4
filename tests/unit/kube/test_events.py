"""Event aggregation and spam control, with an in-memory stand-in for the API."""

from __future__ import annotations

import threading
from typing import Any, cast

from ascendjob_controller.kube.client import ApiError, KubeClient, Resource
from ascendjob_controller.kube.events import (
    Create,
    EventAggregator,
    EventRecorder,
    Patch,
    event_key,
    involved_object,
)

JOB = {
    "apiVersion": "mindxdl.gitee.com/v1",
    "kind": "AscendJob",
    "metadata": {"name": "j1", "namespace": "ns", "uid": "u-1", "resourceVersion": "7"},
}


class FakeEventsApi:
    """Keeps Events in a dict; can fail or block like a sick API server."""

    def __init__(self) -> None:
        self.events: dict[str, dict[str, Any]] = {}
        self.calls: list[str] = []
        self.fail = False
        self.gate = threading.Event()
        self.gate.set()
        self.lock = threading.Lock()

    def create(
        self,
        res: Resource,
        namespace: str,
        body: dict[str, Any],
        *,
        read_back: bool = True,
        decode: bool = True,
    ) -> dict[str, Any]:
        assert not read_back, "the recorder may not GET events (no `get` in the ClusterRole)"
        self.gate.wait(30)
        with self.lock:
            self.calls.append("create")
            if self.fail:
                raise ApiError(500, "InternalError", "boom")
            self.events[body["metadata"]["name"]] = dict(body)
            return body if decode else {}  # as KubeClient: nothing decoded, nothing returned

    def patch(self, res: Resource, namespace: str, name: str, body: dict[str, Any]) -> Any:
        self.gate.wait(30)
        with self.lock:
            self.calls.append("patch")
            if self.fail:
                raise ApiError(500, "InternalError", "boom")
            if name not in self.events:
                raise ApiError(404, "NotFound", "gone")
            self.events[name].update(body)
            return self.events[name]


def recorder(api: FakeEventsApi, **kw: Any) -> EventRecorder:
    rec = EventRecorder(cast(KubeClient, api), "test-controller", **kw)
    rec.start()
    return rec


def test_aggregator_creates_then_patches_with_a_running_count() -> None:
    agg = EventAggregator("c")
    involved = involved_object(JOB)
    key = event_key(involved, "Warning", "PodFailed", "pod x failed")
    first = agg.plan(key, involved, 3, 1_700_000_000.0)
    assert isinstance(first, Create)
    assert first.body["count"] == 3
    assert first.body["involvedObject"]["uid"] == "u-1"
    assert first.body["firstTimestamp"] == first.body["lastTimestamp"] == "2023-11-14T22:13:20Z"
    assert first.body["source"] == {"component": "c"}
    assert first.namespace == "ns"
    agg.sent(key, "ns", first.body["metadata"]["name"], 3)
    second = agg.plan(key, involved, 2, 1_700_000_060.0)
    assert second == Patch(
        "ns", first.body["metadata"]["name"], {"count": 5, "lastTimestamp": "2023-11-14T22:14:20Z"}
    )
    other = agg.plan(event_key(involved, "Warning", "PodFailed", "pod y failed"), involved, 1, 0)
    assert isinstance(other, Create), "a different message is a different Event"


def test_identical_events_become_one_event_with_a_count() -> None:
    api = FakeEventsApi()
    rec = recorder(api)
    for _ in range(5):
        rec.event(JOB, "Normal", "SuccessfulCreatePod", "Created pod j1-master-0")
        assert rec.flush(30)
    rec.event(JOB, "Normal", "Other", "x")
    rec.stop(30)
    counts = sorted((e["reason"], e["count"]) for e in api.events.values())
    assert counts == [("Other", 1), ("SuccessfulCreatePod", 5)]
    assert api.calls.count("create") == 2


def test_a_hot_loop_is_coalesced_and_rate_limited() -> None:
    api = FakeEventsApi()
    api.gate.clear()  # the API is slow: events pile up meanwhile
    rec = recorder(api, qps=1.0, burst=2)
    rec.event(JOB, "Warning", "Hot", "again")
    for i in range(5000):
        rec.event(JOB, "Warning", "Hot", "again")
        rec.event(JOB, "Warning", "Hot", f"distinct {i % 3}")
    api.gate.set()
    rec.stop(30)
    total = {e["message"]: e["count"] for e in api.events.values()}
    assert total["again"] == 5001, "coalescing keeps the count exact"
    assert sum(total.values()) == 10001
    assert len(api.calls) <= 8, f"far fewer API calls than events: {api.calls}"


def test_event_never_raises_nor_blocks_when_the_api_fails() -> None:
    api = FakeEventsApi()
    api.fail = True
    rec = recorder(api)
    rec.event(JOB, "Warning", "R", "m")
    rec.event({"metadata": None}, "Warning", "R", "broken object")
    assert rec.flush(30)
    api.gate.clear()
    rec.event(JOB, "Warning", "R", "while the API hangs")  # returns at once
    api.gate.set()
    rec.stop(30)


def test_patch_of_an_expired_event_creates_a_new_one() -> None:
    api = FakeEventsApi()
    rec = recorder(api)
    rec.event(JOB, "Normal", "R", "m")
    assert rec.flush(30)
    api.events.clear()  # the server's event TTL removed it
    rec.event(JOB, "Normal", "R", "m")
    rec.stop(30)
    assert api.calls == ["create", "patch", "create"]
    assert [e["count"] for e in api.events.values()] == [1]


def test_pending_is_bounded() -> None:
    api = FakeEventsApi()
    api.gate.clear()
    rec = recorder(api, max_pending=10)
    for i in range(50):
        rec.event(JOB, "Normal", "R", f"m{i}")
    assert rec.dropped >= 30
    api.gate.set()
    rec.stop(30)


def test_many_distinct_events_of_one_object_drain_at_its_rate_none_lost() -> None:
    """A 1,000-pod job's SuccessfulCreatePod events: distinct messages, one object. Past the
    burst they wait for the object's rate limit (the sender takes them from a heap rather
    than rescanning every pending event on each wake-up) and every one is sent once."""
    api = FakeEventsApi()
    rec = recorder(api, qps=2000.0, burst=25)
    for i in range(1000):
        rec.event(JOB, "Normal", "SuccessfulCreatePod", f"Created pod: p-{i}")
    assert rec.flush(30)
    rec.stop(30)
    messages = sorted(e["message"] for e in api.events.values())
    assert messages == sorted(f"Created pod: p-{i}" for i in range(1000))
    assert api.calls == ["create"] * 1000

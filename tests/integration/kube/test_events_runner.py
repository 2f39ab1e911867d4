"""EventRecorder and Runner wired to real informers and the local cluster."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from ascendjob_controller import metrics
from ascendjob_controller.kube.client import CONFIGMAPS, EVENTS
from ascendjob_controller.kube.events import EventRecorder
from ascendjob_controller.kube.informer import Informer, object_key
from ascendjob_controller.kube.runner import Result, Runner
from ascendjob_controller.kube.workqueue import RateLimitingQueue
from tests.integration.kube.helpers import configmap, fresh_namespace, make_client, wait_for

pytestmark = pytest.mark.integration


def test_repeated_identical_events_become_one_event_with_a_count(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    obj = client.create(CONFIGMAPS, ns, configmap("subject"))
    obj.setdefault("apiVersion", "v1")
    obj.setdefault("kind", "ConfigMap")
    recorder = EventRecorder(client, "test-recorder")
    recorder.start()
    try:
        for _ in range(4):
            recorder.event(obj, "Warning", "BackOff", "restarting failed container")
            assert recorder.flush(30)
        for _ in range(3):  # a burst, coalesced before sending
            recorder.event(obj, "Warning", "BackOff", "restarting failed container")
        recorder.event(obj, "Normal", "Created", "created it")
    finally:
        recorder.stop(30)
    events = client.list(EVENTS, ns)["items"]
    by_reason = {e["reason"]: e for e in events}
    assert sorted(by_reason) == ["BackOff", "Created"] and len(events) == 2
    backoff = by_reason["BackOff"]
    assert backoff["count"] == 7
    assert backoff["type"] == "Warning"
    assert backoff["involvedObject"]["uid"] == obj["metadata"]["uid"]
    assert backoff["involvedObject"]["kind"] == "ConfigMap"
    assert backoff["source"]["component"] == "test-recorder"
    assert backoff["lastTimestamp"] >= backoff["firstTimestamp"]
    assert by_reason["Created"]["count"] == 1


def test_runner_reconciles_after_sync_and_shuts_down_gracefully(bare_cluster: Any) -> None:
    client = make_client(bare_cluster)
    ns = fresh_namespace(client)
    for i in range(5):
        client.create(CONFIGMAPS, ns, configmap(f"r{i}"))
    name = f"it-{uuid.uuid4().hex[:6]}"
    queue = RateLimitingQueue(name)
    informer = Informer(client, CONFIGMAPS, namespace=ns, watch_timeout_range=(20, 30))
    informer.add_event_handler(
        on_add=lambda o: queue.add(object_key(o)),
        on_update=lambda old, new: queue.add(object_key(new)),
    )
    unsynced_reconciles: list[str] = []
    in_flight = threading.Event()
    release = threading.Event()
    done: list[str] = []

    def reconcile(key: str) -> Result:
        if not informer.has_synced():
            unsynced_reconciles.append(key)
        obj = informer.store.get(key)
        assert obj is not None
        if key.endswith("/slow"):
            in_flight.set()
            release.wait(60)
        if (obj.get("data") or {}).get("seen") != "yes":
            namespace, obj_name = key.split("/")
            client.patch(CONFIGMAPS, namespace, obj_name, {"data": {"seen": "yes"}})
        done.append(key)
        return Result()

    runner = Runner(name, queue, reconcile, workers=2, informers=[informer], controller_label=name)
    informer.start()
    assert runner.start(sync_timeout=60)
    try:
        wait_for(
            lambda: all(
                (o.get("data") or {}).get("seen") == "yes"
                for o in client.list(CONFIGMAPS, ns)["items"]
            ),
            what="every object reconciled",
        )
        assert unsynced_reconciles == []

        def successes() -> float:
            # The last patch lands on the server before its reconcile returns
            # and is counted, so the count is awaited, not read once.
            value = metrics.REGISTRY.get_sample_value(
                "controller_runtime_reconcile_total", {"controller": name, "result": "success"}
            )
            return value or 0.0

        wait_for(lambda: successes() >= 5, what="five successful reconciles counted")
        client.create(CONFIGMAPS, ns, configmap("slow"))
        assert in_flight.wait(60), "the slow reconcile started"
        active = metrics.REGISTRY.get_sample_value(
            "controller_runtime_active_workers", {"controller": name}
        )
        assert active == 1
        result: list[bool] = []
        stopper = threading.Thread(target=lambda: result.append(runner.stop(timeout=60)))
        stopper.start()
        wait_for(queue.shutting_down, what="shutdown began")
        client.create(CONFIGMAPS, ns, configmap("after-stop"))
        release.set()
        stopper.join(60)
        assert result == [True]
        assert f"{ns}/slow" in done, "the in-flight reconcile finished"
        assert f"{ns}/after-stop" not in done, "no new keys after stop"
        assert client.get(CONFIGMAPS, ns, "slow")["data"]["seen"] == "yes"
        assert (
            metrics.REGISTRY.get_sample_value(
                "controller_runtime_active_workers", {"controller": name}
            )
            == 0
        )
        assert informer._stop.is_set(), "the runner stopped its informers"
    finally:
        release.set()
        runner.stop(timeout=10)

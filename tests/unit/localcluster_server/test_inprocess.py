"""In-process serving for the local cluster's kubelet: the same answers as over HTTP.

`DirectClient` must be indistinguishable from a socket client to everything but the clock
(codes, Status bodies, request counts, injected faults), and `StoreWatcher` must deliver a
relist, then every event of its collection, and relist again when it falls behind.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ascendjob_controller.localcluster.cluster import LocalCluster
from ascendjob_controller.localcluster.inprocess import DirectClient, StoreWatcher

POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p"},
    "spec": {"containers": [{"name": "c", "image": "busybox"}]},
}
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    c = LocalCluster(kubeconfig_path=tmp_path / "kubeconfig", kubelet=False, watch_window=20)
    c.start()
    yield c
    c.stop()


def over_http(cluster: LocalCluster, method: str, path: str, body: Any = None,
              content_type: str = "application/json") -> tuple[int, Any]:  # fmt: skip
    conn = http.client.HTTPConnection("127.0.0.1", cluster.port, timeout=10)
    try:
        headers = {"Accept": "application/json"}
        payload = None if body is None else json.dumps(body).encode()
        if payload is not None:
            headers["Content-Type"] = content_type
        conn.request(method, path, body=payload, headers=headers)
        resp = conn.getresponse()
        raw = resp.read()
        return resp.status, json.loads(raw) if raw else None
    finally:
        conn.close()


def without_volatile(obj: Any) -> Any:
    """The object minus what two creates of the same pod cannot share (its identity and
    the service account volume's random name)."""
    obj = json.loads(json.dumps(obj))
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "name"):
        obj["metadata"].pop(key, None)
    obj["spec"].pop("volumes")
    obj["spec"]["containers"][0].pop("volumeMounts")
    return obj


def test_answers_codes_and_bodies_as_http_does(cluster: LocalCluster) -> None:
    direct = DirectClient(cluster.state)
    a = direct.request("POST", PODS, {**POD, "metadata": {"name": "a"}})
    b = over_http(cluster, "POST", PODS, {**POD, "metadata": {"name": "b"}})
    assert a[0] == b[0] == 201
    assert without_volatile(a[1]) == without_volatile(b[1])
    assert (
        a[1]["metadata"]["managedFields"][0]["manager"]
        == (b[1]["metadata"]["managedFields"][0]["manager"])
    )
    missing = [f(cluster, "GET", f"{PODS}/nope") for f in (lambda c, *r: direct.request(*r),
                                                          over_http)]  # fmt: skip
    assert missing[0] == missing[1]
    assert missing[0][0] == 404 and missing[0][1]["kind"] == "Status"
    wrong_uid = [{"op": "test", "path": "/metadata/uid", "value": "not-it"}]
    for path in (f"{PODS}/a/status", f"{PODS}/b/status"):
        code_direct, body_direct = direct.request(
            "PATCH", path, wrong_uid, "application/json-patch+json"
        )
        code_http, body_http = over_http(
            cluster, "PATCH", path, wrong_uid, "application/json-patch+json"
        )
        assert (code_direct, body_direct) == (code_http, body_http)
        assert code_direct == 422


def test_requests_are_counted_and_faults_apply(cluster: LocalCluster) -> None:
    direct = DirectClient(cluster.state)
    before = cluster.request_count("create", "pods")
    assert direct.request("POST", PODS, POD)[0] == 201
    assert cluster.request_count("create", "pods") == before + 1
    cluster.faults.fail("patch", "pods", code=500, percent=100)
    try:
        code, body = direct.request(
            "PATCH", f"{PODS}/p", {"metadata": {"labels": {"x": "1"}}},
            "application/merge-patch+json",
        )  # fmt: skip
    finally:
        cluster.faults.clear()
    assert code == 500
    assert body["kind"] == "Status"
    stored = direct.request("GET", f"{PODS}/p")[1]
    assert "labels" not in stored["metadata"]


class Recorder:
    def __init__(self) -> None:
        self.relists: list[list[str]] = []
        self.events: list[tuple[str, str]] = []
        self.gate = threading.Event()
        self.gate.set()
        #: Set once the watcher is held at the gate with an event in hand.
        self.holding = threading.Event()
        self.changed = threading.Condition()

    def on_relist(self, objs: list[dict[str, Any]]) -> None:
        with self.changed:
            self.relists.append(sorted(o["metadata"]["name"] for o in objs))
            self.changed.notify_all()

    def on_event(self, kind: str, obj: dict[str, Any]) -> None:
        if not self.gate.is_set():
            self.holding.set()
        self.gate.wait(10)
        with self.changed:
            self.events.append((kind, obj["metadata"]["name"]))
            self.changed.notify_all()

    def wait(self, what: str, predicate: Any, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        with self.changed:
            while not predicate():
                left = deadline - time.monotonic()
                assert left > 0, f"timed out waiting for {what}: {self.relists} {self.events}"
                self.changed.wait(left)


def test_store_watcher_relists_then_follows_then_relists_when_behind(
    cluster: LocalCluster,
) -> None:
    direct = DirectClient(cluster.state)
    direct.request("POST", PODS, {**POD, "metadata": {"name": "before"}})
    seen = Recorder()
    stopping = threading.Event()
    watcher = direct.watcher("/api/v1/pods", seen.on_event, seen.on_relist, stopping, "pods")
    assert isinstance(watcher, StoreWatcher)
    thread = threading.Thread(target=watcher.run, daemon=True)
    thread.start()
    try:
        seen.wait("the first relist", lambda: seen.relists == [["before"]])
        direct.request("POST", PODS, {**POD, "metadata": {"name": "after"}})
        direct.request("POST", "/api/v1/namespaces", {"metadata": {"name": "not-a-pod"}})
        direct.request("DELETE", f"{PODS}/before?gracePeriodSeconds=0")
        seen.wait("the deletion", lambda: ("DELETED", "before") in seen.events)
        assert seen.events[0] == ("ADDED", "after")
        assert {name for _, name in seen.events} == {"after", "before"}  # not the namespace
        seen.gate.clear()  # hold the watcher while 30 writes pass a 20-event window
        direct.request("POST", PODS, {**POD, "metadata": {"name": "held"}})
        # Only once the watcher holds "held" alone do the 30 writes start: a watcher that
        # had not yet woken would take them in with "held" and never fall behind.
        assert seen.holding.wait(10), "the watcher took 'held' and waits at the gate"
        for i in range(30):
            direct.request("POST", PODS, {**POD, "metadata": {"name": f"q{i:02d}"}})
        seen.gate.set()
        seen.wait("a relist after falling behind", lambda: len(seen.relists) == 2)
        assert seen.relists[1] == sorted(["after", "held"] + [f"q{i:02d}" for i in range(30)])
    finally:
        seen.gate.set()
        stopping.set()
        thread.join(5)
    assert not thread.is_alive()

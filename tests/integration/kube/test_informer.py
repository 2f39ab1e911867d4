"""Informer against the local cluster: sync, convergence after faults, no lost/dup events."""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

import pytest

from ascendjob_controller.kube.client import CONFIGMAPS, KubeClient
from ascendjob_controller.kube.informer import (
    DeletedFinalStateUnknown,
    Informer,
    InformerFactory,
    index_by_label,
    index_by_namespace,
    object_key,
    wait_for_cache_sync,
)
from tests.integration.kube.helpers import (
    BlackholeProxy,
    configmap,
    fresh_namespace,
    make_client,
    proxied_client,
    wait_for,
)

pytestmark = pytest.mark.integration


class EventLog:
    """Everything the handlers were told, per key, to check for losses and duplicates."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_key: dict[str, list[tuple[str, str]]] = defaultdict(list)
        self.tombstones: list[str] = []

    def on_add(self, obj: Any) -> None:
        with self.lock:
            self.by_key[object_key(obj)].append(("add", obj["metadata"]["resourceVersion"]))

    def on_update(self, old: Any, new: Any) -> None:
        with self.lock:
            self.by_key[object_key(new)].append(("update", new["metadata"]["resourceVersion"]))

    def on_delete(self, obj: Any) -> None:
        with self.lock:
            if isinstance(obj, DeletedFinalStateUnknown):
                self.tombstones.append(obj.key)
                self.by_key[obj.key].append(("delete", "tombstone"))
            else:
                self.by_key[object_key(obj)].append(("delete", obj["metadata"]["resourceVersion"]))


@pytest.fixture(autouse=True)
def _clear_faults(bare_cluster: Any) -> Iterator[None]:
    if hasattr(bare_cluster, "faults"):  # only the local cluster injects faults
        bare_cluster.faults.clear()
    yield
    if hasattr(bare_cluster, "faults"):  # only the local cluster injects faults
        bare_cluster.faults.clear()


@pytest.fixture
def client(bare_cluster: Any) -> KubeClient:
    return make_client(bare_cluster)


def started(client: KubeClient, ns: str, log: EventLog | None = None, **kw: Any) -> Informer:
    kw.setdefault("watch_timeout_range", (20, 30))
    kw.setdefault("backoff", (0.05, 0.5))
    informer = Informer(client, CONFIGMAPS, namespace=ns, **kw)
    if log is not None:
        informer.add_event_handler(log.on_add, log.on_update, log.on_delete)
    informer.start()
    assert wait_for_cache_sync([informer], 30)
    return informer


def server_state(client: KubeClient, ns: str) -> dict[str, str]:
    return {
        object_key(o): o["metadata"]["resourceVersion"]
        for o in client.list(CONFIGMAPS, ns)["items"]
    }


def cache_state(informer: Informer) -> dict[str, str]:
    return {object_key(o): o["metadata"]["resourceVersion"] for o in informer.store.list()}


def converges(client: KubeClient, ns: str, informer: Informer) -> None:
    wait_for(lambda: cache_state(informer) == server_state(client, ns), what="cache == server list")


def test_cache_equals_the_server_after_sync_and_holds_no_managed_fields(
    client: KubeClient,
) -> None:
    ns = fresh_namespace(client)
    for i in range(12):
        body = configmap(f"c{i}")
        body["metadata"]["annotations"] = {
            "kubectl.kubernetes.io/last-applied-configuration": json.dumps(body)
        }
        client.create(CONFIGMAPS, ns, body)
    client.patch(
        CONFIGMAPS,
        ns,
        "c0",
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c0"}, "data": {"a": "1"}},
        patch_type="apply",
        field_manager="test",
    )
    assert client.get(CONFIGMAPS, ns, "c0")["metadata"].get("managedFields"), "server has them"
    log = EventLog()
    informer = started(client, ns, log)
    try:
        assert informer.has_synced()
        assert cache_state(informer) == server_state(client, ns)
        for obj in informer.store.list():
            assert "managedFields" not in obj["metadata"]
            assert "kubectl.kubernetes.io/last-applied-configuration" not in (
                obj["metadata"].get("annotations") or {}
            )
        assert sorted(log.by_key) == sorted(server_state(client, ns))
        # later changes flow in
        client.create(CONFIGMAPS, ns, configmap("late"))
        client.delete(CONFIGMAPS, ns, "c1")
        client.patch(CONFIGMAPS, ns, "c2", {"data": {"x": "y"}})
        converges(client, ns, informer)
        assert log.by_key[f"{ns}/c1"][-1][0] == "delete"
        assert log.by_key[f"{ns}/c2"][-1][0] == "update"
    finally:
        informer.stop()


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_converges_after_dropped_watches(bare_cluster: Any, client: KubeClient) -> None:
    ns = fresh_namespace(client)
    informer = started(client, ns, EventLog())
    lists_before = informer.lists
    try:
        for round_ in range(3):
            watches = informer.watch_restarts
            bare_cluster.faults.drop_watches()
            client.create(CONFIGMAPS, ns, configmap(f"d{round_}"))
            wait_for(lambda: informer.watch_restarts > watches, what="a new watch")  # noqa: B023
            converges(client, ns, informer)
        assert informer.lists == lists_before, (
            "a dropped watch resumes from its resourceVersion, without a relist"
        )
    finally:
        informer.stop()


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_relists_on_410_and_delivers_tombstones(bare_cluster: Any, client: KubeClient) -> None:
    ns = fresh_namespace(client)
    for i in range(5):
        client.create(CONFIGMAPS, ns, configmap(f"g{i}"))
    log = EventLog()
    informer = started(client, ns, log)
    try:
        # Keep the reflector off the air (its watches fail) while objects change...
        bare_cluster.faults.fail("watch", "configmaps", code=500)
        bare_cluster.faults.drop_watches()
        wait_for(
            lambda: bare_cluster.request_count("watch", "configmaps") > 0, what="watch attempts"
        )
        client.delete(CONFIGMAPS, ns, "g0")
        client.delete(CONFIGMAPS, ns, "g1")
        client.patch(CONFIGMAPS, ns, "g2", {"data": {"changed": "yes"}})
        client.create(CONFIGMAPS, ns, configmap("g9"))
        lists_before = informer.lists
        # ...then let the next watch come back "too old": only a relist can recover.
        # For configmaps only: another watch of the process must not take this 410. In one
        # step with the clear: a retry in between would resume the old watch, not relist.
        bare_cluster.faults.clear(then_expire="configmaps")
        converges(client, ns, informer)
        assert informer.lists > lists_before, "it relisted"
        assert sorted(log.tombstones) == [f"{ns}/g0", f"{ns}/g1"]
        assert log.by_key[f"{ns}/g2"][-1][0] == "update"
        assert log.by_key[f"{ns}/g9"] == [("add", log.by_key[f"{ns}/g9"][0][1])]
        assert [e for e in log.by_key[f"{ns}/g3"]] == log.by_key[f"{ns}/g3"][:1], (
            "an unchanged object gets no event from the relist"
        )
    finally:
        informer.stop()


@pytest.mark.local_only("injects faults through the embedded server's hooks")
def test_bookmarks_advance_the_resource_version_only(bare_cluster: Any, client: KubeClient) -> None:
    ns = fresh_namespace(client)
    other = fresh_namespace(client)
    log = EventLog()
    informer = started(client, ns, log)
    try:
        synced_rv = int(informer.last_sync_resource_version[ns])
        for i in range(3):  # changes elsewhere move the server's resourceVersion
            client.create(CONFIGMAPS, other, configmap(f"b{i}"))
        target = int(client.list(CONFIGMAPS, other)["metadata"]["resourceVersion"])
        assert target > synced_rv
        # The local cluster sends a BOOKMARK every 5 s.
        wait_for(
            lambda: int(informer.last_sync_resource_version[ns]) >= target,
            timeout=30,
            what="a bookmark",
        )
        assert log.by_key == {}, "bookmarks deliver no events"
        lists_before = informer.lists
        bare_cluster.faults.drop_watches()
        client.create(CONFIGMAPS, ns, configmap("after"))
        converges(client, ns, informer)
        assert informer.lists == lists_before
    finally:
        informer.stop()


@pytest.mark.local_only("injects faults through the embedded server's hooks")
@pytest.mark.parametrize("mode", ["dropped", "dropped+410", "reset"])
def test_no_event_lost_or_duplicated_across_reconnects(
    bare_cluster: Any, client: KubeClient, mode: str
) -> None:
    """A writer churns objects while the watch is cut again and again.

    Resumed watches (no 410) must deliver every event exactly once: add, update, delete.
    A relist (410) may legitimately skip a whole create-delete lifecycle and collapse
    updates (informers are level-based), but never duplicates nor reorders, and every object
    that was announced is eventually deleted or matches the server. "reset" cuts the TCP
    connections mid-stream (through a proxy) instead of ending the watch cleanly.
    """
    with_410 = mode == "dropped+410"
    ns = fresh_namespace(client)
    log = EventLog()
    proxy = BlackholeProxy(bare_cluster.port) if mode == "reset" else None
    informer = started(proxied_client(proxy, bare_cluster) if proxy else client, ns, log)
    stop = threading.Event()
    created: list[str] = []
    deleted: list[str] = []

    def writer() -> None:
        i = 0
        while not stop.is_set():
            name = f"w{i}"
            client.create(CONFIGMAPS, ns, configmap(name))
            created.append(f"{ns}/{name}")
            client.patch(CONFIGMAPS, ns, name, {"data": {"n": str(i)}})
            if i % 3 == 0:
                client.delete(CONFIGMAPS, ns, name)
                deleted.append(f"{ns}/{name}")
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        for i in range(8):
            time.sleep(0.15)
            if with_410 and i % 4 == 3:
                bare_cluster.faults.expire_next_watch()
            if proxy:
                before = informer.watch_restarts
                proxy.reset()
                wait_for(lambda: informer.watch_restarts > before, what="rewatch")  # noqa: B023
            else:
                bare_cluster.faults.drop_watches()
    finally:
        stop.set()
        thread.join(60)
    try:
        # The cache can equal the server before the last deleted object's events arrive
        # (neither holds it): a sentinel written after the writer stopped, once seen, says
        # every earlier event has been delivered (a watch delivers in order).
        sentinel = client.create(CONFIGMAPS, ns, configmap("zz-sentinel"))
        wait_for(lambda: bool(log.by_key.get(object_key(sentinel))), what="the sentinel's event")
        converges(client, ns, informer)
        assert len(created) > 10
        assert informer.watch_restarts >= 5
        for key in created:
            events = log.by_key[key]
            kinds = [k for k, _ in events]
            rvs = [int(rv) for k, rv in events if rv != "tombstone"]
            assert rvs == sorted(set(rvs)), f"{key}: duplicated or out of order {events}"
            if not with_410:
                expected = ["add", "update", "delete"] if key in deleted else ["add", "update"]
                assert kinds == expected, f"{key}: {events}"
            elif key in deleted:
                assert kinds == [] or (kinds[0] == "add" and kinds[-1] == "delete"), events
                assert kinds.count("add") <= 1 and kinds.count("delete") <= 1, events
            else:
                assert kinds.count("add") == 1 and "delete" not in kinds, f"{key}: {events}"
        if not with_410:
            assert informer.lists == 1, "resumed watches never needed a relist"
    finally:
        informer.stop()
        if proxy:
            proxy.close()


def test_a_dead_watch_connection_recovers_within_its_read_timeout(
    bare_cluster: Any,
) -> None:
    """Runs on both servers: the proxy forwards the real cluster's TLS untouched."""
    proxy = BlackholeProxy(bare_cluster.port)
    try:
        via_proxy = proxied_client(proxy, bare_cluster, backoff_base=0.5)
        direct = make_client(bare_cluster)
        ns = fresh_namespace(direct)
        informer = started(via_proxy, ns, watch_timeout_range=(120, 120), watch_read_timeout=2.0)
        try:
            watches = informer.watch_restarts
            assert proxy.blackhole() >= 1
            killed_at = time.monotonic()
            direct.create(CONFIGMAPS, ns, configmap("seen-despite-dead-conn"))
            wait_for(
                lambda: informer.store.get(f"{ns}/seen-despite-dead-conn") is not None,
                timeout=60,
                what="recovery from the dead stream",
            )
            assert informer.watch_restarts > watches
            # The server would only end this watch after 120 s; the 2 s read timeout (plus
            # generous slack for a loaded machine) is what brought the change in.
            assert time.monotonic() - killed_at < 60
        finally:
            informer.stop()
    finally:
        proxy.close()


def test_resync_redelivers_every_object_as_an_update(client: KubeClient) -> None:
    ns = fresh_namespace(client)
    client.create(CONFIGMAPS, ns, configmap("r1"))
    client.create(CONFIGMAPS, ns, configmap("r2"))
    resynced: set[str] = set()

    def on_update(old: Any, new: Any) -> None:
        if old is new:
            resynced.add(object_key(new))

    informer = Informer(
        client, CONFIGMAPS, namespace=ns, resync_period=0.2, watch_timeout_range=(20, 30)
    )
    informer.add_event_handler(on_update=on_update)
    informer.start()
    try:
        wait_for(lambda: resynced == {f"{ns}/r1", f"{ns}/r2"}, what="a resync")
    finally:
        informer.stop()


def test_a_handler_added_late_hears_about_existing_objects(client: KubeClient) -> None:
    ns = fresh_namespace(client)
    client.create(CONFIGMAPS, ns, configmap("early"))
    informer = started(client, ns)
    try:
        late = EventLog()
        informer.add_event_handler(late.on_add, late.on_update, late.on_delete)
        assert list(late.by_key) == [f"{ns}/early"]
    finally:
        informer.stop()


def test_label_and_namespace_scoping(client: KubeClient) -> None:
    ns = fresh_namespace(client)
    other = fresh_namespace(client)
    client.create(CONFIGMAPS, ns, configmap("mine", team="a"))
    client.create(CONFIGMAPS, ns, configmap("theirs", team="b"))
    client.create(CONFIGMAPS, other, configmap("elsewhere", team="a"))
    informer = started(client, ns, label_selector="team=a")
    try:
        assert informer.store.keys() == [f"{ns}/mine"]
        client.create(CONFIGMAPS, ns, configmap("mine2", team="a"))
        client.create(CONFIGMAPS, ns, configmap("theirs2", team="b"))
        wait_for(lambda: informer.store.get(f"{ns}/mine2") is not None)
        client.patch(CONFIGMAPS, ns, "mine", {"metadata": {"labels": {"team": "b"}}})
        wait_for(lambda: informer.store.get(f"{ns}/mine") is None, what="leaves the selector")
        assert sorted(informer.store.keys()) == [f"{ns}/mine2"]
    finally:
        informer.stop()


def test_factory_shares_informers_and_indexes(client: KubeClient) -> None:
    ns = fresh_namespace(client)
    other = fresh_namespace(client)
    client.create(CONFIGMAPS, ns, configmap("x1", job="j"))
    client.create(CONFIGMAPS, other, configmap("x2", job="j"))
    factory = InformerFactory(client, namespaces=[ns, other], watch_timeout_range=(20, 30))
    first = factory.informer(CONFIGMAPS, indexers={"ns": index_by_namespace})
    second = factory.informer(CONFIGMAPS, indexers={"job": index_by_label("job")})
    assert first is second
    assert factory.informer(CONFIGMAPS, label_selector="job=j") is not first
    factory.start()
    try:
        assert factory.wait_for_cache_sync(30)
        assert [o["metadata"]["name"] for o in first.store.by_index("job", f"{ns}/j")] == ["x1"]
        assert [o["metadata"]["name"] for o in first.store.by_index("ns", other)] == ["x2"]
        assert not any(k.startswith("default/") for k in list(first.store.keys())), "scoped"
    finally:
        factory.stop()

"""Store indexes and the informer's event semantics (replace/apply), without a server."""

from __future__ import annotations

from typing import Any, cast

import pytest

from ascendjob_controller.kube.client import PODS, KubeClient
from ascendjob_controller.kube.informer import (
    DeletedFinalStateUnknown,
    Informer,
    Store,
    index_by_controller_uid,
    index_by_label,
    index_by_namespace,
    object_key,
    strip_for_cache,
)


def pod(ns: str, name: str, rv: str = "1", job: str | None = None, owner: str | None = None) -> Any:
    meta: dict[str, Any] = {"namespace": ns, "name": name, "resourceVersion": rv}
    if job:
        meta["labels"] = {"job-name": job}
    if owner:
        meta["ownerReferences"] = [
            {"uid": "other", "controller": False},
            {"uid": owner, "controller": True},
        ]
    return {"metadata": meta}


def test_object_key() -> None:
    assert object_key(pod("ns", "a")) == "ns/a"
    assert object_key({"metadata": {"name": "node1"}}) == "node1"
    assert object_key(DeletedFinalStateUnknown("ns/x", {})) == "ns/x"


def test_index_functions() -> None:
    p = pod("ns", "a", job="j1", owner="uid-1")
    assert index_by_namespace(p) == ["ns"]
    assert index_by_controller_uid(p) == ["uid-1"]
    assert index_by_controller_uid(pod("ns", "b")) == []
    assert index_by_label("job-name")(p) == ["ns/j1"]
    assert index_by_label("job-name")(pod("ns", "c")) == []


def test_store_indexes_follow_updates_and_deletes() -> None:
    store = Store({"ns": index_by_namespace, "job": index_by_label("job-name")})
    store.put("a/p1", pod("a", "p1", job="j1"))
    store.put("a/p2", pod("a", "p2", job="j1"))
    store.put("b/p3", pod("b", "p3", job="j1"))
    assert {object_key(o) for o in store.by_index("job", "a/j1")} == {"a/p1", "a/p2"}
    store.put("a/p2", pod("a", "p2", rv="2", job="j2"))
    assert [object_key(o) for o in store.by_index("job", "a/j1")] == ["a/p1"]
    assert [object_key(o) for o in store.by_index("job", "a/j2")] == ["a/p2"]
    store.delete("a/p1")
    assert store.by_index("job", "a/j1") == []
    assert sorted(store.keys()) == ["a/p2", "b/p3"]
    assert len(store.by_index("ns", "b")) == 1
    with pytest.raises(KeyError):
        store.by_index("nope", "x")
    # an index added later covers existing objects
    store.add_indexers({"owner": index_by_controller_uid})
    store.put("b/p4", pod("b", "p4", owner="u"))
    assert [object_key(o) for o in store.by_index("owner", "u")] == ["b/p4"]


def test_strip_for_cache() -> None:
    obj = {
        "metadata": {
            "name": "a",
            "managedFields": [{"manager": "kubectl"}],
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{...}",
                "keep": "me",
            },
        }
    }
    strip_for_cache(obj)
    assert obj == {"metadata": {"name": "a", "annotations": {"keep": "me"}}}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def add(self, obj: Any) -> None:
        self.events.append(("add", object_key(obj)))

    def update(self, old: Any, new: Any) -> None:
        self.events.append(("update", (object_key(new), old["metadata"]["resourceVersion"])))

    def delete(self, obj: Any) -> None:
        kind = "tombstone" if isinstance(obj, DeletedFinalStateUnknown) else "delete"
        self.events.append((kind, object_key(obj)))


def make_informer(namespaces: list[str] | None = None) -> tuple[Informer, Recorder]:
    informer = Informer(cast(KubeClient, None), PODS, namespaces=namespaces)
    rec = Recorder()
    informer.add_event_handler(rec.add, rec.update, rec.delete)
    return informer, rec


def test_relist_emits_adds_updates_and_tombstones_but_nothing_for_unchanged() -> None:
    informer, rec = make_informer()
    informer._replace(None, [pod("a", "p1"), pod("a", "p2"), pod("b", "p3")])
    assert sorted(rec.events) == [("add", "a/p1"), ("add", "a/p2"), ("add", "b/p3")]
    rec.events.clear()
    informer._replace(None, [pod("a", "p1"), pod("a", "p2", rv="5"), pod("b", "p4")])
    assert sorted(rec.events) == [
        ("add", "b/p4"),
        ("tombstone", "b/p3"),
        ("update", ("a/p2", "1")),
    ]
    assert sorted(informer.store.keys()) == ["a/p1", "a/p2", "b/p4"]


def test_relist_of_one_namespace_leaves_the_others_alone() -> None:
    informer, rec = make_informer(["a", "b"])
    informer._replace("a", [pod("a", "p1")])
    informer._replace("b", [pod("b", "p2")])
    rec.events.clear()
    informer._replace("a", [])
    assert rec.events == [("tombstone", "a/p1")]
    assert informer.store.keys() == ["b/p2"]


def test_watch_events_are_deduplicated_by_resource_version() -> None:
    informer, rec = make_informer()
    informer._apply("ADDED", pod("a", "p1"))
    informer._apply("ADDED", pod("a", "p1"))  # replayed: same resourceVersion
    informer._apply("MODIFIED", pod("a", "p1", rv="2"))
    informer._apply("MODIFIED", pod("a", "p1", rv="2"))
    informer._apply("DELETED", pod("a", "p1", rv="3"))
    informer._apply("DELETED", pod("a", "p1", rv="3"))
    informer._apply("MODIFIED", pod("a", "p9", rv="4"))  # first seen as a modify: an add
    assert rec.events == [
        ("add", "a/p1"),
        ("update", ("a/p1", "1")),
        ("delete", "a/p1"),
        ("add", "a/p9"),
    ]


def test_a_failing_handler_does_not_block_the_others() -> None:
    informer, rec = make_informer()

    def boom(obj: Any) -> None:
        raise RuntimeError("handler bug")

    informer._handlers.insert(0, informer._handlers[0].__class__(boom, None, None))
    informer._apply("ADDED", pod("a", "p1"))
    assert rec.events == [("add", "a/p1")]

"""Store: one resourceVersion counter, bounded watch history, continue tokens, indexes."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.localcluster.errors import ApiError
from ascendjob_controller.localcluster.store import Store, decode_continue, encode_continue


def pod(name: str, ns: str = "default", **meta: Any) -> dict[str, Any]:
    return {"kind": "Pod", "metadata": {"name": name, "namespace": ns, **meta}}


def test_every_write_gets_the_next_cluster_wide_revision() -> None:
    store = Store()
    a = store.write("pods", pod("a"), "ADDED")
    b = store.write("services", pod("b"), "ADDED")
    c = store.write("pods", pod("a"), "MODIFIED")
    removed = store.remove("pods", "default", "a")
    assert [e.obj["metadata"]["resourceVersion"] for e in (a, b, c)] == ["1", "2", "3"]
    assert removed is not None and removed.obj["metadata"]["resourceVersion"] == "4"
    assert store.resource_version == 4
    assert store.get("pods", "default", "a") is None


def test_entry_json_matches_object_and_copies_are_private() -> None:
    store = Store()
    entry = store.write("pods", pod("a", labels={"x": "1"}), "ADDED")
    copy = entry.copy()
    copy["metadata"]["labels"]["x"] = "2"
    assert entry.obj["metadata"]["labels"]["x"] == "1"
    assert b'"resourceVersion":"1"' in entry.raw


def test_watch_position_replays_events_after_a_revision() -> None:
    store = Store()
    for i in range(5):
        store.write("pods", pod(f"p{i}"), "ADDED")
    events, _, rv = store.wait_events(store.position_after(2), timeout=0)
    assert [e.rv for e in events] == [3, 4, 5]
    assert rv == 5


def test_history_window_compacts_and_old_revisions_get_410() -> None:
    store = Store(window=10)
    for i in range(30):
        store.write("pods", pod(f"p{i}"), "ADDED")
    assert store.compacted_rv > 0
    with pytest.raises(ApiError) as err:
        store.position_after(1)
    assert err.value.code == 410
    assert err.value.reason == "Expired"
    assert err.value.message == f"too old resource version: 1 ({store.compacted_rv})"
    # the newest revisions are still watchable
    events, _, _ = store.wait_events(store.position_after(25), timeout=0)
    assert [e.rv for e in events] == [26, 27, 28, 29, 30]


def test_forced_compaction_expires_everything_but_now() -> None:
    store = Store()
    for i in range(3):
        store.write("pods", pod(f"p{i}"), "ADDED")
    store.compact()
    with pytest.raises(ApiError):
        store.position_after(2)
    assert store.position_after(3) == store.head()


def test_a_watcher_left_behind_the_window_is_told_410() -> None:
    store = Store(window=5)
    start = store.head()
    for i in range(20):
        store.write("pods", pod(f"p{i}"), "ADDED")
    with pytest.raises(ApiError) as err:
        store.wait_events(start, timeout=0)
    assert err.value.code == 410


def test_continue_token_round_trips_and_rejects_garbage() -> None:
    token = encode_continue(42, "default", "pod-7")
    assert decode_continue(token) == (42, ("default", "pod-7"))
    with pytest.raises(ApiError) as err:
        decode_continue("not-a-token")
    assert err.value.code == 400


def test_pages_walk_sorted_keys_without_loss_or_duplicates() -> None:
    store = Store()
    for i in range(25):
        store.write("pods", pod(f"p{i:02d}", ns="a" if i % 2 else "b"), "ADDED")
    seen: list[str] = []
    after = None
    while True:
        entries, _, more, remaining = store.page("pods", None, after, 10, None)
        seen.extend(e.obj["metadata"]["name"] for e in entries)
        if not more:
            assert remaining is None
            break
        assert remaining == 25 - len(seen)
        last = entries[-1].obj["metadata"]
        after = (last["namespace"], last["name"])
    assert sorted(seen) == sorted(f"p{i:02d}" for i in range(25))
    assert len(seen) == len(set(seen))


def test_page_in_one_namespace_with_a_predicate() -> None:
    store = Store()
    for i in range(10):
        store.write("pods", pod(f"p{i}", ns="a" if i < 6 else "b", labels={"i": str(i)}), "ADDED")
    entries, _, more, _ = store.page(
        "pods", "a", None, 2, lambda o: int(o["metadata"]["labels"]["i"]) % 2 == 0
    )
    assert [e.obj["metadata"]["name"] for e in entries] == ["p0", "p2"]
    assert more  # p4 still matches
    entries, _, more, _ = store.page(
        "pods", "a", ("a", "p2"), 2, lambda o: int(o["metadata"]["labels"]["i"]) % 2 == 0
    )
    assert [e.obj["metadata"]["name"] for e in entries] == ["p4"]
    assert not more


def test_owner_index_follows_writes_and_removals() -> None:
    store = Store()
    ref = [{"uid": "owner-1", "kind": "AscendJob", "name": "j", "apiVersion": "v1"}]
    store.write("pods", pod("a", uid="u-a", ownerReferences=ref), "ADDED")
    store.write("pods", pod("b", uid="u-b", ownerReferences=ref), "ADDED")
    assert store.dependents("owner-1") == [("pods", "default", "a"), ("pods", "default", "b")]
    assert store.by_uid("u-a") == ("pods", "default", "a")
    store.write("pods", pod("a", uid="u-a"), "MODIFIED")  # owner reference dropped
    assert store.dependents("owner-1") == [("pods", "default", "b")]
    store.remove("pods", "default", "b")
    assert store.dependents("owner-1") == []
    assert store.by_uid("u-b") is None


def test_listeners_see_each_event_with_its_previous_object() -> None:
    store = Store()
    seen: list[tuple[str, Any]] = []
    store.add_listener(lambda ev: seen.append((ev.type, ev.prev and ev.prev["metadata"]["x"])))
    store.write("pods", pod("a", x=1), "ADDED")
    store.write("pods", pod("a", x=2), "MODIFIED")
    store.remove("pods", "default", "a")
    assert seen == [("ADDED", None), ("MODIFIED", 1), ("DELETED", 2)]

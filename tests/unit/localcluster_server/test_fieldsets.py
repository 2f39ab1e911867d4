"""Field sets, comparisons and fieldsV1 as structured-merge-diff computes them."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendjob_controller.localcluster import fieldsets, managedfields
from ascendjob_controller.localcluster.managedfields import Write, record_update

POD = fieldsets.builtin_schema("Pod")


def test_compare_adds_new_objects_with_their_own_path() -> None:
    diff = fieldsets.compare({"metadata": {}}, {"metadata": {}, "data": {"a": "1"}}, POD)
    assert diff.added == {(("f", "data"),), (("f", "data"), ("f", "a"))}
    assert not diff.modified and not diff.removed


def test_compare_keyed_lists_and_null_typed_fields() -> None:
    old = {"spec": {"containers": None}}
    new = {"spec": {"containers": [{"name": "c", "image": "i"}]}}
    diff = fieldsets.compare(old, new, POD)
    key = ("k", '{"name":"c"}')
    assert (("f", "spec"), ("f", "containers")) not in diff.added  # existed, as null
    assert (("f", "spec"), ("f", "containers"), key) in diff.added
    assert (("f", "spec"), ("f", "containers"), key, ("f", "image")) in diff.added


@pytest.mark.parametrize(("old", "new"), [(1, 1.0), (1, True), (0, False), ("1", 1)])
def test_compare_counts_a_change_of_json_type_as_modified(old: Any, new: Any) -> None:
    """Python's == says 1 == 1.0 == True; JSON, and so managedFields, tell them apart."""
    diff = fieldsets.compare({"data": {"a": old}}, {"data": {"a": new}}, POD)
    assert diff.modified == {(("f", "data"), ("f", "a"))}
    assert fieldsets.compare({"data": {"a": old}}, {"data": {"a": old}}, POD).modified == set()


def test_field_set_reaches_structs_through_children() -> None:
    fields = fieldsets.field_set({"metadata": {"labels": {"a": "b"}}, "data": {"k": "v"}}, POD)
    assert fieldsets.to_v1(fields) == {
        "f:data": {"f:k": {}},
        "f:metadata": {"f:labels": {"f:a": {}}},
    }


def test_fields_v1_round_trips_members_with_children() -> None:
    tree = {"f:data": {".": {}, "f:a": {}}, "f:spec": {"f:x": {}}}
    assert fieldsets.to_v1(fieldsets.from_v1(tree)) == tree


def test_update_moves_changed_fields_and_keeps_untouched_entries() -> None:
    first = record_update(
        None, {"kind": "ConfigMap", "metadata": {}, "data": {"a": "1"}}, POD, Write("m1", "v1")
    )
    old = {"kind": "ConfigMap", "metadata": {"managedFields": first}, "data": {"a": "1"}}
    new = {"kind": "ConfigMap", "metadata": {"managedFields": first}, "data": {"a": "2"}}
    entries = record_update(old, new, POD, Write("m2", "v1"))
    assert [(e["manager"], e["fieldsV1"]) for e in entries] == [
        ("m1", {"f:data": {}}),
        ("m2", {"f:data": {"f:a": {}}}),
    ]
    assert (
        record_update(
            new | {"metadata": {"managedFields": entries}},
            new | {"metadata": {"managedFields": entries}},
            POD,
            Write("m3", "v1"),
        )
        == entries
    )


def test_conflict_paths_print_as_upstream() -> None:
    path = (("f", "spec"), ("f", "ports"), ("k", '{"port":80,"protocol":"TCP"}'), ("f", "name"))
    assert fieldsets.path_string(path) == '.spec.ports[port=80,protocol="TCP"].name'


@pytest.mark.parametrize(
    ("kind", "obj"),
    [
        (
            "Pod",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "labels": {"a": "b"}},
                "spec": {
                    "containers": [
                        {
                            "name": "c",
                            "image": "i",
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        }
                    ],
                    "securityContext": {},
                },
                "status": {"phase": "Pending"},
            },
        ),
        (
            "Service",
            {
                "apiVersion": "v1",
                "kind": "Service",
                "metadata": {"name": "s"},
                "spec": {"selector": {"a": "b"}, "ports": [{"port": 80, "protocol": "TCP"}]},
            },
        ),
        (
            "Event",
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "e"},
                "involvedObject": {"kind": "Pod"},
                "source": {"component": "c"},
                "firstTimestamp": "2026-01-01T00:00:00Z",
                "eventTime": None,
                "reportingComponent": "",
            },
        ),
        (
            "ConfigMap",
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "c", "finalizers": ["a/b"]},
                "data": {"k": "v"},
                "immutable": True,
            },
        ),
    ],
)
def test_the_create_fast_path_equals_the_comparison(kind: str, obj: dict) -> None:  # type: ignore[type-arg]
    schema = fieldsets.builtin_schema(kind)
    write = Write("m", "v1", "", kind in ("Pod", "Service"))
    (fast,) = record_update(None, obj, schema, write)
    diff = fieldsets.compare(managedfields._empty_like(obj), managedfields._bare(obj), schema)
    slow = managedfields._filter(diff.added | diff.modified, write) - managedfields._STRIPPED
    assert fast["fieldsV1"] == fieldsets.to_v1(slow)


# fieldsV1 trees as a server may hold them, odd members included ("." markers, keys without
# a colon, names with colons, non-object leaves), and paths that may or may not be in them.
_names = st.sampled_from(["a", "b", "x:y", "", '{"name":"c"}'])
_keys = st.builds(lambda k, n: f"{k}:{n}", st.sampled_from(["f", "k", "v", "i"]), _names)
_trees = st.recursive(
    st.just({}) | st.just({".": {}}) | st.sampled_from(["leaf", 1, None, []]),
    lambda inner: st.dictionaries(_keys | st.sampled_from([".", "nocolon"]), inner, max_size=4),
    max_leaves=15,
)
_paths = st.lists(st.tuples(st.sampled_from(["f", "k", "v", "i"]), _names), max_size=4).map(tuple)


@settings(deadline=None, max_examples=300)
@given(_trees, st.lists(_paths, max_size=6))
def test_in_v1_and_has_v1_agree_with_expanding_the_tree(tree: Any, paths: list[Any]) -> None:
    expanded = fieldsets.from_v1(tree)
    assert fieldsets.has_v1(tree) is bool(expanded)
    for fp in [*paths, *list(expanded)[:6]]:
        assert fieldsets.in_v1(tree, fp) is (fp in expanded)


_universe = [
    (("f", "status"),),
    (("f", "status"), ("f", "phase")),
    (("f", "status"), ("f", "podIP")),
    (("f", "spec"), ("f", "nodeName")),
    (("f", "metadata"), ("f", "labels"), ("f", "a")),
]
_field_sets = st.sets(st.sampled_from(_universe))
_managers = st.sampled_from(["kubelet", "controller"])


@settings(deadline=None, max_examples=300)
@given(st.lists(st.tuples(_managers, _field_sets), max_size=4), _field_sets, _field_sets)
def test_the_writers_kept_fields_are_what_dropping_then_reading_back_gives(
    held: list[Any], changed: set[Any], removed: set[Any]
) -> None:
    removed = removed - changed  # a field is changed or removed, never both
    entries = [
        {"manager": m, "operation": "Update", "apiVersion": "v1", "fieldsV1": fieldsets.to_v1(f)}
        for m, f in held
    ]
    key = ("kubelet", "Update", "v1", "")
    after = managedfields._without(entries, changed | removed)
    mine = next((e for e in after if managedfields._key(e) == key), None)
    expected = changed | (fieldsets.from_v1(mine["fieldsV1"]) if mine else set())
    writers = [e for e in entries if managedfields._key(e) == key]
    assert changed | managedfields._kept_fields(writers, changed, removed) == expected


def _without_by_expanding(entries: list[Any], drop: set[Any]) -> list[Any]:
    """The plain definition: expand every entry, take `drop` out, rebuild; drop the empty."""
    out = []
    for entry in entries:
        fields = fieldsets.from_v1(entry.get("fieldsV1"))
        left = fields - drop
        if left:
            out.append(entry if left == fields else {**entry, "fieldsV1": fieldsets.to_v1(left)})
    return out


@settings(deadline=None, max_examples=300)
@given(st.lists(st.one_of(_field_sets.map(fieldsets.to_v1), _trees), max_size=4), _field_sets)
def test_without_is_the_plain_definition(trees: list[Any], drop: set[Any]) -> None:
    entries = [{"manager": f"m{i}", "fieldsV1": tree} for i, tree in enumerate(trees)]
    assert managedfields._without(entries, drop) == _without_by_expanding(entries, drop)


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-2, 2), st.just(1.0), st.text("ab", max_size=2)
)
_pod_like = st.recursive(
    _scalars,
    lambda inner: (
        st.dictionaries(st.sampled_from(["name", "image", "a", "b"]), inner, max_size=3)
        | st.lists(inner, max_size=3)
    ),
    max_leaves=12,
)


_containers = st.lists(
    st.fixed_dictionaries({"name": st.sampled_from(["c", "d"])}, optional={"image": _pod_like}),
    max_size=3,
)
# Pod-shaped documents: keyed lists (containers by name), maps, atomic lists, scalars.
_pods = st.fixed_dictionaries(
    {},
    optional={
        "metadata": st.fixed_dictionaries(
            {}, optional={"labels": st.dictionaries(st.sampled_from("ab"), _scalars)}
        ),
        "spec": st.fixed_dictionaries(
            {}, optional={"containers": _containers | st.none(), "nodeName": _scalars}
        ),
        "status": _pod_like,
    },
)


@given(_pods, _pods)
@settings(max_examples=300, deadline=None)
def test_compare_scalar_shortcut_matches_the_general_walk(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    """The map walk compares two scalars in place; recursing into each, as it did before,
    gives the same added, modified and removed sets."""
    fast = fieldsets.compare(old, new, POD)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fieldsets, "_scalar", lambda value: False)
        slow = fieldsets.compare(old, new, POD)
    assert (fast.added, fast.modified, fast.removed) == (slow.added, slow.modified, slow.removed)


def test_the_empty_objects_are_shared_and_never_changed_by_the_writes_that_read_them() -> None:
    """`_empty_like` hands out the templates themselves (no copy): every way a write reads
    one (a create, an update from nothing, an apply) must leave it as it was."""
    import copy

    from ascendjob_controller.localcluster import builtin
    from ascendjob_controller.localcluster.registry import Registry
    from ascendjob_controller.localcluster.store import Store
    from ascendjob_controller.localcluster.verbs import Api

    before = copy.deepcopy(managedfields.EMPTY_OBJECTS)
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}}
    assert managedfields._empty_like(pod) is managedfields.EMPTY_OBJECTS[("Pod", "")]
    api = Api(Store(), Registry())
    api.create(builtin.NAMESPACES, "", {"metadata": {"name": "default"}})
    api.create(
        builtin.PODS,
        "default",
        {**pod, "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"x": 1}},
    )
    event = {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
        "reason": "R",
        "source": {"component": "c"},
        "reportingComponent": "c",
    }
    api.create(builtin.EVENTS, "default", event)
    record_update(None, {**pod, "spec": {"nodeName": "n"}}, POD, Write("m", "v1", "", True))
    managedfields.record_apply(
        None,
        {**pod, "metadata": {"name": "p", "labels": {"a": "b"}}},
        {**pod, "metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"containers": None}},
        POD,
        Write("m", "v1", "", True),
        force=False,
    )
    assert before == managedfields.EMPTY_OBJECTS

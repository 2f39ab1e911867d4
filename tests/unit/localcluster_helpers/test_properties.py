"""Property tests: algebraic laws the helpers must keep for any input, not just the examples."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ascendjob_controller.localcluster.patch import (
    json_merge_patch,
    json_patch,
    strategic_merge_patch,
)
from ascendjob_controller.localcluster.schema import prune
from ascendjob_controller.localcluster.selectors import parse_label_selector

KEYS = st.sampled_from(["a", "b", "c", "d"])
SCALARS = st.one_of(st.integers(-5, 5), st.text("xyz", max_size=3), st.booleans())
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)),
    max_leaves=10,
)
MAPS_NO_LISTS = st.recursive(
    SCALARS, lambda inner: st.dictionaries(KEYS, inner, max_size=3), max_leaves=10
)
PATCH_MAPS = st.recursive(
    st.one_of(SCALARS, st.none()),
    lambda inner: st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=10,
)
SETTINGS = settings(max_examples=200, deadline=None)


@SETTINGS
@given(JSON, st.dictionaries(KEYS, st.one_of(JSON, st.none()), max_size=4))
def test_merge_patch_is_idempotent_and_pure(target: Any, patch: dict[str, Any]) -> None:
    t0, p0 = copy.deepcopy(target), copy.deepcopy(patch)
    once = json_merge_patch(target, patch)
    assert json_merge_patch(once, patch) == once
    assert target == t0 and patch == p0


@SETTINGS
@given(
    st.dictionaries(KEYS, MAPS_NO_LISTS, max_size=4), st.dictionaries(KEYS, PATCH_MAPS, max_size=4)
)
def test_strategic_patch_without_lists_is_a_merge_patch(
    target: dict[str, Any], patch: dict[str, Any]
) -> None:
    assert strategic_merge_patch(target, patch, "ConfigMap") == json_merge_patch(target, patch)


@SETTINGS
@given(st.dictionaries(KEYS, JSON, max_size=4), st.text("qrs", min_size=1, max_size=3), JSON)
def test_json_patch_add_then_remove_restores(doc: dict[str, Any], key: str, value: Any) -> None:
    out = json_patch(doc, [{"op": "add", "path": f"/{key}", "value": value}])
    assert out[key] == value
    assert json_patch(out, [{"op": "remove", "path": f"/{key}"}]) == doc


LABELS = st.dictionaries(KEYS, st.sampled_from(["x", "y", "z"]), max_size=4)
VALUES = st.sampled_from(["x", "y", "z"])


@SETTINGS
@given(LABELS, KEYS, VALUES, st.lists(VALUES, min_size=1, max_size=3))
def test_label_selector_operators_agree_with_their_definitions(
    labels: dict[str, str], key: str, value: str, values: list[str]
) -> None:
    assert parse_label_selector(f"{key}={value}").matches(labels) == (labels.get(key) == value)
    assert parse_label_selector(f"{key}!={value}").matches(labels) == (labels.get(key) != value)
    inside = parse_label_selector(f"{key} in ({','.join(values)})").matches(labels)
    outside = parse_label_selector(f"{key} notin ({','.join(values)})").matches(labels)
    assert inside == (labels.get(key) in values)
    assert outside == (not inside)
    assert parse_label_selector(key).matches(labels) != parse_label_selector(f"!{key}").matches(
        labels
    )


SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "a": {"type": "object", "properties": {"b": {"type": "integer"}}},
                "c": {"type": "array", "items": {"type": "object", "properties": {"d": {}}}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
        }
    },
}


@SETTINGS
@given(st.dictionaries(st.sampled_from(["a", "c", "free", "junk"]), JSON, max_size=4))
def test_prune_is_idempotent(spec: dict[str, Any]) -> None:
    obj = {"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n"}, "spec": spec}
    prune(SCHEMA, obj)
    after = copy.deepcopy(obj)
    assert prune(SCHEMA, obj) == []
    assert obj == after
    assert "junk" not in obj["spec"]

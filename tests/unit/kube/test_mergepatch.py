"""merge_patch(old, new) is the smallest RFC 7386 patch from old to new."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendjob_controller.kube.mergepatch import apply_merge_patch, merge_patch

# Values without nulls: the API stores none in status, and null means "delete" in a patch.
VALUES = st.recursive(
    st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=15,
)
OBJECTS = st.dictionaries(st.text(max_size=3), VALUES, max_size=4)


@given(OBJECTS, OBJECTS)
def test_applying_the_patch_gives_the_new_document(
    old: dict[str, Any], new: dict[str, Any]
) -> None:
    assert apply_merge_patch(old, merge_patch(old, new)) == new


@given(OBJECTS)
def test_no_change_is_an_empty_patch(doc: dict[str, Any]) -> None:
    assert merge_patch(doc, doc) == {}


@pytest.mark.parametrize(
    ("old", "new", "patch"),
    [
        # only the changed count of one replica type, not the whole status
        (
            {
                "replicaStatuses": {"Master": {"active": 1}, "Worker": {"active": 2}},
                "restartCount": 0,
            },
            {
                "replicaStatuses": {
                    "Master": {"active": 1},
                    "Worker": {"active": 1, "succeeded": 1},
                },
                "restartCount": 0,
            },
            {"replicaStatuses": {"Worker": {"active": 1, "succeeded": 1}}},
        ),
        # lists go whole (a merge patch replaces arrays)
        (
            {"conditions": [{"type": "Created"}]},
            {"conditions": [{"type": "Created"}, {"type": "Running"}]},
            {"conditions": [{"type": "Created"}, {"type": "Running"}]},
        ),
        # a removed key is a null
        ({"startTime": "t", "completionTime": "u"}, {"startTime": "t"}, {"completionTime": None}),
        # a type change replaces
        ({"a": {"b": 1}}, {"a": 3}, {"a": 3}),
    ],
)
def test_patches(old: dict[str, Any], new: dict[str, Any], patch: dict[str, Any]) -> None:
    assert merge_patch(old, new) == patch

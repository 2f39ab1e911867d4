"""json_copy gives what copy.deepcopy gives for JSON documents, and shares nothing mutable."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ascendjob_controller.job.types import json_copy

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))
_documents = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=30,
)


def _containers(value: Any) -> list[Any]:
    """Every dict and list inside `value`, itself included."""
    found = [value] if isinstance(value, dict | list) else []
    children = (
        value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    )
    for child in children:
        found.extend(_containers(child))
    return found


@given(_documents)
def test_equal_to_deepcopy_and_independent(document: Any) -> None:
    copied = json_copy(document)
    assert repr(copied) == repr(copy.deepcopy(document))  # repr: NaN != NaN, but prints alike
    original_ids = {id(c) for c in _containers(document)}
    assert not original_ids & {id(c) for c in _containers(copied)}


def test_a_change_to_the_copy_leaves_the_original_alone() -> None:
    status = {"conditions": [{"type": "Running", "status": "True"}], "replicaStatuses": {}}
    copied = json_copy(status)
    copied["conditions"][0]["status"] = "False"
    copied["replicaStatuses"]["Worker"] = {"active": 1}
    assert status == {"conditions": [{"type": "Running", "status": "True"}], "replicaStatuses": {}}

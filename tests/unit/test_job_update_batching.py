"""Which job updates may wait for the batch: those that leave the spec and the deletion alone.

The Kubernetes Job controller batches a Job update whose metadata.generation did not move
(syncJobBatchPeriod) and syncs a spec change at once; ours does the same, and treats a new
deletionTimestamp as a change too (a server that keeps no generation bumps none for it).
"""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.controller import _spec_unchanged


def job(generation: Any = 1, deleting: str | None = None, **meta: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "j", "resourceVersion": "7", **meta}
    if generation is not None:
        metadata["generation"] = generation
    if deleting is not None:
        metadata["deletionTimestamp"] = deleting
    return {"metadata": metadata, "spec": {}, "status": {}}


DELETED_AT = "2026-12-07T00:00:00Z"


@pytest.mark.parametrize(
    ("old", "new", "can_wait"),
    [
        (job(1), job(1, resourceVersion="8"), True),  # our status write's echo
        (job(2), job(2, labels={"a": "b"}), True),  # labels, annotations: same generation
        (job(1), job(2), False),  # a spec change
        (job(1), job(1, deleting=DELETED_AT), False),  # deletion started
        (job(2, deleting=DELETED_AT), job(2, deleting=DELETED_AT), True),  # a finalizer's update
        (job(None), job(None), False),  # no generation kept: cannot tell, so at once
        (job(1), job(None), False),
        ({}, {}, False),  # shapes a stored object should not have never raise
        ({"metadata": None}, {"metadata": None}, False),
    ],
)
def test_what_may_wait(old: dict[str, Any], new: dict[str, Any], can_wait: bool) -> None:
    assert _spec_unchanged(old, new) is can_wait

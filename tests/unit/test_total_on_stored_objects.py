"""Every function that reads a cached object outside `plan()` is total (issue: one stored
spec with non-map labels crash-looped the reconciler in `_metric_labels`).

A real API server rejects most of these shapes, but an older server, a conversion webhook or
the local cluster's own bugs could store them; none may raise.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ascendjob_controller.job.ranktable_targets import targets_of
from ascendjob_controller.job.types import controller_ref
from ascendjob_controller.kube.informer import object_key
from ascendjob_controller.logging import job_fields
from ascendjob_controller.reconciler import JobReconciler, index_by_job, owning_job_key

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
METADATA_KEYS = st.sampled_from(
    ["namespace", "name", "uid", "labels", "annotations", "ownerReferences"]
)
METADATA = st.dictionaries(METADATA_KEYS, JSON, max_size=6)
OBJECTS = st.fixed_dictionaries({}, optional={"metadata": METADATA | JSON, "spec": JSON})

READERS = (
    owning_job_key,
    JobReconciler._metric_labels,
    job_fields,
    index_by_job,
    controller_ref,
    object_key,
    targets_of,
)


@settings(max_examples=400, deadline=None)
@given(OBJECTS)
def test_readers_never_raise(obj: dict[str, Any]) -> None:
    for read in READERS:
        read(obj)


@settings(max_examples=200, deadline=None)
@given(OBJECTS)
def test_metric_labels_are_always_strings(obj: dict[str, Any]) -> None:
    labels = JobReconciler._metric_labels(obj)
    assert set(labels) == {"namespace", "framework"}
    assert all(isinstance(v, str) for v in labels.values())


def test_the_crash_loop_of_the_issue() -> None:
    """labels as a string: before, `_metric_labels` raised AttributeError on every reconcile."""
    job = {"metadata": {"namespace": "ns", "name": "j", "labels": "framework=pytorch"}}
    assert JobReconciler._metric_labels(job) == {"namespace": "ns", "framework": ""}
    assert owning_job_key({"metadata": {"namespace": "ns", "labels": "x"}}) is None
    assert index_by_job({"metadata": {"namespace": "ns", "labels": ["job-name"]}}) == []
    assert job_fields({"metadata": "oops"}) == {}
    child = {"metadata": {"namespace": "ns", "ownerReferences": "AscendJob/j"}}
    assert controller_ref(child) is None and owning_job_key(child) is None

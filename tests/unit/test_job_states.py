"""`ascendjob_jobs{state}`: counts move by one per change and stay exact through deletes."""

from __future__ import annotations

from ascendjob_controller import metrics
from ascendjob_controller.reconciler import ALL_STATES, JobStates


def gauge() -> dict[str, float]:
    return {
        s: metrics.REGISTRY.get_sample_value("ascendjob_jobs", {"state": s}) or 0.0
        for s in ALL_STATES
    }


def test_counts_follow_each_change_and_deletion() -> None:
    states = JobStates.new()
    steps = [
        ("a", "Created", {"Created": 1}),
        ("b", "Created", {"Created": 2}),
        ("a", "Running", {"Created": 1, "Running": 1}),
        ("a", "Running", {"Created": 1, "Running": 1}),  # a no-op reconcile changes nothing
        ("b", "Failed", {"Running": 1, "Failed": 1}),
        ("a", None, {"Failed": 1}),
        ("a", None, {"Failed": 1}),  # deleting twice is harmless
        ("c", None, {"Failed": 1}),  # so is deleting an unknown job
        ("b", None, {}),
    ]
    previous: dict[str, str] = {}
    for key, state, expected in steps:
        states.set(key, state)
        assert states.counts() == expected, (key, state)
        # The gauge is the process's (other controllers in this test run share it): the
        # states this change touched must read exactly our counts.
        touched = {s for s in (previous.get(key), state) if s}
        shown = gauge()
        assert {s: shown[s] for s in touched} == {s: float(expected.get(s, 0)) for s in touched}
        if state is None:
            previous.pop(key, None)
        else:
            previous[key] = state

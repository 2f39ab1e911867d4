"""`ascendjob_job_state_start_time_seconds`: one series per unfinished job, from its status."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from ascendjob_controller import metrics
from ascendjob_controller.reconciler import JobStateStarts

NAME = "ascendjob_job_state_start_time_seconds"


def status(*conditions: tuple[str, str, str]) -> dict[str, Any]:
    return {
        "conditions": [
            {"type": t, "status": "True", "reason": r, "lastTransitionTime": at}
            for t, r, at in conditions
        ]
    }


def series(namespace: str, name: str) -> dict[tuple[str, str], float]:
    return {
        (s.labels["state"], s.labels["reason"]): s.value
        for family in metrics.REGISTRY.collect()
        if family.name == NAME
        for s in family.samples
        if s.labels["namespace"] == namespace and s.labels["name"] == name
    }


def ts(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp()


def test_one_series_follows_the_last_condition() -> None:
    starts = JobStateStarts()
    t0, t1 = "2026-01-02T03:04:05Z", "2026-01-02T04:00:00Z"
    starts.set("ns/a", status(("Created", "JobCreated", t0)))
    assert series("ns", "a") == {("Created", "JobCreated"): ts(t0)}
    starts.set("ns/a", status(("Created", "PodGroupPending", t0)))  # reason moves, time kept
    assert series("ns", "a") == {("Created", "PodGroupPending"): ts(t0)}
    starts.set(
        "ns/a", status(("Created", "PodGroupPending", t0), ("Restarting", "JobRestarting", t1))
    )
    assert series("ns", "a") == {("Restarting", "JobRestarting"): ts(t1)}
    starts.set("ns/a", status(("Succeeded", "JobSucceeded", t1)))  # finished: no series
    assert series("ns", "a") == {}
    starts.set("ns/b", status(("Running", "JobRunning", t1)))
    starts.set("ns/b", None)  # deleted
    assert series("ns", "b") == {}


def test_malformed_status_gives_no_series_and_no_error() -> None:
    starts = JobStateStarts()
    for bad in (
        {"conditions": "x"},
        {"conditions": [None]},
        {"conditions": [{"type": 1}]},
        status(("Running", "JobRunning", "not a time")),
        [],
        "x",
    ):
        starts.set("ns/m", bad)
        assert series("ns", "m") == {}

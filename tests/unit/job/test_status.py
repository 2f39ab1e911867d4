"""Every row of the state machine and the condition rules (job/status.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from ascendjob_controller.job.restart import RestartLedger
from ascendjob_controller.job.status import (
    Observation,
    Verdict,
    apply_verdict,
    current_state,
    decide,
    next_status,
    replica_statuses,
    same_status,
    set_condition,
)
from ascendjob_controller.job.types import format_time, parse_job

from .factories import at, job, set_phase

K = "ns1/job1"


def status_in(state: str, reason: str = "R", message: str = "M") -> dict[str, Any]:
    conds = [{"type": "Created", "status": "True", "reason": "JobCreated", "message": "c"}]
    if state != "Created":
        conds.append({"type": state, "status": "True", "reason": reason, "message": message})
    return {"conditions": conds}


ROWS = [
    # (previous, observation fields, expected state, expected reason)
    (None, {"invalid": "InvalidSpecs: x"}, "Failed", "JobValidFailed"),
    ("Running", {"deadline_exceeded": "d", "failure": "f"}, "Failed", "DeadlineExceeded"),
    ("Running", {"backoff_exceeded": "b", "failure": "f"}, "Failed", "BackoffLimitExceeded"),
    ("Restarting", {"failure": "f", "restarting": "r"}, "Failed", "JobFailed"),
    ("Running", {"desired": 2, "succeeded": 2}, "Succeeded", "JobSucceeded"),
    ("Running", {"desired": 2, "running": 1, "restarting": "r"}, "Restarting", "JobRestarting"),
    (None, {"desired": 2, "running": 2}, "Running", "JobRunning"),
    ("Created", {"desired": 2, "running": 1, "succeeded": 1}, "Running", "JobRunning"),
    ("Restarting", {"desired": 2, "running": 2}, "Running", "JobRunning"),
    ("Running", {"desired": 2, "running": 1}, "Running", "R"),
    ("Restarting", {"desired": 2, "running": 1}, "Restarting", "R"),
    (None, {"desired": 2, "podgroup_pending": "pg"}, "Created", "PodGroupPending"),
    (None, {"desired": 2, "running": 1}, "Created", "JobCreated"),
    (None, {"desired": 0}, "Created", "JobCreated"),
    ("Succeeded", {"failure": "f", "deadline_exceeded": "d"}, "Succeeded", "R"),
    ("Failed", {"desired": 2, "running": 2}, "Failed", "R"),
]


@pytest.mark.parametrize(("previous", "fields", "state", "reason"), ROWS)
def test_state_machine_rows(
    previous: str | None, fields: dict[str, Any], state: str, reason: str
) -> None:
    status = status_in(previous) if previous else None
    verdict = decide(previous, Observation(job_key=K, **fields), status)
    assert (verdict.state, verdict.reason) == (state, reason)


def conds(status: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["type"], c["status"]) for c in status["conditions"]]


def step(old: dict[str, Any] | None, verdict: Verdict, now: datetime) -> dict[str, Any]:
    return next_status(old, verdict, job_key=K, now=now, replicas={}, ledger=RestartLedger())


RUN = Verdict("Running", "JobRunning", "running")
RESTART = Verdict("Restarting", "JobRestarting", "restarting")


def test_lifecycle_conditions_order_and_times() -> None:
    s1 = step(None, Verdict("Created", "JobCreated", "created"), at(0))
    assert conds(s1) == [("Created", "True")]
    assert s1["startTime"] == format_time(at(0))
    s2 = step(s1, RUN, at(10))
    assert conds(s2) == [("Created", "True"), ("Running", "True")]
    s3 = step(s2, RESTART, at(20))
    assert conds(s3) == [("Created", "True"), ("Running", "False"), ("Restarting", "True")]
    assert current_state(s3) == "Restarting"
    s4 = step(s3, RUN, at(30))
    assert conds(s4) == [("Created", "True"), ("Restarting", "False"), ("Running", "True")]
    assert current_state(s4) == "Running"
    s5 = step(s4, Verdict("Succeeded", "JobSucceeded", "done"), at(40))
    assert conds(s5) == [
        ("Created", "True"),
        ("Restarting", "False"),
        ("Running", "False"),
        ("Succeeded", "True"),
    ]
    assert s5["completionTime"] == format_time(at(40))
    assert s5["startTime"] == format_time(at(0))
    # Created never transitioned: its times are the first ones.
    created = s5["conditions"][0]
    assert created["lastTransitionTime"] == format_time(at(0))


def test_failed_sets_running_false_and_completion() -> None:
    s = step(step(None, RUN, at(0)), Verdict("Failed", "JobFailed", "boom"), at(5))
    assert conds(s) == [("Created", "True"), ("Running", "False"), ("Failed", "True")]
    assert s["conditions"][1]["reason"] == "JobFailed"
    assert s["completionTime"] == format_time(at(5))


def test_unchanged_condition_keeps_times_and_message_change_keeps_transition() -> None:
    base = set_condition([], "Running", "True", "JobRunning", "a", at(0))
    same = set_condition(base, "Running", "True", "JobRunning", "a", at(9))
    assert same == base
    changed = set_condition(base, "Running", "True", "JobRunning", "b", at(9))
    assert changed[0]["lastTransitionTime"] == format_time(at(0))
    assert changed[0]["lastUpdateTime"] == format_time(at(9))


def test_idle_reconcile_is_same_status() -> None:
    s1 = step(None, RUN, at(0))
    s2 = step(s1, RUN, at(60))
    assert s2["lastReconcileTime"] != s1["lastReconcileTime"]
    assert same_status(s1, s2)
    assert not same_status(s1, step(s1, RESTART, at(60)))


def test_apply_verdict_does_not_mutate() -> None:
    s1 = step(None, RUN, at(0))
    before = [dict(c) for c in s1["conditions"]]
    apply_verdict(s1["conditions"], RESTART, K, at(5))
    assert s1["conditions"] == before


def test_replica_statuses() -> None:
    view = parse_job(job("pytorch", workers=3))

    def p(rtype: str, i: int, phase: str, deleting: bool = False) -> dict[str, Any]:
        meta: dict[str, Any] = {
            "name": f"job1-{rtype}-{i}",
            "labels": {
                "training.kubeflow.org/job-name": "job1",
                "training.kubeflow.org/replica-type": rtype,
            },
        }
        if deleting:
            meta["deletionTimestamp"] = format_time(at(0))
        return set_phase({"metadata": meta}, phase, 0 if phase != "Running" else None)

    pods = [
        p("master", 0, "Running"),
        p("worker", 0, "Running"),
        p("worker", 1, "Failed"),
        p("worker", 2, "Succeeded"),
        p("worker", 3, "Running", deleting=True),
        p("worker", 4, "Pending"),
    ]
    out = replica_statuses(view, pods)
    assert out["Master"] == {
        "active": 1,
        "succeeded": 0,
        "failed": 0,
        "labelSelector": {
            "matchLabels": {
                "training.kubeflow.org/job-name": "job1",
                "training.kubeflow.org/replica-type": "master",
            }
        },
    }
    assert {k: out["Worker"][k] for k in ("active", "succeeded", "failed")} == {
        "active": 1,
        "succeeded": 1,
        "failed": 1,
    }


def test_terminal_condition_wins_over_order() -> None:
    status = {
        "conditions": [
            {"type": "Failed", "status": "True"},
            {"type": "Running", "status": "True"},
        ]
    }
    assert current_state(status) == "Failed"
    assert current_state({"conditions": [{"type": "Running", "status": "False"}]}) is None


# --- a hand-edited status (regressions: each of these used to raise) ----------------------------
@pytest.mark.parametrize(
    "status",
    [
        "x",
        [],
        {"conditions": "Running"},
        {"conditions": {"type": "Running"}},
        {
            "conditions": [
                None,
                "x",
                {"type": None, "status": "True"},
                {"type": 5, "status": "True"},
            ]
        },
    ],
)
def test_unreadable_status_reads_as_no_state(status: Any) -> None:
    assert current_state(status) is None
    new = next_status(
        status,
        Verdict("Created", "JobCreated", "c"),
        job_key=K,
        now=at(0),
        replicas=None,
        ledger=RestartLedger(),
    )
    assert [c["type"] for c in new["conditions"]] == ["Created"]
    assert new["replicaStatuses"] == {}


def test_wrong_typed_stamps_and_condition_fields_are_not_written_back() -> None:
    status = {
        "conditions": [
            {"type": "Created", "status": "True", "reason": 1, "lastTransitionTime": 5},
        ],
        "startTime": 5,
        "completionTime": ["x"],
        "replicaStatuses": "x",
    }
    new = next_status(
        status,
        Verdict("Failed", "JobValidFailed", "InvalidSpecs: x"),
        job_key=K,
        now=at(7),
        replicas=None,
        ledger=RestartLedger(),
    )
    assert new["startTime"] == new["completionTime"] == format_time(at(7))
    assert new["replicaStatuses"] == {}
    created = new["conditions"][0]
    assert created["type"] == "Created" and "reason" not in created
    assert all(isinstance(v, str) for c in new["conditions"] for v in c.values())
    assert new["conditions"][-1]["type"] == "Failed"

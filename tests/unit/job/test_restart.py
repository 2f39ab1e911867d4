"""Restart-policy decisions, exit codes, backoff boundaries and the persisted ledger."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.job.restart import (
    FailureAction,
    RestartLedger,
    backoff_exceeded,
    backoff_limit,
    container_restarts,
    exit_code,
    mindcluster_restart_events,
    on_pod_failure,
)
from ascendjob_controller.job.types import parse_job

from .factories import job, set_phase, with_restarts

R, F = FailureAction.RECREATE, FailureAction.FAIL_JOB
CODES = [0, 1, 127, 128, 137, 143, None]


@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("Never", [F, F, F, F, F, F, F]),
        ("ExitCode", [F, F, F, R, R, R, R]),
        ("OnFailure", [R, R, R, R, R, R, R]),
        ("Always", [R, R, R, R, R, R, R]),
    ],
)
def test_every_policy_and_exit_code(policy: str, expected: list[FailureAction]) -> None:
    assert [on_pod_failure(policy, code) for code in CODES] == expected


def pod(**extra: object) -> dict:
    return {"metadata": {"name": "p", "uid": "u1"}, **extra}


@pytest.mark.parametrize("code", [1, 137])
def test_exit_code_prefers_ascend_container(code: int) -> None:
    body = pod(
        status={
            "phase": "Failed",
            "containerStatuses": [
                {"name": "side", "state": {"terminated": {"exitCode": 9}}},
                {"name": "ascend", "state": {"terminated": {"exitCode": code}}},
            ],
        }
    )
    assert exit_code(body) == code


def test_exit_code_falls_back_to_first_and_none() -> None:
    body = pod(
        status={"containerStatuses": [{"name": "x", "state": {"terminated": {"exitCode": 3}}}]}
    )
    assert exit_code(body) == 3
    assert exit_code(set_phase(pod(), "Failed", None)) is None
    assert exit_code(set_phase(pod(), "Running")) is None


@pytest.mark.parametrize(
    ("limit", "restarts", "exceeded"),
    [(None, 10**6, False), (0, 0, False), (0, 1, True), (2, 2, False), (2, 3, True)],
)
def test_backoff_boundaries(limit: int | None, restarts: int, exceeded: bool) -> None:
    assert backoff_exceeded(limit, restarts) is exceeded


def test_container_restarts_sum_all_containers() -> None:
    body = pod(status={"containerStatuses": [{"restartCount": 2}, {"restartCount": 1}]})
    assert container_restarts(body) == 3


def test_ledger_counts_each_container_restart_once() -> None:
    ledger = RestartLedger()
    p = with_restarts(set_phase(pod(), "Running"), 1)
    ledger, fresh = ledger.observe_containers([p])
    assert ledger.total == 1 and len(fresh) == 1
    ledger, fresh = ledger.observe_containers([p])
    assert ledger.total == 1 and fresh == []
    ledger, fresh = ledger.observe_containers([with_restarts(p, 3)])
    assert ledger.total == 3 and fresh[0][1] == 2


def test_ledger_recreation_idempotent_and_round_trip() -> None:
    ledger = RestartLedger(total=2).count_recreation("u1").count_recreation("u1")
    assert ledger.total == 3
    again = RestartLedger.from_status(ledger.to_status())
    assert again == ledger
    assert again.to_status() == {"restartCount": 3, "recreatedPods": ["u1"]}


def test_ledger_survives_pod_recreation_through_status() -> None:
    ledger, _ = RestartLedger().observe_containers([with_restarts(pod(), 2)])
    ledger = ledger.count_recreation("u1")
    persisted = ledger.prune(set()).to_status()  # the old pod is gone
    assert persisted == {"restartCount": 3}
    fresh_pod = {"metadata": {"uid": "u2"}, "status": {"containerStatuses": [{"restartCount": 0}]}}
    restored, fresh = RestartLedger.from_status(persisted).observe_containers([fresh_pod])
    assert restored.total == 3 and fresh == []


def test_kubelet_counter_going_down_never_decreases_total() -> None:
    ledger, _ = RestartLedger().observe_containers([with_restarts(pod(), 4)])
    ledger, fresh = ledger.observe_containers([with_restarts(pod(), 1)])
    assert ledger.total == 4 and fresh == []


# --- hand-edited bookkeeping and odd pod statuses (regressions: these used to raise) -----------
@pytest.mark.parametrize(
    ("status", "total", "counts", "recreated"),
    [
        ("x", 0, {}, frozenset()),
        ({"restartCount": "3"}, 3, {}, frozenset()),
        ({"restartCount": -4}, 0, {}, frozenset()),
        ({"restartCount": 1.5, "countedContainerRestarts": ["a"]}, 0, {}, frozenset()),
        ({"countedContainerRestarts": "x", "recreatedPods": "uid"}, 0, {}, frozenset()),
        (
            {"countedContainerRestarts": {"u": "3", "v": 2.5, "w": None, "x": 2}},
            0,
            {"u": 3, "x": 2},
            frozenset(),
        ),
        ({"recreatedPods": [None, 1, ["x"], "a"]}, 0, {}, frozenset({"a"})),
    ],
)
def test_ledger_reads_hand_edited_status(
    status: object, total: int, counts: dict[str, int], recreated: frozenset[str]
) -> None:
    ledger = RestartLedger.from_status(status)
    assert (ledger.total, ledger.container_counts, ledger.recreated) == (total, counts, recreated)


@pytest.mark.parametrize("statuses", ["x", {"name": "ascend"}, [None, "x"], [{"restartCount": -1}]])
def test_odd_container_statuses_read_as_none(statuses: object) -> None:
    pod = {"metadata": {"uid": "u"}, "status": {"phase": "Failed", "containerStatuses": statuses}}
    assert exit_code(pod) is None
    assert container_restarts(pod) == 0


# --- the backoff limit: runPolicy.backoffLimit, else MindCluster's fault-retry-times label ------
@pytest.mark.parametrize(
    ("run_policy", "label", "limit"),
    [
        (None, None, None),
        ({"backoffLimit": 3}, None, 3),
        ({"backoffLimit": 0}, "5", 0),  # the field wins over the label
        ({"backoffLimit": 3}, "abc", 3),
        ({}, "5", 5),
        ({"cleanPodPolicy": "All"}, "0", 0),
        (None, "5", 5),
        (None, "007", 7),
        (None, "2147483647", 2147483647),
        # Not a whole number in the int32 range: ignored, the limit stays unset (unlimited).
        (None, "2147483648", None),
        (None, "-1", None),
        (None, "+3", None),
        (None, "3.0", None),
        (None, "", None),
        (None, "abc", None),
        (None, "\u0663", None),  # ARABIC-INDIC DIGIT THREE: isdigit(), but not a number here
        (None, 5, None),  # a non-string label (only a hand-made object has one)
    ],
)
def test_backoff_limit(run_policy: dict[str, Any] | None, label: Any, limit: int | None) -> None:
    body = job("pytorch", run_policy=run_policy)
    if label is not None:
        body["metadata"]["labels"]["fault-retry-times"] = label
    assert backoff_limit(body) == limit


def test_backoff_limit_of_odd_shapes() -> None:
    """Whatever the job looks like, the answer is a number or None, never an exception."""
    assert backoff_limit({}) is None
    assert backoff_limit({"metadata": {"labels": "x"}, "spec": {"runPolicy": "x"}}) is None
    assert backoff_limit({"spec": {"runPolicy": {"backoffLimit": "3"}}}) is None  # validation's


# --- MindCluster's events for a retried pod ------------------------------------------------------
def _failed_worker(code: int | None) -> dict[str, Any]:
    body = {
        "metadata": {
            "name": "job1-worker-1",
            "namespace": "ns1",
            "uid": "u1",
            "labels": {"training.kubeflow.org/replica-type": "worker"},
        }
    }
    return set_phase(body, "Failed", code)


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            137,
            [
                ("Normal", "ExitedWithCode", "Pod: ns1.job1-worker-1 exited with code 137"),
                (
                    "Warning",
                    "jobRestarting",
                    "Job job1 is restarting because Worker replica(s) failed.",
                ),
            ],
        ),
        (
            None,  # evicted: no exit code, so no ExitedWithCode (MindCluster has none to print)
            [
                (
                    "Warning",
                    "jobRestarting",
                    "Job job1 is restarting because Worker replica(s) failed.",
                )
            ],
        ),
    ],
)
def test_mindcluster_restart_events(code: int | None, expected: list[tuple[str, str, str]]) -> None:
    view = parse_job(job("pytorch", workers=2))
    assert mindcluster_restart_events(view, _failed_worker(code)) == expected


def test_a_lagging_pod_cache_never_recounts_a_recorded_restart() -> None:
    """Found by make chaos: plan() pruned the ledger entry of a pod the cache did not show for
    a moment, then counted the same failure again (BackoffLimitExceeded with a restart left).

    The steps are `hack/chaos/repro_stale_ledger.py`, run here so they stay fixed.
    """
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "hack.chaos.repro_stale_ledger"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "the recorded restart survived the lagging cache" in proc.stdout

"""The peers write the status the API reference makes mandatory, and the bench checks it.

`replicaStatuses` must be in every AscendJob status beside the conditions. The perfect client
and the kopf operator build it with `lifecycle.replica_statuses` the way our controller
counts (job/status.py); `bench_peers` refuses any contender whose finished jobs lack it.
"""

from __future__ import annotations

from typing import Any

import pytest

from hack.bench_peers import _check_replica_statuses
from hack.peers.lifecycle import JOB_LABEL, TYPE_LABEL, replica_statuses, status_patch


def selector(job: str, rtype: str) -> dict[str, Any]:
    return {"matchLabels": {JOB_LABEL: job, TYPE_LABEL: rtype}}


@pytest.mark.parametrize(
    ("pods", "master", "worker"),
    [
        ([], (0, 0, 0), (0, 0, 0)),
        ([("master", None), ("worker", "Pending")], (0, 0, 0), (0, 0, 0)),
        ([("master", "Running"), ("worker", "Running")], (1, 0, 0), (1, 0, 0)),
        ([("master", "Succeeded"), ("worker", "Running")], (0, 1, 0), (1, 0, 0)),
        ([("master", "Failed"), ("worker", "Succeeded")], (0, 0, 1), (0, 1, 0)),
        (
            [("worker", "Running"), ("worker", "Running"), ("other", "Running")],
            (0, 0, 0),
            (2, 0, 0),
        ),
    ],
)
def test_replica_statuses_count_each_types_pods_by_phase(
    pods: list[tuple[str, str | None]],
    master: tuple[int, int, int],
    worker: tuple[int, int, int],
) -> None:
    got = replica_statuses("j", ["Master", "Worker"], pods)
    for rtype, (active, succeeded, failed) in (("Master", master), ("Worker", worker)):
        assert got[rtype] == {
            "active": active,
            "succeeded": succeeded,
            "failed": failed,
            "labelSelector": selector("j", rtype.lower()),
        }


def test_the_status_patch_carries_them_beside_the_conditions() -> None:
    counts = replica_statuses("j", ["Master"], [("master", "Running")])
    patch = status_patch("Running", "ns/j", ran=False, replica_status=counts)
    assert patch["status"]["replicaStatuses"] == counts
    assert patch["status"]["conditions"][-1]["type"] == "Running"


def finished_job(name: str, status: dict[str, Any]) -> dict[str, Any]:
    spec = {"replicaSpecs": {"Master": {"replicas": 1}, "Worker": {"replicas": 2}}}
    return {"metadata": {"name": name}, "spec": spec, "status": status}


def test_the_check_accepts_final_counts_and_refuses_missing_or_wrong_ones() -> None:
    done = {
        "Master": {"active": 0, "succeeded": 1, "failed": 0},
        "Worker": {"active": 0, "succeeded": 2, "failed": 0, "labelSelector": {}},
    }
    assert _check_replica_statuses([finished_job("good", {"replicaStatuses": done})]) == []
    problems = _check_replica_statuses(
        [
            finished_job("bare", {"conditions": []}),
            finished_job("stale", {"replicaStatuses": {**done, "Worker": {"active": 2}}}),
        ]
    )
    assert len(problems) == 2
    assert problems[0].startswith("job bare: replicaStatuses.Master is missing")
    assert problems[1].startswith("job stale: replicaStatuses.Worker")

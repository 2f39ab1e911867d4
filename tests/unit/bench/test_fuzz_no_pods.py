"""The fuzz run's no-pods check: jobs failed by validation never have pods; jobs failed on a
child the API server refused (422) are counted apart, since their first pods may exist."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hack.fuzz.checks import check_no_pods
from hack.fuzz.mutate import Case
from hack.fuzz.observe import JobRecord, problem_of
from hack.fuzz.run import INVALID, Outcome


def _outcome(index: int, problem: str, pods: list[str]) -> Outcome:
    name = f"fz-{index:04d}"
    record = JobRecord(name, f"uid-{index}", states_seen=[INVALID], problem=problem)
    case = Case(index, name, "sample", (), b"{}")
    return Outcome(case, 201, name=name, record=record, final=INVALID, pods=pods)


def _check(*outcomes: Outcome) -> Any:
    return check_no_pods(SimpleNamespace(outcomes=list(outcomes)))  # type: ignore[arg-type]


def test_a_refused_job_may_have_its_first_pods_a_validated_one_may_not() -> None:
    refused = _outcome(1, "InvalidPodTemplate", ["fz-0001-master-0"])
    clean = _outcome(2, "InvalidContainer", [])
    check = _check(refused, clean)
    assert check.ok, check.detail
    assert check.detail == (
        "1 of 1 invalid jobs never had a pod; 1 more failed on a child the API server "
        "refused (422 or 400), 1 of them after their first pods"
    )
    bad = _check(refused, _outcome(3, "InvalidContainer", ["fz-0003-master-0"]))
    assert not bad.ok and bad.cases == {3}


def test_problem_of_reads_the_job_valid_failed_condition() -> None:
    def job(*conditions: dict[str, Any]) -> dict[str, Any]:
        return {"status": {"conditions": list(conditions)}}

    failed = {"type": "Failed", "reason": "JobValidFailed", "message": "InvalidPodTemplate: x: y"}
    assert problem_of(job({"type": "Created", "reason": "JobCreated"}, failed)) == (
        "InvalidPodTemplate"
    )
    assert problem_of(job({"type": "Failed", "reason": "JobFailed", "message": "a: b"})) == ""
    assert problem_of({"status": "odd"}) == ""

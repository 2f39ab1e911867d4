"""Validation reasons and defaults (design section 4)."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.job import validation as v
from ascendjob_controller.job.types import parse_job

from .factories import container, job, replica


def reasons(body: dict[str, Any]) -> list[str]:
    return [problem.reason for problem in v.validate(body)]


@pytest.mark.parametrize("framework", ["pytorch", "mindspore", "tensorflow", "PyTorch"])
def test_valid_jobs_have_no_problems(framework: str) -> None:
    assert v.validate(job(framework)) == []


def test_sample_is_valid() -> None:
    from .factories import sample_job

    assert v.validate(sample_job()) == []


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (job(None), v.INVALID_FRAMEWORK),
        (job("caffe"), v.INVALID_FRAMEWORK),
        (job("pytorch", {}), v.INVALID_SPECS),
        (job("pytorch", {"Master": replica(), "Chief": replica()}), v.INVALID_REPLICA_TYPE),
        (
            job("pytorch", {"Master": replica(), "Worker": replica(), "worker": replica()}),
            v.INVALID_REPLICA_TYPE,
        ),
        (job("mindspore", {"Master": replica()}), v.INVALID_REPLICA_TYPE),
        (job("pytorch", {"Master": replica(), "Worker": replica(20001)}), v.INVALID_REPLICA_SPEC),
        (job("pytorch", {"Master": replica(), "Worker": replica(-1)}), v.INVALID_REPLICA_SPEC),
        (job("pytorch", {"Master": replica(), "Worker": replica("3")}), v.INVALID_REPLICA_SPEC),  # type: ignore[arg-type]
        (job("pytorch", {"Master": replica(2)}), v.INVALID_REPLICA_SPEC),
        (job("pytorch", {"Master": replica(0)}), v.INVALID_REPLICA_SPEC),
        (
            job("pytorch", {"Master": {"template": {"spec": {"containers": []}}}}),
            v.INVALID_REPLICA_SPEC,
        ),
        (job("pytorch", {"Master": {"replicas": 1}}), v.INVALID_REPLICA_SPEC),
        (job("pytorch", {"Master": replica(containers=[{"name": "ascend"}])}), v.INVALID_CONTAINER),
        (
            job(
                "pytorch",
                {"Master": replica(containers=[container(), {"name": "side", "image": ""}])},
            ),
            v.INVALID_CONTAINER,
        ),
        (job("pytorch", {"Master": replica(policy="Sometimes")}), v.INVALID_RESTART_POLICY),
        (job("pytorch", {"Worker": replica(2)}), v.INVALID_LEADER),
        (job("tensorflow", {"Worker": replica(2)}), v.INVALID_LEADER),
    ],
)
def test_each_reason(body: dict[str, Any], reason: str) -> None:
    assert reasons(body) == [reason]


@pytest.mark.parametrize(
    ("framework", "specs", "name", "valid"),
    [
        # The leader's Service, <name>-<leader>-0, is a DNS-1035 label: at most 63 characters.
        ("pytorch", None, "a" * 54, True),  # a...a-master-0: 63
        ("pytorch", None, "a" * 55, False),
        ("tensorflow", None, "a" * 55, True),  # -chief-0
        ("tensorflow", None, "a" * 56, False),
        ("mindspore", None, "a" * 51, True),  # -scheduler-0
        ("mindspore", None, "a" * 52, False),
        # ... and starts with a letter, without dots (a job's name may have both).
        ("pytorch", None, "1job", False),
        ("pytorch", None, "my.job", False),
        ("pytorch", None, "job-1", True),
        # Without a leader there is no Service; the name is still every pod's label value.
        ("mindspore", {"Worker": replica(2)}, "1.job", True),
        ("mindspore", {"Worker": replica(2)}, "a" * 63, True),
        ("mindspore", {"Worker": replica(2)}, "a" * 64, False),
    ],
)
def test_the_names_derived_from_the_job_name_must_be_acceptable(
    framework: str, specs: dict[str, Any] | None, name: str, valid: bool
) -> None:
    problems = v.validate(job(framework, specs, name=name))
    assert [p.reason for p in problems] == ([] if valid else [v.INVALID_JOB_NAME])
    if not valid:
        assert name in problems[0].text or str(len(name)) in problems[0].text


def test_the_memo_tells_jobs_apart_by_name() -> None:
    """The name is read, so it is in the memo's key: same spec, other name, other answer."""
    assert v.validate(job("pytorch", name="a" * 54)) == []
    assert [p.reason for p in v.validate(job("pytorch", name="a" * 55))] == [v.INVALID_JOB_NAME]
    assert v.validate(job("pytorch", name="a" * 54)) == []


def test_invalid_success_policy() -> None:
    body = job("pytorch")
    body["spec"]["successPolicy"] = "AnyWorker"
    assert reasons(body) == [v.INVALID_SUCCESS_POLICY]
    body["spec"]["successPolicy"] = "AllWorkers"
    assert reasons(body) == []


def test_mindspore_without_scheduler_is_valid() -> None:
    assert v.validate(job("mindspore", {"Worker": replica(2)})) == []


def test_problem_message_format() -> None:
    (problem,) = v.validate(job("caffe"))
    assert problem.message.startswith("InvalidFramework: ")
    assert "caffe" in problem.message


def test_several_problems_are_all_reported() -> None:
    body = job("pytorch", {"Worker": replica(policy="Bad", containers=[{"name": "x"}])})
    assert set(reasons(body)) == {v.INVALID_RESTART_POLICY, v.INVALID_CONTAINER, v.INVALID_LEADER}


def test_defaults_and_case_insensitive_types() -> None:
    body = job(
        "PyTorch",
        {"master": {"template": replica()["template"]}, "WORKER": replica(3, "ExitCode")},
    )
    assert v.validate(body) == []
    view = parse_job(body)
    assert view.framework == "pytorch"
    assert [(r.rtype, r.replicas, r.restart_policy, r.is_leader) for r in view.replicas] == [
        ("Master", 1, "Never", True),
        ("Worker", 3, "ExitCode", False),
    ]
    assert view.clean_pod_policy == "None"
    assert view.backoff_limit is None
    assert view.total_replicas == 4


def test_validate_does_not_mutate() -> None:
    import copy

    body = job("pytorch", {"master": replica()})
    before = copy.deepcopy(body)
    v.validate(body)
    parse_job(body)
    assert body == before


# --- what a free-form template or a looser CRD lets through (regressions: plan() raised) ----------
def _worker_container(**fields: Any) -> dict[str, Any]:
    return job(specs={"Master": replica(), "Worker": replica(containers=[container(2, **fields)])})


def _with(body: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body["spec"]["replicaSpecs"]["Worker"]["template"].update(fields)
    return body


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (_with(job(), metadata=[]), v.INVALID_REPLICA_SPEC),
        (_with(job(), metadata={"labels": ["a"]}), v.INVALID_REPLICA_SPEC),
        (_with(job(), metadata={"annotations": {"a": 1}}), v.INVALID_REPLICA_SPEC),
        (_worker_container(name=None), v.INVALID_CONTAINER),
        (_worker_container(env={"A": "1"}), v.INVALID_CONTAINER),
        (_worker_container(env=[{"value": "v"}]), v.INVALID_CONTAINER),
        (_worker_container(env=[{"name": "A", "value": 2}]), v.INVALID_CONTAINER),
        (_worker_container(ports=[{"containerPort": "2222"}]), v.INVALID_CONTAINER),
        (_worker_container(ports=[2222]), v.INVALID_CONTAINER),
        (_worker_container(resources="2"), v.INVALID_CONTAINER),
        (_worker_container(resources={"requests": {"cpu": "abc"}}), v.INVALID_CONTAINER),
        (_worker_container(resources={"limits": {"cpu": "NaN"}}), v.INVALID_CONTAINER),
        (
            _worker_container(resources={"requests": {"huawei.com/Ascend910": "1.5"}}),
            v.INVALID_CONTAINER,
        ),
        (
            _worker_container(resources={"requests": {"huawei.com/Ascend910": 10**30}}),
            v.INVALID_CONTAINER,
        ),
        # kube-apiserver: an extended resource request needs an equal limit (else every
        # pod create is a 422).
        (
            _worker_container(resources={"requests": {"huawei.com/Ascend910": "2"}}),
            v.INVALID_CONTAINER,
        ),
        (
            _worker_container(
                resources={
                    "requests": {"huawei.com/Ascend910": "2"},
                    "limits": {"huawei.com/Ascend910": "4"},
                }
            ),
            v.INVALID_CONTAINER,
        ),
        (job(run_policy="x"), v.INVALID_RUN_POLICY),  # type: ignore[arg-type]
        (job(run_policy={"backoffLimit": "3"}), v.INVALID_RUN_POLICY),
        (job(run_policy={"backoffLimit": -1}), v.INVALID_RUN_POLICY),
        (job(run_policy={"activeDeadlineSeconds": 0}), v.INVALID_RUN_POLICY),
        (job(run_policy={"activeDeadlineSeconds": 10**30}), v.INVALID_RUN_POLICY),
        (job(run_policy={"cleanPodPolicy": "all"}), v.INVALID_RUN_POLICY),
        (job(run_policy={"schedulingPolicy": {"minAvailable": "2"}}), v.INVALID_RUN_POLICY),
        (job(run_policy={"schedulingPolicy": {"queue": ["q"]}}), v.INVALID_RUN_POLICY),
        (job(run_policy={"schedulingPolicy": {"minResources": "x"}}), v.INVALID_RUN_POLICY),
        (job(scheduler=["volcano"]), v.INVALID_SPECS),  # type: ignore[arg-type]
    ],
)
def test_malformed_template_and_run_policy_are_rejected(body: dict[str, Any], reason: str) -> None:
    assert reasons(body) == [reason]


@pytest.mark.parametrize(
    "body",
    [
        _worker_container(env=[{"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "x"}}}]),
        _worker_container(ports=[{"containerPort": 8080, "protocol": "UDP"}]),
        _worker_container(
            resources={
                "requests": {"cpu": "500m", "huawei.com/Ascend910": "8"},
                "limits": {"huawei.com/Ascend910": 8},
            }
        ),
        _worker_container(resources={"limits": {"huawei.com/Ascend910": "8"}}),
        _worker_container(resources={"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}),
        _with(job(), metadata={"labels": {"a": "b"}, "annotations": {}}),
        job(run_policy={"backoffLimit": 0, "cleanPodPolicy": "All", "schedulingPolicy": {}}),
    ],
)
def test_well_formed_optional_fields_stay_valid(body: dict[str, Any]) -> None:
    assert v.validate(body) == []


def _host_network(value: Any) -> dict[str, Any]:
    spec = replica()
    spec["template"]["spec"]["hostNetwork"] = value
    return job("pytorch", {"Master": spec})


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, []),
        (False, []),
        ("true", [v.INVALID_REPLICA_SPEC]),
        (1, [v.INVALID_REPLICA_SPEC]),
        ([], [v.INVALID_REPLICA_SPEC]),
    ],
)
def test_host_network_must_be_a_boolean(value: Any, expected: list[str]) -> None:
    """It feeds the HostNetwork variable, and the API server rejects any other type."""
    assert reasons(_host_network(value)) == expected


@pytest.mark.parametrize(
    "labels",
    [
        {"fault-retry-times": "abc"},
        {"fault-retry-times": "-1"},
        {"pod-rescheduling": "maybe"},
    ],
)
def test_mindcluster_labels_never_invalidate_a_job(labels: dict[str, str]) -> None:
    body = job("pytorch")
    body["metadata"]["labels"].update(labels)
    body["metadata"]["annotations"] = {"recover-strategy": "nonsense,,", "sp-block": "x"}
    assert reasons(body) == []


def _deep(levels: int, as_list: bool = False) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value] if as_list else {"d": value}
    return value


@pytest.mark.parametrize(("levels", "as_list"), [(600, False), (1500, True), (5000, False)])
def test_a_template_nested_too_deep_is_invalid_not_a_crash(levels: int, as_list: bool) -> None:
    """Found by make fuzz: desired_pod's deepcopy raised RecursionError on every reconcile."""
    spec = replica()
    spec["template"]["spec"]["fuzzDeep"] = _deep(levels, as_list)
    body = job("pytorch", {"Master": spec, "Worker": replica()})
    problems = v.validate(body)
    assert [p.reason for p in problems] == [v.INVALID_REPLICA_SPEC]
    assert "deeper than 100 levels" in problems[0].message


def test_an_ordinary_template_is_far_from_the_depth_limit() -> None:
    assert v.nesting_depth(replica()["template"]) < 10
    assert v.nesting_depth(_deep(100)) == 100


def _depth_by_definition(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth_by_definition, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth_by_definition, value), default=0)
    return 0


@pytest.mark.parametrize(
    "value",
    [
        "leaf",
        None,
        {},
        [],
        [[]],
        {"a": {}, "b": [1, [2, {"c": [3]}]], "d": "x"},
        [{"a": 1}, [[[[]]]], {"b": {"c": {}}}],
        _deep(7, as_list=True),
        {"wide": [{"n": i, "m": [i] * (i % 3)} for i in range(50)]},
    ],
)
def test_nesting_depth_is_the_recursive_definition(value: Any) -> None:
    assert v.nesting_depth(value) == _depth_by_definition(value)
    assert v.nesting_depth(value, limit=1) == min(_depth_by_definition(value), 2)

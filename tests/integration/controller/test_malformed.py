"""Malformed jobs the CRD schema lets through (the pod template is free-form) end Failed
with JobValidFailed and a Warning Event, and the controller keeps serving other jobs."""

from __future__ import annotations

from typing import Any

import pytest

from ascendjob_controller.controller import AscendJobController
from ascendjob_controller.kube.client import ASCENDJOBS, KubeClient
from tests.integration.controller.helpers import (
    condition,
    fresh_namespace,
    pods_of,
    pytorch_job,
    status_of,
    wait_event,
    wait_for,
    wait_pods,
    wait_state,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def ns(kube: KubeClient, controller: AscendJobController) -> str:
    return fresh_namespace(kube)


def _broken(job: str, /, **fields: Any) -> dict[str, Any]:
    """The job whose Worker container has `fields` set."""
    body = pytorch_job(job)
    body["spec"]["replicaSpecs"]["Worker"]["template"]["spec"]["containers"][0].update(fields)
    return body


CASES: list[tuple[str, dict[str, Any], str]] = [
    ("noname", {"env": [{"value": "x"}]}, "InvalidContainer"),
    ("strport", {"ports": [{"containerPort": "2222"}]}, "InvalidContainer"),
    ("halfnpu", {"resources": {"requests": {"huawei.com/Ascend910": "1.5"}}}, "InvalidContainer"),
    ("badres", {"resources": "lots"}, "InvalidContainer"),
]


def test_malformed_templates_fail_and_others_progress(kube: KubeClient, ns: str) -> None:
    for name, fields, _ in CASES:
        kube.create(ASCENDJOBS, ns, _broken(name, **fields))
    kube.create(ASCENDJOBS, ns, pytorch_job("good"))
    for name, _, reason in CASES:
        status = wait_state(kube, ns, name, "Failed")
        failed = condition(status, "Failed")
        assert failed is not None and failed["reason"] == "JobValidFailed"
        assert failed["message"].startswith(f"{reason}: "), failed["message"]
        assert wait_event(kube, ns, name, reason)["type"] == "Warning"
    wait_pods(kube, ns, "good", 2)
    for name, _, _ in CASES:
        assert pods_of(kube, ns, name) == {}, f"{name}: an invalid job got pods"


def test_a_name_its_service_cannot_carry_fails_the_job_at_once(kube: KubeClient, ns: str) -> None:
    """55 characters make `<name>-master-0` 64: the API server would refuse the Service for
    ever (422), and the job used to stay Created, retrying, without an Event."""
    name = "a" * 55
    kube.create(ASCENDJOBS, ns, pytorch_job(name))
    kube.create(ASCENDJOBS, ns, pytorch_job("a" * 54))
    failed = condition(wait_state(kube, ns, name, "Failed"), "Failed")
    assert failed is not None and failed["reason"] == "JobValidFailed"
    assert failed["message"].startswith("InvalidJobName: "), failed["message"]
    assert f"'{name}-master-0'" in failed["message"]
    assert wait_event(kube, ns, name, "InvalidJobName")["type"] == "Warning"
    wait_pods(kube, ns, "a" * 54, 2)  # the longest name that fits runs
    assert pods_of(kube, ns, name) == {}


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    # 422: kube-apiserver validates container names; `validate` does not.
    ("upper", {"name": "UPPER"}, 'spec.containers[0].name: Invalid value: "UPPER"'),
    # 400: the decoder wants a list of strings.
    (
        "numcmd",
        {"command": 5},
        "json: cannot unmarshal number into Go struct field Container.spec.containers.command",
    ),
]


@pytest.mark.parametrize(("job", "fields", "says"), REFUSED, ids=[c[0] for c in REFUSED])
def test_a_template_the_api_server_refuses_fails_the_job(
    kube: KubeClient, ns: str, job: str, fields: dict[str, Any], says: str
) -> None:
    """The job used to stay Created, its Worker's create retried with back-off for ever; now
    the refusal fails it with the server's own words, and its cleanPodPolicy removes what was
    created before (the Master)."""
    body = _broken(job, **fields)
    body["spec"]["runPolicy"] = {"cleanPodPolicy": "All"}
    kube.create(ASCENDJOBS, ns, body)
    kube.create(ASCENDJOBS, ns, pytorch_job("good"))
    failed = condition(wait_state(kube, ns, job, "Failed"), "Failed")
    assert failed is not None and failed["reason"] == "JobValidFailed"
    message = failed["message"]
    expected = f"InvalidPodTemplate: the API server refused pod {ns}/{job}-worker-0: "
    assert message.startswith(expected), message
    assert says in message, message
    assert wait_event(kube, ns, job, "InvalidPodTemplate")["type"] == "Warning"
    assert wait_event(kube, ns, job, "FailedCreatePod")["type"] == "Warning"
    wait_pods(kube, ns, "good", 2)
    wait_for(lambda: pods_of(kube, ns, job) == {}, "the refused job's pods deleted")
    assert condition(status_of(kube, ns, job), "Failed") == failed  # written once

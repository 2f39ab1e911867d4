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
    wait_event,
    wait_pods,
    wait_state,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def ns(kube: KubeClient, controller: AscendJobController) -> str:
    return fresh_namespace(kube)


def _broken(name: str, **fields: Any) -> dict[str, Any]:
    body = pytorch_job(name)
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

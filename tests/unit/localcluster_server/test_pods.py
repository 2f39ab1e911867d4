"""Pod registry computations: requests from limits, QoS class, grace periods, quantities."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from ascendjob_controller.localcluster import pods, quantity


def _spec(*resources: dict[str, Any], init: dict[str, Any] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": f"c{i}", "resources": r} for i, r in enumerate(resources)]
    }
    if init is not None:
        spec["initContainers"] = [{"name": "init", "resources": init}]
    return spec


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("500m", Decimal("0.5")),
        ("1", Decimal(1)),
        ("1Gi", Decimal(2**30)),
        ("64Mi", Decimal(64 * 2**20)),
        ("2k", Decimal(2000)),
        ("1e3", Decimal(1000)),
        (3, Decimal(3)),
        ("bogus", None),
        ("1Xi", None),
    ],
)
def test_quantities_read_as_decimals(text: Any, value: Decimal | None) -> None:
    assert quantity.parse(text) == value


def test_requests_default_from_limits_without_overriding_requests() -> None:
    spec = _spec({"limits": {"cpu": "1", "huawei.com/Ascend910": "1"}, "requests": {"cpu": "0.5"}})
    pods.default_requests(spec)
    assert spec["containers"][0]["resources"]["requests"] == {
        "cpu": "0.5",
        "huawei.com/Ascend910": "1",
    }


@pytest.mark.parametrize(
    ("spec", "qos"),
    [
        (_spec({}), "BestEffort"),
        (
            _spec(
                {
                    "limits": {"cpu": "1", "memory": "1Gi"},
                    "requests": {"cpu": "1000m", "memory": "1Gi"},
                }
            ),
            "Guaranteed",
        ),
        (_spec({"requests": {"cpu": "100m"}, "limits": {"cpu": "1"}}), "Burstable"),
        (_spec({"requests": {"memory": "64Mi"}}), "Burstable"),
        # NPU only: requests are not empty, yet cpu and memory are unset on both sides
        (
            _spec(
                {"limits": {"huawei.com/Ascend910": "1"}, "requests": {"huawei.com/Ascend910": "1"}}
            ),
            "BestEffort",
        ),
        # a Guaranteed init container beside a BestEffort one: Burstable (v1.37 per-container)
        (
            _spec(
                {},
                init={
                    "limits": {"cpu": "1", "memory": "1Gi"},
                    "requests": {"cpu": "1", "memory": "1Gi"},
                },
            ),
            "Burstable",
        ),
    ],
)
def test_qos_class(spec: dict[str, Any], qos: str) -> None:
    assert pods.qos_class(spec) == qos


@pytest.mark.parametrize(
    ("node", "phase", "spec_grace", "requested", "expected"),
    [
        ("n1", "Running", 30, None, 30),
        ("n1", "Running", 30, 5, 5),
        ("", "Pending", 30, None, 0),  # never bound: deleted at once
        ("n1", "Succeeded", 30, None, 0),  # finished: deleted at once
        ("n1", "Running", None, None, 0),
        ("n1", "Running", 30, -3, 1),
    ],
)
def test_grace_period(
    node: str, phase: str, spec_grace: int | None, requested: int | None, expected: int
) -> None:
    pod: dict[str, Any] = {"spec": {"nodeName": node}, "status": {"phase": phase}}
    if spec_grace is not None:
        pod["spec"]["terminationGracePeriodSeconds"] = spec_grace
    assert pods.grace_period(pod, requested) == expected

"""Quantity parsing for PodGroup minResources."""

from __future__ import annotations

from decimal import Decimal

import pytest

from ascendjob_controller.job.quantity import add_requests, format_quantity, parse_quantity


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("2", Decimal(2)),
        (2, Decimal(2)),
        ("500m", Decimal("0.5")),
        ("1Gi", Decimal(2**30)),
        ("1k", Decimal(1000)),
        ("1.5", Decimal("1.5")),
        ("abc", None),
        ("", None),
        (True, None),
    ],
)
def test_parse(text: object, value: Decimal | None) -> None:
    assert parse_quantity(text) == value


def test_add_and_format() -> None:
    total: dict[str, Decimal] = {}
    add_requests(total, {"cpu": "500m", "memory": "1Gi", "huawei.com/Ascend910": 2}, 3)
    assert {k: format_quantity(v) for k, v in total.items()} == {
        "cpu": "1.5",
        "memory": str(3 * 2**30),
        "huawei.com/Ascend910": "6",
    }

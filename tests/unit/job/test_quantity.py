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


@pytest.mark.parametrize(
    "value", ["NaN", "Infinity", "-Infinity", "1e999999999", "1e400", 10**30, 1e308, " ", "sNaN"]
)
def test_non_finite_or_huge_quantities_are_not_quantities(value: object) -> None:
    """Regression: "1e999999999" raised decimal.Overflow, NaN and 1e400 were accepted."""
    assert parse_quantity(value) is None


def test_add_requests_ignores_a_non_object() -> None:
    total: dict[str, Decimal] = {}
    add_requests(total, ["cpu"], 2)
    assert total == {}

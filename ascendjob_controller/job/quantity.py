"""Kubernetes resource quantities, just enough to add up pod requests for a PodGroup.

Sums are returned as plain decimal strings ("1.5", "8589934592"), which are valid quantities
in canonical-free form: exact, and simpler than re-deriving the API server's preferred suffix.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10**3),
    "M": Decimal(10**6),
    "G": Decimal(10**9),
    "T": Decimal(10**12),
    "P": Decimal(10**15),
    "E": Decimal(10**18),
}


#: Kubernetes stores a quantity in an int64 of its smallest unit; anything this large is not a
#: quantity the API server would accept, and bounding it keeps sums and their strings small.
_LIMIT = Decimal(2**63)


def parse_quantity(value: Any) -> Decimal | None:
    """The quantity's value in base units, None when it is not a quantity we understand.

    Total: NaN, infinities, huge exponents ("1e999999999") and anything else odd give None.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _bounded(_number(str(value), Decimal(1)))
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    for suffix, factor in _BINARY.items():
        if text.endswith(suffix):
            return _bounded(_number(text[: -len(suffix)], Decimal(factor)))
    if text[-1] in _DECIMAL and text[-1] != "":
        return _bounded(_number(text[:-1], _DECIMAL[text[-1]]))
    return _bounded(_number(text, Decimal(1)))


def _number(text: str, factor: Decimal) -> Decimal | None:
    try:
        return Decimal(text) * factor
    except ArithmeticError:  # InvalidOperation, Overflow, ...
        return None


def _bounded(amount: Decimal | None) -> Decimal | None:
    if amount is None or not amount.is_finite() or abs(amount) >= _LIMIT:
        return None
    return amount


def format_quantity(value: Decimal) -> str:
    """A plain decimal string without exponent or trailing zeros."""
    text = format(value.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def add_requests(total: dict[str, Decimal], resources: Any, times: int) -> None:
    """Add `times` copies of `resources` into `total` (skipping unparseable values)."""
    if not isinstance(resources, dict):
        return
    for name, raw in resources.items():
        amount = parse_quantity(raw)
        if amount is not None:
            total[name] = total.get(name, Decimal(0)) + amount * times

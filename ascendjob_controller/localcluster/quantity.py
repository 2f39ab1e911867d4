"""Kubernetes resource quantities ("500m", "1Gi", "2"), read as exact decimals.

The QoS class compares requests with limits ("1" equals "1000m"), so quantities are
compared by value, never as strings. An unreadable quantity reads as None: the caller
treats it as absent instead of failing a write.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([a-zA-Z]*)$")


def parse(value: Any) -> Decimal | None:
    """The value of a quantity (a string or a JSON number), or None when unreadable."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return Decimal(str(value))
    if not isinstance(value, str):
        return None
    m = _QUANTITY.match(value.strip())
    if m is None or m.group(2) not in _SUFFIXES:
        return None
    number, suffix = m.groups()
    if suffix and ("e" in number.lower()):
        return None
    try:
        return Decimal(number) * _SUFFIXES[suffix]
    except InvalidOperation:
        return None

"""jsoncodec: orjson's speed, with exactly the documents the standard library gives."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ascendjob_controller.kube import jsoncodec

BIG = 123456789012345678901234567890


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 1, "b": [1.5, "x", null, true]}',
        b'{"replicas": 123456789012345678901234567890}',  # beyond int64: orjson would say float
        b'{"n": 9223372036854775807, "m": -9223372036854775808}',
        b'{"a": NaN, "b": Infinity}',  # json accepts them, orjson refuses
        b'{"s": "\\ud800"}',  # a lone surrogate
        '{"name": "caf\u00e9"}',
    ],
)
def test_loads_gives_what_json_gives(raw: bytes | str) -> None:
    got, want = jsoncodec.loads(raw), json.loads(raw)
    assert repr(got) == repr(want)  # repr: 1 != 1.0 in kind, NaN compares unequal


def test_a_big_integer_stays_an_integer() -> None:
    assert jsoncodec.loads(b'{"a": %d}' % BIG) == {"a": BIG}
    assert type(jsoncodec.loads(b'{"a": %d}' % BIG)["a"]) is int


def test_malformed_json_raises_value_error() -> None:
    with pytest.raises(ValueError):
        jsoncodec.loads(b"{bad")


@pytest.mark.parametrize(
    "obj",
    [{"a": BIG}, {1: "non-string key"}, {"a": [1, 2.5, None, True, "x"]}, ("tuple", 1)],
)
def test_dumps_encodes_what_json_encodes(obj: Any) -> None:
    assert json.loads(jsoncodec.dumps(obj)) == json.loads(json.dumps(obj))


def test_nan_and_infinity_become_null() -> None:
    """JSON cannot carry them (json.dumps writes NaN/Infinity, which the API server refuses)."""
    assert jsoncodec.dumps({"x": math.nan, "y": math.inf}) == b'{"x":null,"y":null}'


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(json_values)
def test_round_trip_is_lossless(value: Any) -> None:
    assert repr(jsoncodec.loads(jsoncodec.dumps(value))) == repr(json.loads(json.dumps(value)))

"""fastjson gives exactly what json gives, whatever the input (it is only faster)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendjob_controller.localcluster import fastjson

CASES = [
    b'{"a":1,"b":[1,2.5,"x"],"c":null,"d":true}',
    b"123456789012345678901234567890",  # beyond int64: orjson alone would give a float
    b'{"n":-9223372036854775809}',
    b'{"n":18446744073709551616}',
    b'{"s":"1234567890123456789012"}',  # a long digit run in a string: slow path, same value
    b"NaN",
    b'{"x":Infinity,"y":-Infinity}',
    b'"\\ud800"',  # a lone surrogate
    b'{"a":1,"a":2}',  # the last duplicate wins in both
    b"-0",
    b'"\xe2\x80\xa8 unicode \xf0\x9f\x98\x80"',
    b"1e16",
]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("raw", CASES)
def test_loads_matches_the_standard_decoder(raw: bytes) -> None:
    assert _same(fastjson.loads(raw), json.loads(raw))
    assert _same(fastjson.loads(raw.decode("utf-8", "surrogatepass")), json.loads(raw))


@pytest.mark.parametrize("raw", [b"", b"{", b'{"a":}', b"[1,]"])
def test_invalid_json_raises_what_json_raises(raw: bytes) -> None:
    with pytest.raises(json.JSONDecodeError):
        fastjson.loads(raw)


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(deadline=None)
@given(json_values)
def test_any_document_round_trips_as_with_json(value: Any) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    assert _same(fastjson.loads(raw), json.loads(raw))


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ({"a": [1, {"b": "c"}]}, {"a": [1, {"b": "c"}]}, True),
        ({"a": 1}, {"a": 1.0}, False),  # equal to Python, another JSON document
        ({"a": True}, {"a": 1}, False),
        ([0], [False], False),
        ({"a": 1}, {"a": 2}, False),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, False),  # unsure: the caller compares slowly
        ({"n": 2**70}, {"n": 2**70}, False),  # beyond orjson: unsure
    ],
)
def test_identical_tells_types_apart_and_is_never_wrongly_true(a: Any, b: Any, same: bool) -> None:
    assert fastjson.identical(a, b) is same


def _std_dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


DUMPS_CASES: list[Any] = [
    {"a": 1, "b": [1, 2.5, "x"], "c": None, "d": True},
    {"n": 2**70, "m": -(2**64)},  # beyond orjson
    {1: "non-string key", "b": 2},
    {"s": 'quote " backslash \\ newline \n tab \t \x00 \x1f \x7f \u2028 é 😀'},
    {"null inside a string": "null", "e-": "1e-5"},  # false alarms: same bytes either way
    [True, False, 0, 1],
    {"uid": "c15e-4a3b", "tail": "3e-4", "empty": {}, "list": []},
]


@pytest.mark.parametrize("value", DUMPS_CASES)
def test_dumps_gives_the_standard_encoders_bytes(value: Any) -> None:
    assert fastjson.dumps(value) == _std_dumps(value)


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (1e-05, b"0.00001"),  # json: 1e-05; Go's encoding/json: 0.00001
        (1e-07, b"1e-7"),  # json: 1e-07; Go: 1e-7
        (0.0001, b"0.0001"),
        (2.5, b"2.5"),
        (-0.0, b"-0.0"),
        (1e16, b"1e+16"),
    ],
)
def test_floats_keep_their_value_in_orjsons_notation(value: float, written: bytes) -> None:
    assert fastjson.dumps([value]) == b"[" + written + b"]"
    assert json.loads(fastjson.dumps(value)) == value


def test_dumps_writes_nan_and_infinity_as_json_null() -> None:
    # Not what json.dumps writes (NaN, Infinity: not JSON); the server refuses them on input.
    value = {"nan": float("nan"), "inf": float("inf"), "minus": float("-inf"), "n": None}
    assert fastjson.dumps(value) == b'{"nan":null,"inf":null,"minus":null,"n":null}'
    assert json.loads(fastjson.dumps(value)) == {"nan": None, "inf": None, "minus": None, "n": None}


def test_dumps_raises_what_json_raises_for_a_lone_surrogate() -> None:
    with pytest.raises(UnicodeEncodeError):
        _std_dumps({"s": "\ud800"})
    with pytest.raises(UnicodeEncodeError):
        fastjson.dumps({"s": "\ud800"})


def _documents(floats: bool) -> st.SearchStrategy[Any]:
    leaves = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**80), max_value=2**80)
        | st.text(alphabet=st.characters(blacklist_categories=["Cs"]))
    )
    if floats:
        leaves = leaves | st.floats(allow_nan=False, allow_infinity=False)
    return st.recursive(
        leaves,
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
        ),
        max_leaves=20,
    )


@settings(deadline=None)
@given(_documents(floats=False))
def test_dumps_of_any_document_without_floats_is_byte_for_byte_the_standard(value: Any) -> None:
    assert fastjson.dumps(value) == _std_dumps(value)


@settings(deadline=None)
@given(_documents(floats=True))
def test_dumps_of_any_document_reads_back_as_the_same_values(value: Any) -> None:
    assert _same(json.loads(fastjson.dumps(value)), value)


@pytest.mark.parametrize("raw", [b'{"a":NaN}', b"[Infinity]", b'{"b":[1,-Infinity]}'])
def test_loads_hands_every_constant_to_parse_constant(raw: bytes) -> None:
    seen: list[str] = []

    def refuse(constant: str) -> Any:
        seen.append(constant)
        raise ValueError(constant)

    with pytest.raises(ValueError):
        fastjson.loads(raw, parse_constant=refuse)
    assert len(seen) == 1


def test_loads_without_constants_never_asks_parse_constant() -> None:
    def refuse(constant: str) -> Any:
        raise AssertionError(constant)

    assert fastjson.loads(b'{"a":[1,2.5,"NaN",null]}', parse_constant=refuse) == {
        "a": [1, 2.5, "NaN", None]
    }

"""The local cluster refuses a body nested deeper than Go's decoder takes, in Go's words
(`envelope.nesting_error`); tests/integration/localcluster/test_bad_input.py sends them."""

from __future__ import annotations

import pytest

from ascendjob_controller.localcluster.envelope import nesting_error


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        (b'{"a":' * 9_999 + b"1" + b"}" * 9_999, None),
        (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, None),
        (b'{"a":' * 10_001 + b"1" + b"}" * 10_001, "invalid character '{' exceeded max depth"),
        (b"{" + b'"a":[' * 10_000 + b"1" + b"]" * 10_000 + b"}",
         "invalid character '[' exceeded max depth"),
        # Brackets inside strings are text, escaped quotes included, however many.
        (b'{"s":"' + b"{[" * 20_000 + b'"}', None),
        (b'{"s":"\\"' + b"{" * 20_000 + b'"}', None),
        # Siblings are not nesting: 20,000 objects side by side are two levels deep.
        (b"[" + b",".join([b"{}"] * 20_000) + b"]", None),
    ],
)  # fmt: skip
def test_a_body_deeper_than_gos_limit_gets_gos_error(raw: bytes, error: str | None) -> None:
    assert nesting_error(raw) == error

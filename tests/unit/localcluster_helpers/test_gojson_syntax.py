"""Go's encoding/json scanner errors, as `gojson_syntax` words them.

Every expected message below is what kube-apiserver v1.37 answered for the same body, POSTed
as an AscendJob and (some) as a ConfigMap: its 400 quotes `json.Unmarshal`'s syntax error.
"""

from __future__ import annotations

import pytest

from ascendjob_controller.localcluster.gojson_syntax import MAX_DEPTH, quote_char, syntax_error

CASES = [
    (b'{"a" 1}', "invalid character '1' after object key"),
    (b'{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
    (b'{"a":[1 2]}', "invalid character '2' after array element"),
    (b'{"a":tru}', "invalid character '}' in literal true (expecting 'e')"),
    (b'{"a":tx}', "invalid character 'x' in literal true (expecting 'r')"),
    (b'{"a":fals}', "invalid character '}' in literal false (expecting 'e')"),
    (b'{"a":nul}', "invalid character '}' in literal null (expecting 'l')"),
    (b'{"a":"\x01"}', "invalid character '\\x01' in string literal"),
    (b'{"a":"x\ty"}', "invalid character '\\t' in string literal"),
    (b'{"a":"\n"}', "invalid character '\\n' in string literal"),
    (b'{"a":"\\q"}', "invalid character 'q' in string escape code"),
    (b'{"a":"\\u12g4"}', "invalid character 'g' in \\u hexadecimal character escape"),
    (b'{"a":-}', "invalid character '}' in numeric literal"),
    (b'{"a":1.}', "invalid character '}' after decimal point in numeric literal"),
    (b'{"a":1e}', "invalid character '}' in exponent of numeric literal"),
    (b'{"a":1e+}', "invalid character '}' in exponent of numeric literal"),
    (b'{"a":01}', "invalid character '1' after object key:value pair"),
    (b'{"a":1}x', "invalid character 'x' after top-level value"),
    (b'{"a":1} {"b":2}', "invalid character '{' after top-level value"),
    (b'{"a":1}\x00', "invalid character '\\x00' after top-level value"),
    (b'{"a":1}"', "invalid character '\"' after top-level value"),
    (b"{\"a\":1}'", "invalid character '\\'' after top-level value"),
    (b'{"a":1}\\', "invalid character '\\\\' after top-level value"),
    (b'{"a":1} \xc3\xa9', "invalid character '\u00c3' after top-level value"),
    (b'{"a":1}\xc2\x85', "invalid character '\u00c2' after top-level value"),
    (b'{"a":', "unexpected end of JSON input"),
    (b'{"a":"abc', "unexpected end of JSON input"),
    (b'{"a":12', "unexpected end of JSON input"),
    (b'{"a"', "unexpected end of JSON input"),
    (b"   ", "unexpected end of JSON input"),
    (b'{"a":-', "invalid character ' ' in numeric literal"),
    (b"{,}", "invalid character ',' looking for beginning of object key string"),
    (b"{1:2}", "invalid character '1' looking for beginning of object key string"),
    (b"{'a':1}", "invalid character '\\'' looking for beginning of object key string"),
    (b'{"a":1,}', "invalid character '}' looking for beginning of object key string"),
    (b'{"a":,}', "invalid character ',' looking for beginning of value"),
    (b'{"a":[1,]}', "invalid character ']' looking for beginning of value"),
    (b'{"a":NaN}', "invalid character 'N' looking for beginning of value"),
    (b'{"a":Infinity}', "invalid character 'I' looking for beginning of value"),
    (b'{"a":-Infinity}', "invalid character 'I' in numeric literal"),
    (b'{"a":\xff}', "invalid character '\u00ff' looking for beginning of value"),
    (b'\xef\xbb\xbf{"a":1}', "invalid character '\u00ef' looking for beginning of value"),
]  # fmt: skip


@pytest.mark.parametrize(("raw", "message"), CASES)
def test_a_bad_body_gets_the_go_scanner_s_message(raw: bytes, message: str) -> None:
    assert syntax_error(raw) == message


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":1}\t\n ',
        b'{"a":"\x7f"}',
        b'{"a":[],"b":{},"c":[{}],"d":-0.5e+10,"e":true,"f":false,"g":null}',
        b'{"a":"\\u00e9\\n\\"\\\\\\/"}',
        b'{"a":"\xff\xfe"}',  # Go's scanner does not check UTF-8
        b"12",
        b"[]",
    ],
)
def test_what_go_accepts_has_no_error(raw: bytes) -> None:
    assert syntax_error(raw) is None


def test_nesting_past_go_s_limit_is_an_error() -> None:
    assert syntax_error(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH) is None
    too_deep = b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1)
    assert syntax_error(too_deep) == "invalid character '[' exceeded max depth"


@pytest.mark.parametrize(
    ("byte", "shown"),
    [(0x07, "'\\a'"), (0x1F, "'\\x1f'"), (0x7F, "'\\x7f'"), (0x85, "'\\u0085'"),
     (0xA0, "'\\u00a0'"), (0xAD, "'\\u00ad'"), (0xE9, "'\u00e9'"), (0x41, "'A'")],
)  # fmt: skip
def test_a_byte_is_quoted_as_go_quotes_it(byte: int, shown: str) -> None:
    assert quote_char(byte) == shown


def test_a_yaml_body_is_not_read_by_the_json_scanner() -> None:
    """A YAML body's decode error keeps its own wording: the scanner reads JSON only."""
    from ascendjob_controller.localcluster.errors import ApiError
    from ascendjob_controller.localcluster.server import parse_body

    raw = b"apiVersion: v1\nkind: ConfigMap\ndata: {a: .nan}\n"
    with pytest.raises(ApiError) as caught:
        parse_body(raw, "application/yaml", "ConfigMap")
    assert "json parse error: invalid character 'N' looking for beginning of value" in str(
        caught.value.message
    )
    with pytest.raises(ApiError) as caught:
        parse_body(b'{"a":1} x', "application/json", "ConfigMap")
    assert "invalid character 'x' after top-level value" in str(caught.value.message)

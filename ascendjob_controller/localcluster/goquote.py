"""A string as Go's `%q` prints it, which is how kube-apiserver quotes a bad value in a field
error (`Invalid value: "..."`, `Unsupported value: "..."`).

Printable characters stay as they are, whatever the script (`"マスター"`, emoji); `"` and `\\`
are escaped; the rest become `\\a \\b \\f \\n \\r \\t \\v`, `\\xHH` below U+0080, `\\uHHHH` or
`\\UHHHHHHHH`. Python's `json.dumps` escaped every non-ASCII character instead, so the local
cluster's messages differed from the real server's for any such value (found by `make fuzz`).
"""

from __future__ import annotations

import json
from typing import Any

_NAMED = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(value: str) -> str:
    """strconv.Quote(value). Go's unicode.IsPrint is Python's str.isprintable: letters, marks,
    numbers, punctuation, symbols and the ASCII space."""
    out = ['"']
    for char in value:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char.isprintable():
            out.append(char)
        elif char in _NAMED:
            out.append(_NAMED[char])
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    out.append('"')
    return "".join(out)


_GO_JSON_ESCAPES = (
    ("<", "\\u003c"),
    (">", "\\u003e"),
    ("&", "\\u0026"),
    ("\u2028", "\\u2028"),
    ("\u2029", "\\u2029"),
)


def go_json(value: Any) -> str:
    """Compact JSON with sorted keys and Go's HTML-safe escapes, as `json.Marshal` writes a
    map (kubectl's last-applied annotation; a patched custom resource in a Strict 422)."""
    encoded = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escape in _GO_JSON_ESCAPES:
        encoded = encoded.replace(char, escape)
    return encoded


def go_print(value: Any) -> str:
    """A decoded JSON value as Go's `%+v` prints it after apimachinery's JSON decode (whole
    numbers are int64): `map[a:1 b:[x true <nil>]]`, keys sorted, strings bare. kube-apiserver
    shows a strategic merge patch so in its Strict 422."""
    if isinstance(value, dict):
        items = " ".join(f"{key}:{go_print(value[key])}" for key in sorted(value))
        return f"map[{items}]"
    if isinstance(value, list):
        return "[" + " ".join(go_print(item) for item in value) + "]"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 2**63:
            return str(int(value))
        return _go_float_v(value)
    return str(value)


def _go_float_v(value: float) -> str:
    """float64 under `%v`: shortest digits, an exponent below 1e-4 or from 1e21 (`1e-05`)."""
    size = abs(value)
    if size != 0 and (size < 1e-4 or size >= 1e21):
        mantissa, _, exponent = repr(value).partition("e")
        if not exponent:  # repr wrote it plainly (1e-05 is written 1e-05, 0.0001 plainly)
            mantissa, _, exponent = f"{value:e}".partition("e")
        sign, digits = exponent[0], exponent[1:].lstrip("0")
        return f"{mantissa}e{sign}{digits.rjust(2, '0')}"
    return repr(value)


__all__ = ["go_json", "go_print", "go_quote"]

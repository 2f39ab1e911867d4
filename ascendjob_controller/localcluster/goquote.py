"""A string as Go's `%q` prints it, which is how kube-apiserver quotes a bad value in a field
error (`Invalid value: "..."`, `Unsupported value: "..."`).

Printable characters stay as they are, whatever the script (`"マスター"`, emoji); `"` and `\\`
are escaped; the rest become `\\a \\b \\f \\n \\r \\t \\v`, `\\xHH` below U+0080, `\\uHHHH` or
`\\UHHHHHHHH`. Python's `json.dumps` escaped every non-ASCII character instead, so the local
cluster's messages differed from the real server's for any such value (found by `make fuzz`).
"""

from __future__ import annotations

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


__all__ = ["go_quote"]

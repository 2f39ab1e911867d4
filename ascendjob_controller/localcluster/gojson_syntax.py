"""The first syntax error in a JSON body, in the words of Go's encoding/json scanner.

kube-apiserver reads a body's apiVersion and kind with Go's `json.Unmarshal`, which checks the
whole input with its scanner before decoding anything; a 400 then quotes the scanner's error
("invalid character '{' after top-level value", "unexpected end of JSON input"). Python's
decoders stop at other places and say other things, so the local cluster runs this scanner
over a body they refused (only then: the common body never pays for it).

The scanner works on bytes, as Go's does: a byte that is not ASCII is shown as the Latin-1
character of that byte value (Go's `quoteChar(c)` quotes `string(rune(c))`), so a UTF-8 `é`
after the value is "invalid character 'Ã'". It does not check UTF-8 and knows no NaN or
Infinity (both are an invalid character, as in Go). Nesting past `MAX_DEPTH` is an error too.
"""

from __future__ import annotations

from collections.abc import Callable

#: encoding/json's maxNestingDepth.
MAX_DEPTH = 10_000

_SPACE = frozenset(b" \t\r\n")
_DIGITS = frozenset(b"0123456789")
_HEX = frozenset(b"0123456789abcdefABCDEF")
_ESCAPES = frozenset(b'bfnrt\\/"')
_NAMED = {0x07: "\\a", 0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x0B: "\\v"}

# What the enclosing container expects next (Go's parseState values).
_OBJECT_KEY, _OBJECT_VALUE, _ARRAY_VALUE = range(3)


class _Found(Exception):
    """The scanner's error: raised at the first bad byte."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def quote_char(c: int) -> str:
    """Go's `quoteChar`: a byte in single quotes, escaped as `strconv.Quote` escapes it."""
    if c == 0x27:
        return "'\\''"
    if c == 0x22:
        return "'\"'"
    if c in _NAMED:
        return f"'{_NAMED[c]}'"
    if c < 0x20 or c == 0x7F:
        return f"'\\x{c:02x}'"
    if 0x80 <= c <= 0xA0 or c == 0xAD:  # not printable in Go (C1 controls, NBSP, soft hyphen)
        return f"'\\u{c:04x}'"
    if c == 0x5C:
        return "'\\\\'"
    return f"'{chr(c)}'"


def _error(c: int, context: str) -> _Found:
    return _Found(f"invalid character {quote_char(c)} {context}")


class _Scanner:
    """Go's scanner as a byte-at-a-time state machine (encoding/json/scanner.go's states)."""

    def __init__(self) -> None:
        self.stack: list[int] = []
        self.step: Callable[[int], None] = self.begin_value
        self.done = False  # a whole top-level value was read

    # -- values ---------------------------------------------------------------------------
    def begin_value(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x7B:  # {
            self._push(c, _OBJECT_KEY)
            self.step = self.begin_string_or_empty
        elif c == 0x5B:  # [
            self._push(c, _ARRAY_VALUE)
            self.step = self.begin_value_or_empty
        elif c == 0x22:
            self.step = self.in_string
        elif c == 0x2D:  # -
            self.step = self.neg
        elif c == 0x30:
            self.step = self.zero
        elif c in _DIGITS:
            self.step = self.integer
        elif c in (0x74, 0x66, 0x6E):  # t f n
            self.step = self._literal({0x74: "true", 0x66: "false", 0x6E: "null"}[c], 1)
        else:
            raise _error(c, "looking for beginning of value")

    def _push(self, c: int, state: int) -> None:
        self.stack.append(state)
        if len(self.stack) > MAX_DEPTH:
            raise _error(c, "exceeded max depth")

    def begin_value_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x5D:  # ]
            self.end_value(c)
            return
        self.begin_value(c)

    def begin_string_or_empty(self, c: int) -> None:
        if c in _SPACE:
            return
        if c == 0x7D:  # }
            self.stack[-1] = _OBJECT_VALUE
            self.end_value(c)
            return
        self.begin_string(c)

    def begin_string(self, c: int) -> None:
        if c in _SPACE:
            return
        if c != 0x22:
            raise _error(c, "looking for beginning of object key string")
        self.step = self.in_string

    def end_value(self, c: int) -> None:
        if not self.stack:
            self.done = True
            self.step = self.end_top
            self.end_top(c)
            return
        if c in _SPACE:
            self.step = self.end_value
            return
        state = self.stack[-1]
        if state == _OBJECT_KEY:
            if c != 0x3A:  # :
                raise _error(c, "after object key")
            self.stack[-1] = _OBJECT_VALUE
            self.step = self.begin_value
        elif state == _OBJECT_VALUE:
            if c == 0x2C:  # ,
                self.stack[-1] = _OBJECT_KEY
                self.step = self.begin_string
            elif c == 0x7D:
                self._pop(c)
            else:
                raise _error(c, "after object key:value pair")
        else:
            if c == 0x2C:
                self.step = self.begin_value
            elif c == 0x5D:
                self._pop(c)
            else:
                raise _error(c, "after array element")

    def _pop(self, c: int) -> None:
        self.stack.pop()
        self.step = self.end_value
        if not self.stack:
            self.done = True
            self.step = self.end_top

    def end_top(self, c: int) -> None:
        if c not in _SPACE:
            raise _error(c, "after top-level value")

    # -- strings --------------------------------------------------------------------------
    def in_string(self, c: int) -> None:
        if c == 0x22:
            self.step = self.end_value
        elif c == 0x5C:
            self.step = self.in_string_escape
        elif c < 0x20:
            raise _error(c, "in string literal")

    def in_string_escape(self, c: int) -> None:
        if c in _ESCAPES:
            self.step = self.in_string
        elif c == 0x75:  # u
            self.step = self._hex(4)
        else:
            raise _error(c, "in string escape code")

    def _hex(self, left: int) -> Callable[[int], None]:
        def step(c: int) -> None:
            if c not in _HEX:
                raise _error(c, "in \\u hexadecimal character escape")
            self.step = self.in_string if left == 1 else self._hex(left - 1)

        return step

    # -- numbers --------------------------------------------------------------------------
    def neg(self, c: int) -> None:
        if c == 0x30:
            self.step = self.zero
        elif c in _DIGITS:
            self.step = self.integer
        else:
            raise _error(c, "in numeric literal")

    def integer(self, c: int) -> None:
        if c in _DIGITS:
            return
        self.zero(c)

    def zero(self, c: int) -> None:
        if c == 0x2E:  # .
            self.step = self.dot
        elif c in (0x65, 0x45):  # e E
            self.step = self.exponent
        else:
            self.end_value(c)

    def dot(self, c: int) -> None:
        if c not in _DIGITS:
            raise _error(c, "after decimal point in numeric literal")
        self.step = self.fraction

    def fraction(self, c: int) -> None:
        if c in _DIGITS:
            return
        if c in (0x65, 0x45):
            self.step = self.exponent
        else:
            self.end_value(c)

    def exponent(self, c: int) -> None:
        if c in (0x2B, 0x2D):  # + -
            self.step = self.exponent_sign
        else:
            self.exponent_sign(c)

    def exponent_sign(self, c: int) -> None:
        if c not in _DIGITS:
            raise _error(c, "in exponent of numeric literal")
        self.step = self.exponent_digits

    def exponent_digits(self, c: int) -> None:
        if c not in _DIGITS:
            self.end_value(c)

    # -- true, false, null ----------------------------------------------------------------
    def _literal(self, word: str, at: int) -> Callable[[int], None]:
        def step(c: int) -> None:
            if c != ord(word[at]):
                raise _error(c, f"in literal {word} (expecting {quote_char(ord(word[at]))})")
            self.step = self.end_value if at + 1 == len(word) else self._literal(word, at + 1)

        return step


def syntax_error(raw: bytes) -> str | None:
    """Go's message for the first syntax error in `raw`; None when Go's scanner accepts it."""
    scanner = _Scanner()
    try:
        for c in raw:
            scanner.step(c)
        if scanner.done:
            return None
        scanner.step(0x20)  # Go's eof(): a space ends a number or a literal cleanly
    except _Found as found:
        return found.message
    return None if scanner.done else "unexpected end of JSON input"


__all__ = ["MAX_DEPTH", "quote_char", "syntax_error"]

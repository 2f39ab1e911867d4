"""Go's `time.Parse` for the two layouts Kubernetes objects use, and what the server stores.

kube-apiserver decodes a time field with the field type's `UnmarshalJSON`: metav1.Time with
`time.Parse(time.RFC3339, s)`, metav1.MicroTime (an Event's `eventTime`, a series'
`lastObservedTime`) with the layout `2006-01-02T15:04:05.000000Z07:00`. A string that does
not parse is a 400 naming Go's own error. One that parses is stored as the field type's
`MarshalJSON` writes it back: in UTC, Time to the second, MicroTime to the microsecond,
both truncated (`2026-01-01T00:00:00.5+01:00` is stored as `2025-12-31T23:00:00Z`), and the
zero instant (`0001-01-01T00:00:00Z`) as null.

Go's general parser is more lenient than RFC 3339 in places this models, each checked
against kube-apiserver v1.37.2: a comma before the fraction, an hour of one digit, a zone
offset of up to 24 hours and 60 minutes; the day is checked against its month last, after
the zone. A MicroTime needs exactly six digits of fraction.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"

#: The layouts' elements after the date: (element, Go's range word, upper bound excluded).
_CLOCK = (("15", "hour", 24), ("04", "minute", 60), ("05", "second", 60))
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)


class TimeError(ValueError):
    """`time.Parse`'s error, worded as Go's ParseError.Error() words it."""


@dataclass(frozen=True)
class Instant:
    """A parsed time: its UTC seconds since 0000-01-01 and nanoseconds."""

    seconds: int
    nanos: int


#: The form the server writes (UTC, no zone offset, the layout's own fraction): most times
#: clients send are in it already, and need no parsing to check or to store.
_CANONICAL = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{6})?Z"
)


@functools.lru_cache(maxsize=4096)
def _canonical(value: str, micro: bool) -> bool:
    """`value` is a valid time already in the form `format_utc` writes (remembered: the same
    few stamps come in again and again, a clock's seconds)."""
    match = _CANONICAL.fullmatch(value)
    if match is None or (match.group(7) is not None) != micro:
        return False
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    if not 1 <= month <= 12:
        return False
    return 1 <= day <= _days_in(month, year) and hour < 24 and minute < 60 and second < 60


def error(value: str, micro: bool = False) -> str | None:
    """Go's error for a time string that does not parse, else None."""
    if _canonical(value, micro):
        return None
    try:
        parse(value, micro)
    except TimeError as failure:
        return str(failure)
    return None


def _quote(text: str) -> str:
    """The time package's own quote(): bytes of non-ASCII and control characters as `\\xHH`
    (not strconv.Quote's forms), `"` and `\\` escaped."""
    out = ['"']
    for char in text:
        if char >= "\x80" or char < " ":
            out.extend(f"\\x{byte:02x}" for byte in char.encode("utf-8", "surrogatepass"))
        elif char in '"\\':
            out.append("\\" + char)
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _cannot(value: str, layout: str, rest: str, element: str) -> TimeError:
    return TimeError(
        f"parsing time {_quote(value)} as {_quote(layout)}: cannot parse {_quote(rest)} as "
        f"{_quote(element)}"
    )


def _out_of_range(value: str, what: str) -> TimeError:
    return TimeError(f"parsing time {_quote(value)}: {what} out of range")


def _atoi(text: str) -> int | None:
    """Go's time.atoi: an optional sign, then digits (none is 0); None when it fails."""
    negative = text[:1] == "-"
    digits = text[1:] if text[:1] in ("-", "+") else text
    if digits and not (digits.isascii() and digits.isdigit()):
        return None
    number = int(digits or "0")
    return -number if negative else number


def _digit(text: str, i: int) -> bool:
    return len(text) > i and "0" <= text[i] <= "9"


def _getnum(text: str, fixed: bool) -> tuple[int, str] | None:
    """Go's getnum: one or two leading digits (exactly two when `fixed`)."""
    if not _digit(text, 0):
        return None
    if not _digit(text, 1):
        return None if fixed else (int(text[0]), text[1:])
    return int(text[:2]), text[2:]


def parse(value: str, micro: bool = False) -> Instant:
    """`time.Parse(RFC3339 or RFC3339Micro, value)`; raises TimeError as Go would fail."""
    layout = RFC3339_MICRO if micro else RFC3339
    rest = value
    if len(rest) < 4 or not _digit(rest, 0) or (year := _atoi(rest[:4])) is None:
        raise _cannot(value, layout, rest, "2006")
    rest = rest[4:]
    date: list[int] = []
    for element in ("01", "02"):
        if not rest.startswith("-"):
            raise _cannot(value, layout, rest, "-")
        got = _getnum(rest[1:], fixed=True)
        if got is None:
            raise _cannot(value, layout, rest[1:], element)
        number, rest = got
        if element == "01" and not 1 <= number <= 12:
            raise _out_of_range(value, "month")
        date.append(number)
    month, day = date
    clock: list[int] = []
    for (element, what, bound), separator in zip(_CLOCK, ("T", ":", ":"), strict=True):
        if not rest.startswith(separator):
            raise _cannot(value, layout, rest, separator)
        got = _getnum(rest[1:], fixed=element != "15")
        if got is None:
            raise _cannot(value, layout, rest[1:], element)
        number, rest = got
        if number >= bound:
            raise _out_of_range(value, what)
        clock.append(number)
    nanos, rest = _fraction(value, layout, rest, micro)
    offset, rest = _zone(value, layout, rest)
    if rest:
        raise TimeError(f"parsing time {_quote(value)}: extra text: {_quote(rest)}")
    if not 1 <= day <= _days_in(month, year):
        raise _out_of_range(value, "day")
    hour, minute, second = clock
    days = _days_from_civil(year, month, day)
    return Instant(days * 86400 + hour * 3600 + minute * 60 + second - offset, nanos)


def _fraction(value: str, layout: str, rest: str, micro: bool) -> tuple[int, str]:
    """The fractional second: exactly `.000000` in the MicroTime layout; in RFC 3339's, any
    number of digits after a period or comma, read only if there are some."""
    if micro:
        if len(rest) < 7 or rest[0] not in ".," or (number := _atoi(rest[1:7])) is None:
            raise _cannot(value, layout, rest, ".000000")
        if number < 0:
            raise _out_of_range(value, "fractional second")
        return number * 1000, rest[7:]
    if len(rest) >= 2 and rest[0] in ".," and _digit(rest, 1):
        end = 1
        while _digit(rest, end):
            end += 1
        digits = rest[1:end][:9]
        return int(digits.ljust(9, "0")), rest[end:]
    return 0, rest


def _zone(value: str, layout: str, rest: str) -> tuple[int, str]:
    """`Z07:00`: a Z, or a sign and hh:mm (up to 24 hours and 60 minutes); seconds east."""
    if rest.startswith("Z"):
        return 0, rest[1:]
    if len(rest) < 6 or rest[3] != ":":
        raise _cannot(value, layout, rest, "Z07:00")
    hours = _getnum(rest[1:3], fixed=True)
    minutes = _getnum(rest[4:6], fixed=True) if hours is not None else None
    hour, minute = (hours or (0, ""))[0], (minutes or (0, ""))[0]
    # Go notes a range error before the sign and the digits' errors, and reports it first;
    # the minute's overwrites the hour's.
    if minute > 60:
        raise _out_of_range(value, "time zone offset minute")
    if hour > 24:
        raise _out_of_range(value, "time zone offset hour")
    if hours is None or minutes is None or rest[0] not in "+-":
        raise _cannot(value, layout, rest, "Z07:00")
    offset = (hour * 60 + minute) * 60
    return (-offset if rest[0] == "-" else offset), rest[6:]


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def _days_in(month: int, year: int) -> int:
    return 29 if month == 2 and _leap(year) else _DAYS_IN_MONTH[month - 1]


def _days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 0000-03-01 in the proleptic Gregorian calendar (year 0 and before too,
    which Python's datetime cannot hold and Go's time can)."""
    year -= month <= 2
    era = year // 400
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era


def _civil_from_days(days: int) -> tuple[int, int, int]:
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (
        day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096
    ) // 365
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    shifted = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * shifted + 2) // 5 + 1
    month = shifted + (3 if shifted < 10 else -9)
    year = year_of_era + era * 400 + (month <= 2)
    return year, month, day


#: Go's zero time.Time, 0001-01-01T00:00:00Z, which metav1's types write as null.
_ZERO = Instant(_days_from_civil(1, 1, 1) * 86400, 0)


def format_utc(instant: Instant, micro: bool = False) -> str | None:
    """The instant as metav1.Time (`micro` False) or MicroTime writes it; None for Go's zero
    time, which both write as null."""
    if instant == _ZERO:
        return None
    days, seconds = divmod(instant.seconds, 86400)
    year, month, day = _civil_from_days(days)
    hour, seconds = divmod(seconds, 3600)
    minute, second = divmod(seconds, 60)
    shown_year = f"-{-year:04d}" if year < 0 else f"{year:04d}"
    text = f"{shown_year}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}"
    if micro:
        text += f".{instant.nanos // 1000:06d}"
    return text + "Z"


def stored(value: str, micro: bool = False) -> str | None:
    """What the server stores for a time string that parses: `format_utc(parse(value))`."""
    if _canonical(value, micro):
        return None if value in _ZERO_TEXT else value
    return format_utc(parse(value, micro), micro)


_ZERO_TEXT = ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000Z")

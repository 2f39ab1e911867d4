"""gotime: Go's time.Parse for RFC 3339 and MicroTime, and what the server stores.

Every row was sent to kube-apiserver v1.37.2 as an Event's time and is its answer."""

from __future__ import annotations

import pytest

from ascendjob_controller.localcluster import gotime

TIME = '"2006-01-02T15:04:05Z07:00"'
MICRO = '"2006-01-02T15:04:05.000000Z07:00"'


@pytest.mark.parametrize(
    ("value", "micro", "stored"),
    [
        ("2026-01-01T00:00:00.123Z", False, "2026-01-01T00:00:00Z"),
        ("2026-01-01T05:00:00+03:30", False, "2026-01-01T01:30:00Z"),
        ("2026-01-01T00:00:00.9999999999Z", False, "2026-01-01T00:00:00Z"),
        ("2026-01-01T00:00:00,5Z", False, "2026-01-01T00:00:00Z"),
        ("2026-01-01T00:00:00+05:60", False, "2025-12-31T18:00:00Z"),
        ("0000-01-01T00:00:00Z", False, "0000-01-01T00:00:00Z"),
        ("0001-01-01T00:00:00Z", False, None),
        ("2026-01-01T1:00:00Z", False, "2026-01-01T01:00:00Z"),
        ("2026-01-01T00:00:00.123456+02:00", True, "2025-12-31T22:00:00.123456Z"),
        ("2026-01-01T00:00:00,123456Z", True, "2026-01-01T00:00:00.123456Z"),
        ("2026-01-01T00:00:00.999999-00:00", True, "2026-01-01T00:00:00.999999Z"),
        ("2024-02-29T23:59:59.999999-01:00", True, "2024-03-01T00:59:59.999999Z"),
    ],
)  # fmt: skip
def test_a_time_that_parses_is_stored_in_utc_truncated(
    value: str, micro: bool, stored: str | None
) -> None:
    assert gotime.stored(value, micro) == stored


@pytest.mark.parametrize(
    ("value", "micro", "error"),
    [
        ("2026-01-01T00:00:00Z", True, f'as {MICRO}: cannot parse "Z" as ".000000"'),
        ("2026-01-01T00:00:00.123Z", True, f'as {MICRO}: cannot parse ".123Z" as ".000000"'),
        ("2026-01-01T00:00:00.1234567Z", True, f'as {MICRO}: cannot parse "7Z" as "Z07:00"'),
        ("2026-01-01T00:00:00.12a456Z", True, f'as {MICRO}: cannot parse ".12a456Z" as ".000000"'),
        ("2026-13-01T00:00:00.123456Z", True, ": month out of range"),
        ("", True, f'as {MICRO}: cannot parse "" as "2006"'),
        ("2026-01-01", False, f'as {TIME}: cannot parse "" as "T"'),
        ("2026-02-30T00:00:00Z", False, ": day out of range"),
        ("2026-01-01T00:00:00+25:00", False, ": time zone offset hour out of range"),
        ("2026-01-01T24:00:00Z", False, ": hour out of range"),
        ("2026-01-01T00:00:00z", False, f'as {TIME}: cannot parse "z" as "Z07:00"'),
        ("2026-01-01T00:00:00.5", False, f'as {TIME}: cannot parse "" as "Z07:00"'),
        ("2026-1-01T00:00:00Z", False, f'as {TIME}: cannot parse "1-01T00:00:00Z" as "01"'),
        ("2026-01-01T00:00:00Zjunk", False, ': extra text: "junk"'),
    ],
)  # fmt: skip
def test_a_time_that_does_not_parse_gets_gos_error(value: str, micro: bool, error: str) -> None:
    with pytest.raises(gotime.TimeError) as raised:
        gotime.stored(value, micro)
    assert str(raised.value) == f'parsing time "{value}"{"" if error[0] == ":" else " "}{error}'


def test_non_ascii_is_quoted_byte_by_byte_as_the_time_package_does() -> None:
    with pytest.raises(gotime.TimeError) as raised:
        gotime.parse('日"')
    assert str(raised.value).startswith('parsing time "\\xe6\\x97\\xa5\\"" as ')


def test_the_calendar_round_trips_every_day_of_four_centuries() -> None:
    for days in range(-146097, 146097 * 2, 7):
        year, month, day = gotime._civil_from_days(days)
        assert gotime._days_from_civil(year, month, day) == days

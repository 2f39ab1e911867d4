"""format_time keeps the last second's text: the same stamps as astimezone + strftime.

Compared with the plain formula on any moment (aware in any offset, naive in a local zone
that is not UTC, before 1970, on a second's edges), repeated and interleaved, so a stale
cached second would show.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ascendjob_controller.job.types import format_time


def plain(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
def shanghai(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A local zone eight hours from UTC, for naive moments."""
    monkeypatch.setenv("TZ", "Asia/Shanghai")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


EDGES = [
    datetime(2026, 12, 6, 11, 0, 0, tzinfo=UTC),
    datetime(2026, 12, 6, 11, 0, 0, 999_999, tzinfo=UTC),  # the same second
    datetime(2026, 12, 6, 11, 0, 1, tzinfo=UTC),  # the next one
    datetime(2026, 12, 6, 19, 0, 1, tzinfo=timezone(timedelta(hours=8))),  # it again, at +08:00
    datetime(1969, 12, 31, 23, 59, 59, 500_000, tzinfo=UTC),  # before the epoch: floor, not 0
    datetime(1970, 1, 1, tzinfo=UTC),
    datetime(2026, 12, 6, 11, 0, 1),  # naive: local time
]


def test_edges_in_order_and_back(shanghai: None) -> None:
    for moment in [*EDGES, *reversed(EDGES), *EDGES]:
        assert format_time(moment) == plain(moment), moment


@settings(max_examples=400, deadline=None)
@given(
    moments=st.lists(
        st.datetimes(
            min_value=datetime(1900, 1, 2),
            max_value=datetime(2200, 1, 1),
            timezones=st.none()
            | st.sampled_from([UTC, timezone(timedelta(hours=-5, minutes=-30))]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_moments_in_any_order(moments: list[datetime]) -> None:
    for moment in moments + moments:
        assert format_time(moment) == plain(moment), moment

"""RFC 3339 written as metav1.Time and metav1.MicroTime write it (respread.core.timestamps)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from respread.core.timestamps import format_rfc3339, parse_rfc3339


def test_whole_seconds_in_utc() -> None:
    assert format_rfc3339(1_800_000_000.75) == "2027-01-15T08:00:00Z"


def test_microtime_is_rfc3339_with_microseconds_in_utc() -> None:
    assert format_rfc3339(1_800_000_000.25, micro=True) == "2027-01-15T08:00:00.250000Z"


@given(st.integers(min_value=0, max_value=253_402_300_799))  # up to 9999-12-31T23:59:59Z
def test_whole_seconds_read_back_as_written(seconds: int) -> None:
    assert parse_rfc3339(format_rfc3339(seconds)) == seconds


@given(st.integers(min_value=0, max_value=4_102_444_800 * 10**6))  # microseconds, to 2100
def test_microtimes_read_back_to_the_microsecond(micros: int) -> None:
    wall = micros / 10**6
    assert abs(parse_rfc3339(format_rfc3339(wall, micro=True)) - wall) < 1e-6

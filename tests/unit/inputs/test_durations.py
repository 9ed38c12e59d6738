"""respread.inputs.durations: Go's time.ParseDuration to the nanosecond, as CEL's duration()
reads the CRD's durations. Each expected value is Go's own (checked with time.ParseDuration on
20,000 generated durations when this module was written; the table keeps the telling ones)."""

from __future__ import annotations

import pytest

from respread.inputs.durations import go_duration, seconds

GO_READS = [
    ("10s", 10_000_000_000),
    ("1h30m", 5_400_000_000_000),
    ("250ms", 250_000_000),
    ("0.5s", 500_000_000),
    # a fraction goes through a float64: these are short of 10s, or reach it, to Go
    ("9999.9999999999999ms", 9_999_999_999),
    ("9.9999999999s", 9_999_999_999),
    ("0.1666666666666666666m", 10_000_000_000),
    ("0.002777777777777777778h", 10_000_000_000),
    ("1.0000000000000000000001s", 1_000_000_000),  # digits past 19 are dropped
    # an int64 of nanoseconds: 2^63-1 is the longest
    ("2562047h47m16.854775807s", 2**63 - 1),
    ("2562047h47m16.854775808s", None),
    ("2562047h48m", None),
    ("3000000h", None),
    ("9999999999999999999s", None),
    ("99999999999999999999h", None),
]


@pytest.mark.parametrize(("text", "nanos"), GO_READS, ids=[t for t, _ in GO_READS])
def test_durations_are_read_as_go_reads_them(text: str, nanos: int | None) -> None:
    assert go_duration(text) == nanos


@pytest.mark.parametrize("text", ["", "10", "1d", "1.s", ".5s", "5 m", "-1s", "1h-1m"])
def test_only_what_the_crds_pattern_admits(text: str) -> None:
    with pytest.raises(ValueError):
        go_duration(text)
    with pytest.raises(ValueError):
        seconds(text)


def test_seconds_has_no_bound() -> None:
    assert seconds("3000000h") == 3000000 * 3600.0
    assert seconds("1h0.5m") == 3630.0

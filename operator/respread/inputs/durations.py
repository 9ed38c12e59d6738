"""Go durations, read to the nanosecond as Go's time.ParseDuration reads them.

The CRD's rules compare durations with CEL's ``duration()``, which is Go's ParseDuration: an
int64 of nanoseconds, a fraction taken to at most 19 digits and converted through a float64
(``9999.9999999999999ms`` is 9.999999999s, short of 10s, where a float reading of the text makes
it 10s), and an error past 2^63-1 nanoseconds (``2562047h47m16.854775808s`` is exactly 2^63).
Only what the CRD's pattern admits is read: ``([0-9]+(\\.[0-9]+)?(h|ms|m|s))+``.
"""

from __future__ import annotations

import re

INT64_MAX = 2**63 - 1
_SPAN = 2**63  # Go accumulates in a uint64 and refuses what passes 1<<63
_PART = re.compile(r"([0-9]+)(?:\.([0-9]+))?(h|ms|m|s)")
_UNIT_NS = {"h": 3_600_000_000_000, "m": 60_000_000_000, "s": 1_000_000_000, "ms": 1_000_000}


def _leading_int(digits: str) -> int | None:
    """time's leadingInt: None where it overflows (the digits are never converted whole)."""
    value = 0
    for char in digits:
        if value > _SPAN // 10:
            return None
        value = value * 10 + ord(char) - 48
        if value > _SPAN:
            return None
    return value


def _leading_fraction(digits: str) -> tuple[int, float]:
    """time's leadingFraction: the digits it keeps (it stops, without error, where more would
    overflow) and their scale, a float64."""
    value, scale = 0, 1.0
    for char in digits:
        if value > INT64_MAX // 10:
            break
        following = value * 10 + ord(char) - 48
        if following > _SPAN:
            break
        value, scale = following, scale * 10
    return value, scale


def go_duration(text: str) -> int | None:
    """The nanoseconds Go reads in ``text`` (which must match the CRD's pattern), or None where
    Go reports an overflow."""
    total, pos = 0, 0
    for match in _PART.finditer(text):
        if match.start() != pos:
            raise ValueError(f"not a duration the pattern admits: {text!r}")
        pos = match.end()
        whole, fraction, unit = match.group(1), match.group(2) or "", match.group(3)
        nanos = _UNIT_NS[unit]
        value = _leading_int(whole)
        if value is None or value > _SPAN // nanos:
            return None
        value *= nanos
        kept, scale = _leading_fraction(fraction)
        if kept > 0:
            value += int(float(kept) * (float(nanos) / scale))
            if value > _SPAN:
                return None
        total += value
        if total > _SPAN:
            return None
    if pos != len(text) or pos == 0:
        raise ValueError(f"not a duration the pattern admits: {text!r}")
    return total if total <= INT64_MAX else None


def seconds(text: str) -> float:
    """The duration in seconds, for use (no bound: a duration no rule checks may be long)."""
    total, pos = 0.0, 0
    for match in _PART.finditer(text):
        if match.start() != pos:
            raise ValueError(f"not a duration the pattern admits: {text!r}")
        pos = match.end()
        number = float(f"{match.group(1)}.{match.group(2) or '0'}")
        total += number * _UNIT_NS[match.group(3)] / 1e9
    if pos != len(text) or pos == 0:
        raise ValueError(f"not a duration the pattern admits: {text!r}")
    return total

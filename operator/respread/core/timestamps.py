"""RFC 3339 date-times, as the API server writes and reads them (metav1.Time, metav1.MicroTime)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

# date "T" time, optional fraction, then Z or a numeric offset. Lower-case t/z and a space for
# the T are accepted, as RFC 3339 section 5.6 allows.
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]{1,9})?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)


def parse_rfc3339(value: str) -> float:
    """Seconds since the epoch; ValueError (with a short reason) when not an RFC 3339 time."""
    match = _RFC3339.fullmatch(value)
    if match is None:
        raise ValueError("expected an RFC 3339 time such as 2026-11-22T10:00:00Z")
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = match.group(7)
    if match.group(8):
        tz = UTC
    else:
        hours, minutes = int(match.group(10)), int(match.group(11))
        if hours > 23 or minutes > 59:
            raise ValueError("the UTC offset is out of range")
        sign = -1 if match.group(9) == "-" else 1
        tz = timezone(sign * timedelta(hours=hours, minutes=minutes))
    if second == 60:  # a leap second: Go's time.Parse refuses it too
        raise ValueError("second 60 is out of range")
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=tz)
    except ValueError as err:  # 2026-02-30, hour 25, ...
        raise ValueError(f"not a valid date and time ({err})") from None
    micro = float(fraction) if fraction else 0.0
    return moment.timestamp() + micro


def rfc3339_or_none(value: object) -> float | None:
    """Seconds since the epoch, or None where ``value`` is not an RFC 3339 time (a field that
    may be absent or unreadable, and is then simply not known)."""
    if not isinstance(value, str):
        return None
    try:
        return parse_rfc3339(value)
    except ValueError:
        return None


def format_rfc3339(t: float, *, micro: bool = False) -> str:
    """Seconds since the epoch in UTC, as metav1.Time writes them (whole seconds), or with
    ``micro`` as metav1.MicroTime does (microseconds: a Lease's acquire and renew times)."""
    return datetime.fromtimestamp(t, UTC).strftime(_MICRO if micro else _SECONDS)


_SECONDS = "%Y-%m-%dT%H:%M:%SZ"
_MICRO = "%Y-%m-%dT%H:%M:%S.%fZ"

"""Five-field cron expressions, read as cron(8) reads them, and handed to APScheduler unambiguously.

APScheduler's ``CronTrigger.from_crontab`` is not cron: it numbers weekdays from Monday (so
``0`` is Monday, not Sunday, and ``7`` is refused), joins a restricted day of month and day of
week with AND where cron joins them with OR, and reads ``5/10`` as ``5-59/10``. respread parses
the expression itself, with cron's meaning, into the set of values of each field, and gives
APScheduler explicit lists (``fields``), so the two cannot disagree.

Grammar (what the CRD's CEL rule accepts too): a field is a comma-separated list of ``*``,
``*/step``, ``N``, ``N-M`` or ``N-M/step``, with ``N <= M`` and ``step >= 1`` (numbers may be
zero-padded; a step has at most 18 digits after its zeros); months and weekdays may be named
(``jan``..``dec``, ``sun``..``sat``, in any case of ASCII letters); weekday 0 and 7 are Sunday.
When both the day of month and the day of week are restricted (neither starts with ``*``), a
day matches if either does.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass

from respread.core.limits import shown

_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    low: int
    high: int
    names: tuple[tuple[str, int], ...] = ()


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12, tuple((m, i + 1) for i, m in enumerate(_MONTHS))),
    _Field("day of week", 0, 7, tuple((d, i) for i, d in enumerate(_DAYS))),
)

# APScheduler's day_of_week names, Monday first; indexed by cron's weekday (0 and 7: Sunday).
_APS_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun")


_SPACE = re.compile(r"[\t\n\f\r ]+")


class CronError(ValueError):
    """An expression cron would refuse; the message says which field and why."""


@dataclass(frozen=True, slots=True)
class CronSchedule:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday .. 6 = Saturday (7 folded into 0)
    days_restricted: bool  # the day-of-month field does not start with *
    weekdays_restricted: bool

    def triggers(self) -> tuple[dict[str, str], ...]:
        """``CronTrigger`` keyword arguments, one dict per trigger; fire when any fires."""

        def listed(values: frozenset[int]) -> str:
            return ",".join(str(v) for v in sorted(values))

        common = {"minute": listed(self.minutes), "hour": listed(self.hours)}
        month = listed(self.months)
        day = listed(self.days)
        weekday = ",".join(_APS_DAYS[d] for d in sorted(self.weekdays))
        if self.days_restricted and self.weekdays_restricted:
            return (
                {**common, "day": day, "month": month, "day_of_week": "*"},
                {**common, "day": "*", "month": month, "day_of_week": weekday},
            )
        return ({**common, "day": day, "month": month, "day_of_week": weekday},)


MAX_DIGITS = 18  # significant digits of a number (a step, or a value before its range check)


def _digits(text: str) -> bool:
    """ASCII digits only (str.isdigit also accepts superscripts and other scripts' digits),
    any number of leading zeros (cron reads 05 and 0000000000000000005 as 5, and so does the
    CRD's rule), at most MAX_DIGITS after them (the CRD refuses longer steps: 10^19 is beyond
    any int cron could read)."""
    return text.isascii() and text.isdigit() and len(text.lstrip("0")) <= MAX_DIGITS


def _number(text: str, field: _Field, part: str) -> int:
    if _digits(text):
        value = int(text)
    else:
        # ASCII names only: "ſun".lower() is no "sun", and the CRD names its letters one by one
        # (RE2's case folding would read ſ, U+017F, as s).
        named = dict(field.names).get(text.lower()) if text.isascii() else None
        if named is None:
            raise CronError(f"{field.name}: cannot read {shown(part)}")
        value = named
    if not field.low <= value <= field.high:
        raise CronError(f"{field.name}: {shown(text)} is not in {field.low}-{field.high}")
    return value


def _values(text: str, field: _Field) -> frozenset[int]:
    out: set[int] = set()
    for part in text.split(","):
        base, slash, step_text = part.partition("/")
        step = 1
        if slash:
            if not _digits(step_text) or int(step_text) == 0:
                raise CronError(f"{field.name}: bad step in {shown(part)} (a whole number from 1)")
            step = int(step_text)
        if base == "*":
            first, last = field.low, field.high
        else:
            low, dash, high = base.partition("-")
            if not low or (dash and not high):
                raise CronError(f"{field.name}: cannot read {shown(part)}")
            if slash and not dash:
                raise CronError(
                    f"{field.name}: a /step needs * or a range in {shown(part)} "
                    f"(write {low}-{field.high}{slash}{step_text})"
                )
            first = _number(low, field, part)
            last = _number(high, field, part) if dash else first
            if first > last:
                raise CronError(f"{field.name}: range {shown(base)} runs backwards")
        out.update(range(first, last + 1, step))
    return frozenset(out)


def parse_cron(expression: str) -> CronSchedule:
    """The schedule of a five-field cron expression; CronError names the field at fault."""
    # Fields are separated by ASCII white space only, as the CRD's rule (RE2's \s) reads them.
    texts = [t for t in re.split(_SPACE, expression) if t]
    if len(texts) != 5:
        raise CronError(f"expected five fields (minute hour day month weekday), got {len(texts)}")
    minutes, hours, days, months, weekdays = (
        _values(text, field) for text, field in zip(texts, _FIELDS, strict=True)
    )
    schedule = CronSchedule(
        minutes=minutes,
        hours=hours,
        days=days,
        months=months,
        weekdays=frozenset(d % 7 for d in weekdays),
        days_restricted=not texts[2].startswith("*"),
        weekdays_restricted=not texts[4].startswith("*"),
    )
    if not schedule.weekdays_restricted:
        # The days of month decide alone: a date no selected month has would never fire, and
        # APScheduler would silently never run the scan.
        leap = 2000
        if not any(d <= calendar.monthrange(leap, m)[1] for m in months for d in days):
            raise CronError("day of month: no month selected has any of those days")
    return schedule

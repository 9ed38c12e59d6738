"""respread.inputs.cron: cron(8)'s reading of five-field expressions, and the APScheduler triggers
that fire exactly then (checked against APScheduler itself, which the operator runs)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from apscheduler.triggers.combining import OrTrigger
from apscheduler.triggers.cron import CronTrigger

from respread.inputs.cron import CronError, parse_cron

ALL_MINUTES = frozenset(range(60))

PARSED = [
    # (expression, field, expected values)
    ("*/15 * * * *", "minutes", {0, 15, 30, 45}),
    ("0-30/10 * * * *", "minutes", {0, 10, 20, 30}),
    ("5,7-9 * * * *", "minutes", {5, 7, 8, 9}),
    ("*/90 * * * *", "minutes", {0}),
    ("0 9-17/4 * * *", "hours", {9, 13, 17}),
    ("0 0 1,15 * *", "days", {1, 15}),
    ("0 0 * jan-mar *", "months", {1, 2, 3}),
    ("0 0 * DEC *", "months", {12}),
    ("0 0 * * 0", "weekdays", {0}),
    ("0 0 * * 7", "weekdays", {0}),
    ("0 0 * * 5-7", "weekdays", {5, 6, 0}),
    ("0 0 * * mon-fri", "weekdays", {1, 2, 3, 4, 5}),
    ("0 0 * * */2", "weekdays", {0, 2, 4, 6}),
    ("  0   0 * *   *  ", "hours", {0}),
]


@pytest.mark.parametrize(("expression", "field", "values"), PARSED)
def test_fields_are_read_as_cron_reads_them(expression: str, field: str, values: set[int]) -> None:
    assert getattr(parse_cron(expression), field) == frozenset(values)


REFUSED = [
    # (expression, words the message must contain)
    ("* * * *", "five fields"),
    ("* * * * * *", "five fields"),
    ("60 * * * *", "minute"),
    ("* 24 * * *", "hour"),
    ("* * 0 * *", "day of month"),
    ("* * 32 * *", "day of month"),
    ("* * * 13 *", "month"),
    ("* * * * 8", "day of week"),
    ("5-3 * * * *", "backwards"),
    ("* * * * fri-mon", "backwards"),
    ("5/ * * * *", "step"),
    ("*/0 * * * *", "step"),
    ("5/10 * * * *", "5-59/10"),
    ("a * * * *", "cannot read"),
    ("1- * * * *", "cannot read"),
    (",5 * * * *", "cannot read"),
    ("* * * foo *", "cannot read"),
    ("0 0 30 2 *", "no month"),
    ("0 0 31 4,6,9,11 *", "no month"),
]


@pytest.mark.parametrize(("expression", "words"), REFUSED)
def test_refused_with_the_field_named(expression: str, words: str) -> None:
    with pytest.raises(CronError, match=words):
        parse_cron(expression)


def test_february_29_and_weekday_alternative_are_accepted() -> None:
    parse_cron("0 0 29 2 *")
    parse_cron("0 0 30 2 mon")  # day of month OR Monday: fires on Mondays


def aps(expression: str) -> OrTrigger | CronTrigger:
    triggers = [CronTrigger(timezone=UTC, **f) for f in parse_cron(expression).triggers()]
    return triggers[0] if len(triggers) == 1 else OrTrigger(triggers)


def fire_times(expression: str, start: datetime, count: int) -> list[datetime]:
    trigger = aps(expression)
    out: list[datetime] = []
    previous = None
    now = start
    while len(out) < count:
        nxt = trigger.get_next_fire_time(previous, now)
        assert nxt is not None
        out.append(nxt)
        previous, now = nxt, nxt + timedelta(seconds=1)
    return out


def cron_matches(expression: str, at: datetime) -> bool:
    """cron(8)'s rule, written out independently of respread.inputs.cron."""
    minute, hour, dom, month, dow = expression.split()

    def has(field: str, value: int, names: dict[str, int], low: int, high: int) -> bool:
        for part in field.split(","):
            base, _, step = part.partition("/")
            first, last = low, high
            if base != "*":
                a, _, b = base.partition("-")
                first = int(a) if a.isdigit() else names[a.lower()]
                last = (int(b) if b.isdigit() else names[b.lower()]) if b else first
            if first <= value <= last and (value - first) % int(step or 1) == 0:
                return True
        return False

    days = {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}
    months = {
        m: i + 1
        for i, m in enumerate(
            ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
        )
    }
    weekday = (at.weekday() + 1) % 7  # Python: Monday 0; cron: Sunday 0 (and 7)
    dow_ok = has(dow, weekday, days, 0, 7) or (weekday == 0 and has(dow, 7, days, 0, 7))
    dom_ok = has(dom, at.day, {}, 1, 31)
    either_star = dom.startswith("*") or dow.startswith("*")
    day_ok = (dom_ok and dow_ok) if either_star else (dom_ok or dow_ok)
    return (
        has(minute, at.minute, {}, 0, 59)
        and has(hour, at.hour, {}, 0, 23)
        and has(month, at.month, months, 1, 12)
        and day_ok
    )


SCHEDULES = [
    "0 3 * * 0",  # Sundays (APScheduler's from_crontab: Mondays)
    "0 3 * * 7",  # Sundays (from_crontab: refused)
    "30 2 * * 1-5",
    "0 0 * * sun,wed",
    "0 12 1,15 * mon",  # the 1st, the 15th, and every Monday (from_crontab: AND)
    "*/20 9-10 * feb *",
    "0 0 */10 * *",
    "15 6 * * */3",
]


@pytest.mark.parametrize("expression", SCHEDULES)
def test_apscheduler_fires_exactly_when_cron_would(expression: str) -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    fires = fire_times(expression, start, 12)
    # every fire time is a cron match, and no cron match between them was skipped
    assert all(cron_matches(expression, t) for t in fires)
    t = start
    while t < fires[-1]:
        if cron_matches(expression, t):
            assert t in fires, f"{expression}: APScheduler skipped {t}"
        t += timedelta(minutes=1)


def test_runtime_trigger_fires_on_sundays_with_jitter() -> None:
    from respread.inputs.policy import Schedule
    from respread.runtime.triggers import CRON_JITTER, trigger_for

    trigger, grace = trigger_for(Schedule(interval=None, cron="0 3 * * 0"))
    start = datetime(2026, 11, 22, 4, 0, tzinfo=UTC)  # a Sunday, after 03:00
    nxt = trigger.get_next_fire_time(None, start)
    assert nxt is not None
    assert nxt.weekday() == 6  # Sunday
    assert (
        timedelta(days=7) <= nxt - start.replace(hour=3) <= timedelta(days=7, seconds=CRON_JITTER)
    )
    assert grace == 60
    either, _ = trigger_for(Schedule(interval=None, cron="0 12 1 * mon"))
    assert isinstance(either, OrTrigger)


@pytest.mark.parametrize(
    "expression",
    [
        "\u00b2 * * * *",  # superscript two: str.isdigit() says yes
        "*/\u00b2 * * * *",
        "\u0663 * * * *",  # Arabic-Indic three
        "1-\uff15 * * * *",  # fullwidth five
        "0\u00a00 * * *",  # a no-break space is not a field separator (RE2's \s)
        "9" * 5000 + " * * * *",
    ],
)
def test_only_ascii_digits_and_white_space(expression: str) -> None:
    with pytest.raises(CronError):
        parse_cron(expression)


def test_tabs_and_newlines_separate_fields() -> None:
    assert parse_cron("0\t0\n*  *\r*").minutes == frozenset({0})


@pytest.mark.parametrize(
    "expression",
    ["0 0 * \u017fep *", "0 0 * * \u017fun", "0 0 * * mon-\u017fat", "0 0 * \u212aan *"],
    ids=["long-s-month", "long-s-weekday", "long-s-range", "kelvin-sign"],
)
def test_names_are_ascii_letters(expression: str) -> None:
    """ſ (U+017F) and the Kelvin sign fold to s and k in Unicode's case folding; cron knows
    no such names, and neither does the CRD (its names are spelt letter by letter)."""
    with pytest.raises(CronError, match="cannot read"):
        parse_cron(expression)


@pytest.mark.parametrize(
    ("expression", "field", "values"),
    [
        ("0" * 18 + "5 * * * *", "minutes", {5}),
        ("0" * 59 + "5 * * * *", "minutes", {5}),
        ("0" * 18 + "5-" + "0" * 17 + "7 * * * *", "minutes", {5, 6, 7}),
        ("*/" + "0" * 29 + "20 * * * *", "minutes", {0, 20, 40}),
        ("*/" + "9" * 18 + " * * * *", "minutes", {0}),
    ],
)
def test_numbers_may_be_zero_padded(expression: str, field: str, values: set[int]) -> None:
    assert getattr(parse_cron(expression), field) == frozenset(values)


def test_a_step_has_at_most_18_digits_after_its_zeros() -> None:
    with pytest.raises(CronError, match="step"):
        parse_cron("*/1234567890123456789 * * * *")
    with pytest.raises(CronError, match="backwards"):
        parse_cron("0" * 17 + "10-5 * * * *")

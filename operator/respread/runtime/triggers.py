"""APScheduler triggers for a policy's schedule: every interval, or cron as cron(8) reads it.

The cron expression is parsed by respread.inputs.cron (never by ``CronTrigger.from_crontab``, which
numbers weekdays from Monday and joins day of month and day of week with AND) and given to
APScheduler as explicit value lists; a day-of-month OR day-of-week schedule becomes two cron
triggers under an OrTrigger.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.combining import OrTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from respread.inputs.cron import parse_cron
from respread.inputs.policy import Schedule

CRON_JITTER = 30  # seconds
EPSILON = timedelta(seconds=1)


def trigger_for(schedule: Schedule) -> tuple[BaseTrigger, int]:
    """The trigger for a schedule, and the misfire grace time (seconds) that goes with it."""
    if schedule.cron is not None:
        fields = parse_cron(schedule.cron).triggers()
        trigger: BaseTrigger
        if len(fields) == 1:
            trigger = CronTrigger(timezone=UTC, jitter=CRON_JITTER, **fields[0])
        else:
            trigger = OrTrigger(
                [CronTrigger(timezone=UTC, **f) for f in fields], jitter=CRON_JITTER
            )
        return trigger, 60
    interval = schedule.interval or 300.0
    return IntervalTrigger(seconds=interval, jitter=min(30.0, interval / 10)), int(interval)


def overdue_at(schedule: Schedule, reference: float, fires: int) -> float:
    """When a policy last scanned at ``reference`` (epoch seconds) has missed ``fires``
    scheduled scans: ``fires`` intervals later, or at its cron's ``fires``-th time after."""
    if schedule.cron is None:
        return reference + fires * (schedule.interval or 300.0)
    triggers = [CronTrigger(timezone=UTC, **f) for f in parse_cron(schedule.cron).triggers()]
    at = datetime.fromtimestamp(reference, UTC)
    for _ in range(fires):
        upcoming = [t for t in (x.get_next_fire_time(None, at + EPSILON) for x in triggers) if t]
        if not upcoming:
            return float("inf")
        at = min(upcoming)
    return at.timestamp()

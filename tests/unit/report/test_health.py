"""CacheStale and ScanStalled in a policy's status, and the Events when they turn."""

from __future__ import annotations

from typing import Any

import pytest

from respread.report.health import (
    HEALTHY,
    Verdict,
    health_conditions,
    health_events,
    with_health,
)
from respread.report.model import Condition, ConditionType

STALE = Verdict(stale="the watches of Pod are failing")
STALLED = Verdict(stalled="the scan passed its deadline (120s); 3 eviction(s) not made")


def status(**conditions: bool) -> dict[str, Any]:
    return {
        "conditions": [
            {"type": t, "status": "True" if v else "False"} for t, v in conditions.items()
        ]
    }


def test_absent_while_never_met_then_true_then_false_for_good() -> None:
    assert health_conditions(HEALTHY, None) == []
    assert health_conditions(HEALTHY, status(Ready=True)) == []
    stale = health_conditions(STALE, status(Ready=True))
    assert [(c.type, c.status, c.reason) for c in stale] == [
        ("CacheStale", True, "NotShownCurrent")
    ]
    back = health_conditions(HEALTHY, status(CacheStale=True))
    assert [(c.type, c.status) for c in back] == [("CacheStale", False)]
    assert health_conditions(HEALTHY, status(CacheStale=False)) == back
    both = health_conditions(STALLED, status(CacheStale=False))
    assert [(c.type, c.status) for c in both] == [("CacheStale", False), ("ScanStalled", True)]


def test_a_scan_that_met_either_did_not_succeed() -> None:
    base = [
        Condition(ConditionType.READY, True, "Scanning", ""),
        Condition(ConditionType.SCAN_SUCCEEDED, True, "ScanCompleted", "3 nodes"),
        Condition(ConditionType.BALANCED, False, "ViolationsFound", ""),
    ]
    assert with_health(base, HEALTHY) == base
    stalled = {c.type: c for c in with_health(base, STALLED)}
    assert stalled["ScanSucceeded"].status is False
    assert stalled["ScanSucceeded"].reason == "DeadlineExceeded"
    assert stalled["Balanced"] == base[2]
    assert {c.type: c for c in with_health(base, STALE)}["ScanSucceeded"].reason == "CacheStale"


@pytest.mark.parametrize(
    ("verdict", "previous", "reasons"),
    [
        (HEALTHY, None, []),
        (STALE, None, ["CacheStale"]),
        (STALE, status(CacheStale=True), []),  # not again while it lasts
        (HEALTHY, status(CacheStale=True), ["CacheCurrent"]),
        (HEALTHY, status(CacheStale=False), []),
        (STALLED, status(CacheStale=True), ["CacheCurrent", "ScanStalled"]),
        (HEALTHY, status(ScanStalled=True), ["ScanWithinDeadline"]),
    ],
)
def test_events_on_the_transitions_only(
    verdict: Verdict, previous: dict[str, Any] | None, reasons: list[str]
) -> None:
    events = health_events(verdict, previous)
    assert [r for r, _, _ in events] == reasons
    assert all(warning == (r in ("CacheStale", "ScanStalled")) for r, warning, _ in events)

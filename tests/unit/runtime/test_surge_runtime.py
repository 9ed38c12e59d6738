"""The surge runtime's pure helpers: the Events a follower round posts on its policy
(aggregated per reason, none for a round that took no step) and the outcome counters."""

from __future__ import annotations

from respread.analysis.groups import WorkloadRef
from respread.runtime import metrics
from respread.runtime.surges import OUTCOMES, SurgeEvent, aggregate, count

WEB = WorkloadRef("ns1", "Deployment", "web")
API = WorkloadRef("ns1", "Deployment", "api")


def test_a_round_without_a_step_tells_nothing() -> None:
    assert aggregate([]) == []


def test_the_steps_of_a_round_are_told_once_per_reason() -> None:
    events = [
        SurgeEvent(WEB, "SurgeScalingBack", "6 -> 4"),
        SurgeEvent(API, "SurgeScalingBack", "5 -> 3"),
        SurgeEvent(API, "SurgeStoodDown", "changed by someone else", warning=True),
    ]
    assert aggregate(events) == [
        ("SurgeScalingBack", False, f"{WEB}: 6 -> 4; {API}: 5 -> 3"),
        ("SurgeStoodDown", True, f"{API}: changed by someone else"),
    ]


def test_the_outcomes_are_counted() -> None:
    policy = "unit-count"
    before = {o: metrics.SURGES.labels(policy, o)._value.get() for o in OUTCOMES.values()}
    count(policy, [SurgeEvent(WEB, r, "") for r in [*OUTCOMES, "SurgeScalingBack"]])
    for outcome in OUTCOMES.values():
        assert metrics.SURGES.labels(policy, outcome)._value.get() == before[outcome] + 1
        metrics.SURGES.remove(policy, outcome)

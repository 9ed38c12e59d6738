"""Status writes clear what became empty.

The operator writes the status subresource with a JSON merge patch (RFC 7386), where a field
left out keeps its stored value and a null removes it. Each case writes a status with one list
or optional field filled, then one with it empty or absent, through the merge the API server
applies: the stored status must then be exactly the second one."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from respread.analysis.groups import WorkloadRef
from respread.inputs.policy import DEFAULT_POLICY
from respread.remedies.choose import Remedy
from respread.remedies.cost.release import CostCounts, Overlapping
from respread.report.contract import (
    CLEARED_WHEN_ABSENT,
    conditions_status_json,
    status_json,
    status_patch,
)
from respread.report.model import (
    ConditionsStatus,
    ConditionStatus,
    ConditionType,
    Cooldown,
    Execution,
    Report,
    Status,
    StatusCondition,
    StepStatus,
)
from respread.report.status import build_status
from tests.support.reports import eviction, report, surge_planned, surges, violation

NOW = "2027-01-15T08:00:00Z"
WEB = WorkloadRef("ns", "Deployment", "web")
ABSENT = object()  # the field is not in the stored status


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386, as the API server applies a merge patch: objects merge key by key, null
    removes, anything else (lists included) replaces."""
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def scan(
    scanned: Report | None = None,
    *,
    cooldowns: tuple[Cooldown, ...] | None = (),
    deletion_cost: CostCounts | None = None,
) -> Status:
    return build_status(
        scanned or report(),
        DEFAULT_POLICY,
        NOW,
        cooldowns=cooldowns,
        deletion_cost=deletion_cost,
    )


def at(status: dict[str, Any], path: tuple[str | int, ...]) -> Any:
    value: Any = status
    for step in path:
        if isinstance(step, int):
            value = value[step]
        elif step not in value:
            return ABSENT
        else:
            value = value[step]
    return value


COOLDOWN = Cooldown(
    WEB,
    backoff_level=1,
    last_eviction_time="2027-01-15T07:59:00Z",
    backoff_until="2027-01-15T08:20:00Z",
    pending_review=(("zone", 3),),
)
COSTS = CostCounts(written=3, overlaps=6, overlapping=(Overlapping("ns", "rs", 6, "a"),))

# (case, status before, status after, the field, its stored value after the second write)
CASES: list[tuple[str, Status, Status, tuple[str | int, ...], object]] = [
    ("violations", scan(report([violation()])), scan(), ("violations",), []),
    ("violations[].remedy", scan(report([violation(remedy=Remedy.EVICT)])),
     scan(report([violation()])), ("violations", 0, "remedy"), ABSENT),
    ("violations[].domains.max", scan(report([violation()])),
     scan(report([violation(domains=())])), ("violations", 0, "domains", "max"), ABSENT),
    ("violations[].domains.min", scan(report([violation()])),
     scan(report([violation(domains=())])), ("violations", 0, "domains", "min"), ABSENT),
    ("plan, planned", scan(report(evictions=[eviction("web-1")])), scan(), ("plan",), []),
    ("plan, deferred", scan(report(deferred=[eviction("web-1", deferred_by="a budget")])),
     scan(), ("plan",), []),
    ("surges, planned", scan(report(surge=surges([surge_planned()]))), scan(), ("surges",),
     ABSENT),
    ("surges, skipped", scan(report(surge=surges(skipped=[("web", "an HPA scales it")]))),
     scan(), ("surges",), ABSENT),
    ("cooldowns", scan(cooldowns=(COOLDOWN,)), scan(cooldowns=()), ("cooldowns",), []),
    ("cooldowns[].pendingReview", scan(cooldowns=(COOLDOWN,)),
     scan(cooldowns=(replace(COOLDOWN, pending_review=()),)),
     ("cooldowns", 0, "pendingReview"), ABSENT),
    ("cooldowns[].backoffUntil", scan(cooldowns=(COOLDOWN,)),
     scan(cooldowns=(replace(COOLDOWN, backoff_until=None),)),
     ("cooldowns", 0, "backoffUntil"), ABSENT),
    ("cooldowns[].lastEvictionTime", scan(cooldowns=(COOLDOWN,)),
     scan(cooldowns=(replace(COOLDOWN, last_eviction_time=None),)),
     ("cooldowns", 0, "lastEvictionTime"), ABSENT),
    ("deletionCost", scan(deletion_cost=COSTS), scan(), ("deletionCost",), ABSENT),
    ("nextEvictionTime",
     scan(report(deferred=[eviction("web-1", deferred_by="cooldown")]), cooldowns=(COOLDOWN,)),
     scan(cooldowns=(COOLDOWN,)), ("nextEvictionTime",), ABSENT),
    ("deletionCost.overlapping", scan(deletion_cost=COSTS),
     scan(deletion_cost=CostCounts()), ("deletionCost", "overlapping"), []),
]  # fmt: skip


def written(*statuses: Status) -> dict[str, Any]:
    """The stored status after writing each of ``statuses`` in turn, from none."""
    stored: dict[str, Any] = {}
    for status in statuses:
        stored = merge_patch(stored, status_patch(status))
    return stored


@pytest.mark.parametrize(
    ("before", "after", "path", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_field_that_became_empty_is_cleared_in_the_stored_status(
    before: Status, after: Status, path: tuple[str | int, ...], expected: object
) -> None:
    filled = at(written(before), path)
    assert filled is not ABSENT and filled not in ([], {}), "the case must start filled"
    stored = written(before, after)
    if expected is ABSENT:
        assert at(stored, path) is ABSENT
    else:
        assert at(stored, path) == expected
    assert stored == status_json(after)


def test_any_status_written_over_any_other_is_stored_as_it_is() -> None:
    statuses = [s for _, before, after, _, _ in CASES for s in (before, after)]
    for first in statuses:
        for second in statuses:
            assert written(first, second) == status_json(second)


@pytest.mark.parametrize("field", CLEARED_WHEN_ABSENT)
def test_without_a_null_the_merge_keeps_what_the_last_scan_wrote(field: str) -> None:
    """Why the patch carries nulls: the status alone, as a merge patch, never clears."""
    before = next(b for _, b, _, path, _ in CASES if path == (field,))
    stale = merge_patch(status_json(before), status_json(scan()))
    assert field in stale
    assert field not in written(before, scan())


def test_a_status_without_cooldowns_leaves_the_stored_ones() -> None:
    """``cooldowns=None`` means this write does not know them (nor clear them)."""
    stored = written(scan(cooldowns=(COOLDOWN,)), scan(cooldowns=None))
    assert stored["cooldowns"] == status_json(scan(cooldowns=(COOLDOWN,)))["cooldowns"]


def test_a_conditions_only_status_leaves_the_report_and_omits_what_a_condition_lacks() -> None:
    """A policy that does not parse: Ready False, written without touching the last report."""
    invalid = StatusCondition(
        type=ConditionType.READY,
        status=ConditionStatus.FALSE,
        reason="InvalidPolicy",
        message="spec.schedule: set exactly one of interval and cron",
        last_transition_time=NOW,
    )
    patch = conditions_status_json(ConditionsStatus(4, (invalid,)))
    assert patch == {
        "observedGeneration": 4,
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "InvalidPolicy",
                "message": "spec.schedule: set exactly one of interval and cron",
                "lastTransitionTime": NOW,
            }
        ],
    }
    stored = merge_patch(written(scan(report([violation()]))), patch)
    assert stored["violations"] == status_json(scan(report([violation()])))["violations"]


def test_the_next_eviction_is_due_when_its_cooldown_or_back_off_ends() -> None:
    """The first deferred workload's cooldown end (lastEvictionTime + cooldown, 10m by
    default), or its back-off's end, whichever is later; none when nothing waits."""
    waiting = report(deferred=[eviction("web-1", deferred_by="cooldown")])
    in_cooldown = replace(COOLDOWN, backoff_until=None)
    assert scan(waiting, cooldowns=(in_cooldown,)).next_eviction_time == "2027-01-15T08:09:00Z"
    assert scan(waiting, cooldowns=(COOLDOWN,)).next_eviction_time == "2027-01-15T08:20:00Z"
    over = replace(in_cooldown, last_eviction_time="2027-01-15T07:00:00Z")
    assert scan(waiting, cooldowns=(over,)).next_eviction_time is None
    assert scan(report(), cooldowns=(COOLDOWN,)).next_eviction_time is None


def test_evictions_add_up_since_the_policy_was_created() -> None:
    """evictedTotal: the stored total plus this scan's evictions (summary.evicted)."""
    done = report(evictions=[eviction("web-1"), eviction("web-2")])
    executions = [
        Execution("ns", "web-1", StepStatus.EVICTED, "evicted"),
        Execution("ns", "web-2", StepStatus.BLOCKED, "refused by a PodDisruptionBudget"),
    ]
    first = build_status(done, DEFAULT_POLICY, NOW, executions=executions)
    assert (first.summary.evicted, first.evicted_total) == (1, 1)
    stored = status_json(first)
    second = build_status(done, DEFAULT_POLICY, NOW, previous=stored, executions=executions)
    assert (second.summary.evicted, second.evicted_total) == (1, 2)
    quiet = build_status(report(), DEFAULT_POLICY, NOW, previous=status_json(second))
    assert (quiet.summary.evicted, quiet.evicted_total) == (0, 2)

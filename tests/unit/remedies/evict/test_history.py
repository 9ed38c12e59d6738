"""The eviction history a policy's scans carry: cooldown, loop protection, pacing
(respread.remedies.evict.history)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from respread.analysis.groups import Analysis, Group, WorkloadRef, analyze
from respread.inputs.objects import load_texts
from respread.inputs.policy import DEFAULT_POLICY
from respread.remedies.evict.history import BACKOFF_LIMIT, PACING, EvictionHistory
from tests.support.paths import EXAMPLES

COOLDOWN = 60.0


@pytest.fixture(scope="module")
def analysis() -> Analysis:
    texts = [(str(p), p.read_text()) for p in sorted((EXAMPLES / "zone-scale-down").glob("*"))]
    return analyze(load_texts(texts).state, DEFAULT_POLICY)


@pytest.fixture(scope="module")
def group(analysis: Analysis) -> Group:
    (violated,) = analysis.violations
    return violated


def test_an_eviction_that_did_not_reduce_skew_backs_the_workload_off(
    analysis: Analysis, group: Group
) -> None:
    history = EvictionHistory().recorded(group.workload, group.constraint.key, group.skew, 1000.0)

    early = history.reviewed(analysis, now=1005.0, cooldown=COOLDOWN)  # too early to judge
    assert early == history
    assert early.held(1005.0, []) == {}

    late = history.reviewed(analysis, now=1100.0, cooldown=COOLDOWN)  # same skew afterwards
    assert "did not reduce its skew" in late.held(1100.0, [])[group.workload]
    assert late.held(1100.0 + COOLDOWN * 2 + 1, []) == {}  # first back-off: two cooldowns
    assert late.skew_at_eviction == {}  # judged once
    assert history.backoff_level == {}  # a value: reviewing returns a new history


# (case, skew at the eviction relative to now, back-off level before) -> level after, judged
REVIEWS = [
    ("skew reduced: no back-off", +1, 0, 0),
    ("skew unchanged: first back-off", 0, 0, 1),
    ("skew grew: back-off", -1, 0, 1),
    ("again unchanged: the level rises", 0, 2, 3),
    ("the level stops at the limit", 0, BACKOFF_LIMIT, BACKOFF_LIMIT),
]


@pytest.mark.parametrize(
    ("delta", "before", "after"), [c[1:] for c in REVIEWS], ids=[c[0] for c in REVIEWS]
)
def test_reviews_after_the_cooldown(
    analysis: Analysis, group: Group, delta: int, before: int, after: int
) -> None:
    w, key = group.workload, group.constraint.key
    history = EvictionHistory(
        last_eviction={w: 1000.0},
        skew_at_eviction={(w, key): group.skew + delta},
        backoff_level={w: before} if before else {},
    )
    reviewed = history.reviewed(analysis, now=1000.0 + COOLDOWN, cooldown=COOLDOWN)
    assert reviewed.backoff_level.get(w, 0) == after
    assert reviewed.skew_at_eviction == {}
    if after > before:
        assert reviewed.backoff_until[w] == 1000.0 + COOLDOWN + COOLDOWN * 2**after
    assert reviewed.last_eviction == history.last_eviction  # the cooldown still runs from there


def test_a_workload_balanced_again_is_forgiven(analysis: Analysis) -> None:
    gone = WorkloadRef("shop", "Deployment", "gone")  # no violated group any more
    history = EvictionHistory(
        last_eviction={gone: 1000.0},
        skew_at_eviction={(gone, "topology.kubernetes.io/zone"): 3},
        backoff_level={gone: 2},
        backoff_until={gone: 5000.0},
    )
    reviewed = history.reviewed(analysis, now=1001.0, cooldown=COOLDOWN)  # even in cooldown
    assert reviewed.skew_at_eviction == {}
    assert reviewed.backoff_level == {}
    assert reviewed.backoff_until == {gone: 5000.0}  # the back-off under way still holds
    assert reviewed.workloads() == [gone]


def test_unready_workloads_are_held_for_pacing() -> None:
    workload = WorkloadRef("shop", "Deployment", "web")
    assert EvictionHistory().held(0.0, [workload]) == {workload: PACING}
    assert PACING == "waiting for a replacement to become Ready"


@pytest.mark.parametrize("balanced_first", [True, False], ids=["balanced first", "balanced last"])
def test_a_rollouts_two_groups_are_judged_by_the_worse(
    analysis: Analysis, group: Group, balanced_first: bool
) -> None:
    """matchLabelKeys (pod-template-hash) splits a rolling workload into two groups on one
    key; the eviction is judged by the one still skewed, whichever order they come in."""
    balanced = replace(group, skew=0, violating=0)
    pair = (balanced, group) if balanced_first else (group, balanced)
    rollout = replace(analysis, groups=(*pair, *(g for g in analysis.groups if g is not group)))
    w, key = group.workload, group.constraint.key
    history = EvictionHistory(last_eviction={w: 1000.0}, skew_at_eviction={(w, key): group.skew})
    reviewed = history.reviewed(rollout, now=1000.0 + COOLDOWN, cooldown=COOLDOWN)
    assert reviewed.backoff_level == {w: 1}

"""Golden plans: each folder under golden/ holds a cluster, a policy and the expected plan.

Replayed without Go. Each plan is also checked on its own terms: replayed (evict, bind each
replacement where predicted), it leaves exactly the violations it calls not fixable and
creates none; its eviction count is the brute-force optimum (tests/support/brute_force.py)
when that exists, and nothing is called fixable when it does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from respread.analysis.groups import analyze
from respread.cli import parse_now
from respread.inputs.objects import load_texts
from respread.inputs.policy import parse_policy
from respread.remedies.evict import planner
from respread.remedies.evict.planner import Move, plan
from respread.remedies.evict.replay import apply_moves
from tests.support.brute_force import fewest_evictions

GOLDEN = sorted(
    p for p in (Path(__file__).parent / "golden").iterdir() if (p / "cluster.yaml").is_file()
)


def _entries(moves: tuple[Move, ...]) -> list[dict[str, Any]]:
    return [{"pod": f"{m.pod.namespace}/{m.pod.name}", "predictedNode": m.to_node} for m in moves]


@pytest.mark.parametrize("scenario", GOLDEN, ids=[p.name for p in GOLDEN])
def test_the_plan_is_the_golden_one(scenario: Path) -> None:
    expect = yaml.safe_load((scenario / "expect.yaml").read_text())
    loaded = load_texts([(str(scenario), (scenario / "cluster.yaml").read_text())])
    assert loaded.problems == ()
    policy = parse_policy(yaml.safe_load((scenario / "policy.yaml").read_text()))
    analysis = analyze(loaded.state, policy)
    result = plan(analysis, policy, now=parse_now(expect["now"]))

    minimum = {f"{g.workload} {g.constraint.key}": g.minimum_moves for g in analysis.violations}
    assert minimum == expect["minimumMoves"]
    assert _entries(result.moves) == expect["evictions"]
    assert _entries(result.deferred) == expect["deferred"]
    assert result.method == expect["method"]
    unfixable = sorted(
        f"{o.group.workload} {o.group.constraint.key}" for o in result.outcomes if not o.fixable
    )
    assert unfixable == expect["notFixable"]

    after = analyze(apply_moves(loaded.state, result.moves + result.deferred), policy)
    assert sorted(f"{g.workload} {g.constraint.key}" for g in after.violations) == unfixable
    evictions = len(result.moves) + len(result.deferred)
    optimum = fewest_evictions(loaded.state, policy, len(loaded.state.pods))
    assert optimum == expect["optimum"]
    if optimum is not None:
        assert evictions == optimum and not unfixable
    else:
        assert unfixable


def test_the_review_cases_are_collected() -> None:
    assert len([p for p in GOLDEN if p.name.startswith("review-")]) == 6


@pytest.mark.parametrize("scenario", GOLDEN, ids=[p.name for p in GOLDEN])
def test_the_greedy_planner_alone_reaches_the_optimum(
    scenario: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exhaustive search off (as on a cluster too large for it): the greedy planner's
    rules (victim order, retries, a follower move) reach the same number of evictions."""
    monkeypatch.setattr(planner, "EXACT_MOVABLE", 0)
    expect = yaml.safe_load((scenario / "expect.yaml").read_text())
    loaded = load_texts([(str(scenario), (scenario / "cluster.yaml").read_text())])
    policy = parse_policy(yaml.safe_load((scenario / "policy.yaml").read_text()))
    result = plan(analyze(loaded.state, policy), policy, now=parse_now(expect["now"]))
    assert result.method == "greedy"
    unfixable = sorted(
        f"{o.group.workload} {o.group.constraint.key}" for o in result.outcomes if not o.fixable
    )
    assert unfixable == expect["notFixable"]
    if expect["optimum"] is not None:
        assert len(result.moves) + len(result.deferred) == expect["optimum"]
    after = analyze(apply_moves(loaded.state, result.moves + result.deferred), policy)
    assert sorted(f"{g.workload} {g.constraint.key}" for g in after.violations) == unfixable

"""Every descheduler scenario: our plan against the descheduler's eviction count.

The descheduler is a peer, not the truth (scenarios/README.md). Where the counts differ, the
table below says why in one line, and every scenario checks that the plan, applied, leaves no
violation it called fixable, and creates none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from respread.analysis.groups import analyze
from respread.inputs.objects import load_texts
from respread.inputs.policy import RebalancePolicy, parse_policy
from respread.remedies.evict.planner import plan
from respread.remedies.evict.replay import apply_moves

from .conftest import scenario_dirs

SCENARIOS = scenario_dirs("descheduler")

DIFFERENCES = {
    "13-node-key-pinned-pods-nodefit": (
        1,
        "pods 4-7 (nodeSelector os=windows) see windows domains 4/3/1, so the pods on n5 are "
        "misplaced by the scheduler's own rule; the descheduler stops at the pinned pods of n4, "
        "respread moves one pod from n5 to n6",
    ),
    "15-three-domains-0-1-100": (
        19,
        "respread reserves capacity: n1 and n2 have room for 10 and 9 pods, so 19 moves, and "
        "the rest is reported as needing room; the descheduler sends 66 pods to room for 19",
    ),
}


def policy_for(args: dict[str, Any]) -> RebalancePolicy:
    """The descheduler's plugin args as a RebalancePolicy, without respread's run caps."""
    namespaces = args.get("namespaces") or {}
    return parse_policy(
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": "descheduler-args"},
            "spec": {
                "constraints": {"whenUnsatisfiable": args["constraints"]},
                "selector": {
                    "namespaces": {
                        "include": namespaces.get("include", []),
                        "exclude": namespaces.get("exclude", []),
                    }
                },
                "eviction": {
                    "maxPerRun": None,
                    "maxPerWorkload": None,
                    "minPodAge": "0s",
                    "requireFit": args["topologyBalanceNodeFit"],
                },
            },
        }
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[p.name for p in SCENARIOS])
def test_plan_against_the_descheduler(scenario: Path) -> None:
    expect = yaml.safe_load((scenario / "expect.yaml").read_text())
    loaded = load_texts([(str(scenario), (scenario / "cluster.yaml").read_text())])
    assert loaded.problems == ()
    policy = policy_for(expect["args"])

    analysis = analyze(loaded.state, policy)
    result = plan(analysis, policy)

    expected, why = DIFFERENCES.get(scenario.name, (expect["expectedEvictions"], ""))
    assert len(result.moves) == expected, why or "same count as the descheduler"
    if why:
        assert expected != expect["expectedEvictions"], "a listed difference must be real"
    assert result.deferred == ()  # no caps, no budgets: everything possible is planned now

    after = analyze(apply_moves(loaded.state, result.moves), policy)
    unfixable = {
        (o.group.workload, o.group.constraint.key) for o in result.outcomes if not o.fixable
    }
    still = {(g.workload, g.constraint.key) for g in after.violations}
    assert still <= unfixable, "the plan left a violation it called fixable, or created one"
    assert result.predicted_violations == len(still)


FOUND = sorted(
    p
    for p in (Path(__file__).parent / "found" / "descheduler").iterdir()
    if (p / "cluster.yaml").is_file()
)


@pytest.mark.parametrize("scenario", FOUND, ids=[p.name for p in FOUND])
def test_found_counterexamples_stay_fixed(scenario: Path) -> None:
    """Each counterexample the descheduler oracle saved, replayed without Go: the
    descheduler's plan balanced the cluster with ``expectedEvictions``; respread balances it
    with no more."""
    expect = yaml.safe_load((scenario / "expect.yaml").read_text())
    loaded = load_texts([(str(scenario), (scenario / "cluster.yaml").read_text())])
    policy = policy_for(expect["args"])
    result = plan(analyze(loaded.state, policy), policy)
    assert all(o.fixable for o in result.outcomes)
    assert len(result.moves) + len(result.deferred) <= expect["expectedEvictions"]
    after = analyze(apply_moves(loaded.state, result.moves + result.deferred), policy)
    assert after.violations == ()


def test_every_descheduler_scenario_is_collected() -> None:
    assert FOUND
    assert len(SCENARIOS) >= 20


def test_capacity_is_reserved_and_the_shortfall_reported() -> None:
    scenario = next(p for p in SCENARIOS if p.name.startswith("15-"))
    loaded = load_texts([(str(scenario), (scenario / "cluster.yaml").read_text())])
    policy = policy_for({"constraints": ["DoNotSchedule"], "topologyBalanceNodeFit": True})
    result = plan(analyze(loaded.state, policy), policy)
    landed: dict[str, int] = {}
    for move in result.moves:
        landed[move.to_node] = landed.get(move.to_node, 0) + 1
    assert landed == {"n1": 10, "n2": 9}  # n2 already runs one pod; each node takes 10
    (outcome,) = result.outcomes
    assert not outcome.fixable
    assert "no node would take the replacement" in outcome.message

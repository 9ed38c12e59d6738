"""respread's plan against the brute-force optimum (brute_force.py), on small generated
clusters: several workloads whose selectors may count each other's pods, nodes without the
zone key, node capacity, budgets (used up, stale, allowing none), pinned and bare pods.

Whenever respread predicts that its plan (this run's evictions and the deferred ones) leaves
no violation, it does, and it uses exactly the fewest evictions that do; whenever some set of
evictions leaves no violation, respread does not report a violation as not fixable.
"""

from __future__ import annotations

from unittest.mock import patch

from hypothesis import event, given
from hypothesis import strategies as st

from respread.analysis.groups import analyze
from respread.core.model import ClusterState, DisruptionBudget, OwnerRef, Pod
from respread.remedies.evict import planner
from respread.remedies.evict.planner import Plan, plan
from respread.remedies.evict.replay import apply_moves
from tests.support.brute_force import describe, fewest_evictions, misplaced
from tests.support.builders import budget, eviction_policy, hard, node, pod, pod_spec, sel, state
from tests.support.constants import HOST, ZONE

POLICY = eviction_policy(cooldown=0.0)


@st.composite
def small_clusters(draw: st.DrawFn) -> ClusterState:
    nodes = []
    for k in range(draw(st.integers(2, 4))):
        labels = {HOST: f"n{k}"}
        zone = draw(st.sampled_from(["za", "za", "zb", "zb", "zc", None]))
        if zone is not None:
            labels[ZONE] = zone
        nodes.append(node(f"n{k}", labels, max_pods=draw(st.sampled_from([None, None, 2, 3]))))
    pods: list[Pod] = []
    budgets: list[DisruptionBudget] = []
    room = 7  # pods in all: the brute force explores every set of evictions
    for w in range(draw(st.integers(1, 3))):
        if room == 0:
            break
        count = draw(st.integers(1, min(4, room)))
        room -= count
        app, tier = f"w{w}", draw(st.sampled_from(["a", "b"]))
        constraints = []
        for key in (ZONE, HOST):
            if draw(st.booleans()):
                across = draw(st.integers(0, 3)) == 0  # counts every pod of the tier
                constraints.append(
                    hard(
                        key,
                        sel(tier=tier) if across else sel(app=app),
                        max_skew=draw(st.integers(1, 2)),
                        min_domains=draw(st.sampled_from([None, None, 2])) if key == ZONE else None,
                    )
                )
        pinned = draw(st.integers(0, 5)) == 0
        spec = pod_spec(constraints, node_selector={ZONE: "za"} if pinned else None)
        bare = draw(st.integers(0, 7)) == 0
        owner = None if bare else OwnerRef("ReplicaSet", f"{app}-rs")
        crowd = draw(st.sampled_from([1, len(nodes) - 1]))  # crowded on two nodes, or spread
        for i in range(count):
            where = nodes[draw(st.integers(0, crowd))].name
            labels = {"app": app, "tier": tier}
            pods.append(pod(f"{app}-{i}", where, labels, spec=spec, owner=owner, created=float(i)))
        if draw(st.integers(0, 3)) == 0:
            allowed, stale = draw(st.integers(0, 2)), draw(st.integers(0, 4)) == 0
            generation = 2 if stale else 1
            selector = sel(app=app)
            budgets.append(
                budget(f"{app}-pdb", selector, allowed=allowed, generation=generation, observed=1)
            )
    return state(nodes, pods, budgets=budgets)


@given(small_clusters())
def test_the_plan_is_the_optimum_when_it_balances_and_never_gives_up_on_a_fixable_one(
    state: ClusterState,
) -> None:
    result = plan(analyze(state, POLICY), POLICY)
    evictions = result.moves + result.deferred
    if not any(d.deferred_by.startswith("PodDisruptionBudget") for d in result.deferred):
        assert result.deferred == (), "no cap, no cooldown, no budget used up: nothing waits"
    event(f"{len(result.outcomes) and result.method}: {len(evictions)} eviction(s)")
    if all(o.fixable for o in result.outcomes):
        after = apply_moves(state, evictions)
        why = f"{result.method_note}\n{_moves(result)}\n{describe(state)}"
        assert misplaced(after.nodes, after.pods) == [], why
        assert fewest_evictions(state, POLICY, len(evictions)) == len(evictions), why
    else:
        event("not fixable")
        optimum = fewest_evictions(state, POLICY, len(state.pods))
        assert optimum is None, f"{optimum}: {result.method_note}\n{describe(state)}"


def _moves(result: Plan) -> str:
    return ", ".join(f"{m.pod.name}->{m.to_node}" for m in result.moves + result.deferred)


@given(small_clusters())
def test_the_greedy_planner_alone_makes_no_group_worse(state: ClusterState) -> None:
    """The exhaustive search off (as on clusters too large for it): replayed, the greedy plan
    leaves no balanced group violated, no violated group further beyond maxSkew, and exactly
    the violations it predicts."""
    with patch.object(planner, "EXACT_MOVABLE", 0):
        result = plan(analyze(state, POLICY), POLICY)
    before = {(g.workload, g.constraint.key): g for g in analyze(state, POLICY).groups}
    after = analyze(apply_moves(state, result.moves + result.deferred), POLICY)
    for g in after.groups:
        old = before[(g.workload, g.constraint.key)]
        if g.violating:
            assert old.violating, f"{g.workload} {g.constraint.key}\n{describe(state)}"
            assert g.skew <= max(old.skew, g.constraint.max_skew), describe(state)
    unfixable = {
        (o.group.workload, o.group.constraint.key) for o in result.outcomes if not o.fixable
    }
    assert {(g.workload, g.constraint.key) for g in after.violations} == unfixable
    evictions = len(result.moves) + len(result.deferred)
    if result.outcomes and not unfixable:
        optimum = fewest_evictions(state, POLICY, evictions)
        event("greedy alone: the optimum" if optimum == evictions else "greedy alone: more")

"""Invariants of planning, on generated clusters (hypothesis).

- The same input gives the same plan.
- No budget and no cap is ever exceeded; a protected or budget-blocked pod is never planned.
- Applying the plan (evict, bind each replacement where predicted) and analysing the result
  afresh: no group that was balanced becomes violated, and each violated group has exactly the
  misplaced pods the plan predicted.
- For one constraint with room everywhere, the plan's number of moves is the exact minimum.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from hypothesis import given
from hypothesis import strategies as st

from respread.analysis.groups import WorkloadRef, analyze
from respread.core.model import ClusterState, DisruptionBudget, OwnerRef, Pod, Resources, Toleration
from respread.inputs.policy import RebalancePolicy
from respread.remedies.evict.clock import settled
from respread.remedies.evict.planner import Plan, plan
from respread.remedies.evict.replay import apply_moves
from respread.scheduling.safety import protection
from tests.support import builders as make
from tests.support.constants import HOST, ZONE

SHARED = make.sel(tier="web")


@dataclass(frozen=True)
class WorkloadShape:
    app: str
    namespace: str
    zone_skew: int | None
    host_skew: int | None
    min_domains: int | None
    pinned_zone: str | None
    tolerates_gpu: bool
    bare: bool
    shared_selector: bool  # counts every workload's pods (tier=web), not only its own
    placement: tuple[int, ...]  # node index per pod
    budget: tuple[int, bool] | None  # (disruptionsAllowed, stale)


@st.composite
def clusters(draw: st.DrawFn, single_constraint: bool = False) -> ClusterState:
    zones = draw(st.integers(2, 4))
    per_zone = draw(st.integers(1, 3))
    unlimited = single_constraint or draw(st.booleans())
    nodes = []
    for z in range(zones):
        for k in range(per_zone):
            name = f"n{z}{k}"
            tainted = not single_constraint and draw(st.integers(0, 9)) == 0
            nodes.append(
                make.zone_node(
                    name,
                    f"z{z}",
                    taints=(make.taint("gpu", "true"),) if tainted else (),
                    allocatable=None
                    if unlimited
                    else Resources(cpu=draw(st.sampled_from([1000, 2000]))),
                    max_pods=None if unlimited else draw(st.integers(4, 12)),
                )
            )
    count = 1 if single_constraint else draw(st.integers(1, 3))
    pods: list[Pod] = []
    budgets: list[DisruptionBudget] = []
    for w in range(count):
        shape = WorkloadShape(
            app=f"app{w}",
            namespace=draw(st.sampled_from(["a", "b"])) if not single_constraint else "a",
            zone_skew=draw(st.integers(1, 2))
            if single_constraint
            else draw(st.sampled_from([None, 1, 2])),
            host_skew=None if single_constraint else draw(st.sampled_from([None, None, 1, 2])),
            min_domains=None if single_constraint else draw(st.sampled_from([None, None, 2, 5])),
            pinned_zone=None
            if single_constraint
            else draw(st.sampled_from([None, None, None, "z0"])),
            tolerates_gpu=draw(st.booleans()),
            bare=not single_constraint and draw(st.integers(0, 7)) == 0,
            shared_selector=not single_constraint and draw(st.integers(0, 3)) == 0,
            placement=tuple(
                draw(st.lists(st.integers(0, len(nodes) - 1), min_size=1, max_size=14))
            ),
            budget=None
            if single_constraint
            else draw(st.one_of(st.none(), st.tuples(st.integers(0, 3), st.booleans()))),
        )
        constraints = []
        selector = SHARED if shape.shared_selector else make.sel(app=shape.app)
        if shape.zone_skew is not None:
            constraints.append(
                make.hard(ZONE, selector, max_skew=shape.zone_skew, min_domains=shape.min_domains)
            )
        if shape.host_skew is not None:
            constraints.append(make.hard(HOST, selector, max_skew=shape.host_skew))
        spec = make.pod_spec(
            constraints,
            node_selector={ZONE: shape.pinned_zone} if shape.pinned_zone else None,
            tolerations=(Toleration("gpu", "Exists"),) if shape.tolerates_gpu else (),
            requests=Resources(cpu=100),
        )
        labels = {"app": shape.app, "tier": "web"}
        owner = None if shape.bare else OwnerRef("ReplicaSet", f"{shape.app}-rs")
        for i, node_index in enumerate(shape.placement):
            where = nodes[node_index].name
            pods.append(
                make.pod(
                    f"{shape.app}-{i}",
                    where,
                    labels,
                    spec=spec,
                    namespace=shape.namespace,
                    owner=owner,
                    created=float(i),
                )
            )
        if shape.budget is not None:
            allowed, stale = shape.budget
            budgets.append(
                make.budget(
                    f"{shape.app}-pdb",
                    make.sel(app=shape.app),
                    allowed=allowed,
                    namespace=shape.namespace,
                    generation=2 if stale else 1,
                    observed=1,
                )
            )
    return make.state(nodes, pods, budgets=budgets)


@st.composite
def policies(draw: st.DrawFn) -> RebalancePolicy:
    caps = st.sampled_from([None, None, 0, 1, 2, 5])
    return make.eviction_policy(
        max_per_run=draw(caps),
        max_per_node=draw(caps),
        max_per_namespace=draw(caps),
        max_per_workload=draw(caps),
        require_fit=draw(st.booleans()),
    )


UNCAPPED = make.eviction_policy()


def signature(p: Plan) -> tuple[object, ...]:
    return (
        tuple((m.pod.key, m.to_node) for m in p.moves),
        tuple((m.pod.key, m.to_node, m.deferred_by) for m in p.deferred),
        tuple((s.pod.key, s.kind, s.reason) for s in p.skipped),
    )


@given(clusters(), policies())
def test_the_same_input_gives_the_same_plan(state: ClusterState, policy: RebalancePolicy) -> None:
    first = plan(analyze(state, policy), policy)
    second = plan(analyze(state, policy), policy)
    assert signature(first) == signature(second)


@given(clusters(), policies())
def test_no_budget_no_cap_is_exceeded_and_protected_pods_stay(
    state: ClusterState, policy: RebalancePolicy
) -> None:
    result = plan(analyze(state, policy), policy)
    ev = policy.eviction
    moves = result.moves
    if ev.max_per_run is not None:
        assert len(moves) <= ev.max_per_run
    for cap, key in (
        (ev.max_per_node, lambda m: m.from_node),
        (ev.max_per_namespace, lambda m: m.pod.namespace),
        (ev.max_per_workload, lambda m: m.workload),
    ):
        if cap is not None:
            assert max(Counter(map(key, moves)).values(), default=0) <= cap
    for pdb in state.budgets:
        covered = [
            m
            for m in moves
            if m.pod.namespace == pdb.namespace
            and m.pod.labels.get("app") == pdb.selector.requirements[0].values[0]
        ]
        if pdb.stale:
            assert covered == []
        assert len(covered) <= max(pdb.disruptions_allowed, 0)
    for m in moves:
        assert protection(m.pod, policy, None) is None
        assert m.pod.owner is not None


def _violations(state: ClusterState, policy: RebalancePolicy) -> dict[tuple[WorkloadRef, str], int]:
    return {(g.workload, g.constraint.key): g.violating for g in analyze(state, policy).groups}


@given(clusters(), policies())
def test_applying_the_plan_creates_no_violation_and_matches_its_prediction(
    state: ClusterState, policy: RebalancePolicy
) -> None:
    result = plan(analyze(state, policy), policy)
    before = _violations(state, policy)
    after = _violations(apply_moves(state, result.moves), policy)
    for key, count in after.items():
        if before.get(key, 0) == 0:
            assert count == 0, f"the plan created a violation in {key}"
    for outcome in result.outcomes:
        key = (outcome.group.workload, outcome.group.constraint.key)
        assert after.get(key, 0) == outcome.violating_after_run


@given(clusters(), policies())
def test_deferred_moves_finish_what_they_promise(
    state: ClusterState, policy: RebalancePolicy
) -> None:
    result = plan(analyze(state, policy), policy)
    after = _violations(apply_moves(state, result.moves + result.deferred), policy)
    for outcome in result.outcomes:
        if outcome.fixable:
            assert after.get((outcome.group.workload, outcome.group.constraint.key), 0) == 0


@given(clusters(single_constraint=True))
def test_one_constraint_with_room_is_fixed_in_the_fewest_moves(state: ClusterState) -> None:
    analysis = analyze(state, UNCAPPED)
    result = plan(analysis, UNCAPPED)
    for group in analysis.violations:
        assert group.minimum_moves is not None
        assert len(result.moves) == group.minimum_moves
        assert all(o.fixable for o in result.outcomes)


@given(clusters(), policies())
def test_no_violated_group_ends_with_a_larger_skew_beyond_max_skew(
    state: ClusterState, policy: RebalancePolicy
) -> None:
    """Whichever planner ran (these clusters often hold too many pods for the exhaustive
    search), a violated group never ends further out of maxSkew than it started."""
    result = plan(analyze(state, policy), policy)
    before = {(g.workload, g.constraint.key): g for g in analyze(state, policy).groups}
    replayed = apply_moves(state, result.moves + result.deferred)
    for g in analyze(replayed, policy).groups:
        old = before.get((g.workload, g.constraint.key))
        if old is not None and g.violating:
            assert g.skew <= max(old.skew, g.constraint.max_skew), (g.workload, g.constraint.key)


@given(clusters(), policies(), st.data())
def test_from_a_settled_instant_on_the_clock_changes_no_plan(
    state: ClusterState, caps: RebalancePolicy, data: st.DataObject
) -> None:
    """remedies/evict/clock.py's claim, which lets the operator reuse an unchanged cluster's
    plan: once no pod is younger than minPodAge and no workload is in its cooldown, a later
    instant gives the same plan (skip reasons, outcomes and all); before, it may not."""
    ages = st.sampled_from([0.0, 5.0, 30.0])
    eviction = replace(caps.eviction, min_pod_age=data.draw(ages), cooldown=data.draw(ages))
    policy = replace(caps, eviction=eviction)
    analysis = analyze(state, policy)
    workloads = sorted({g.workload for g in analysis.groups}, key=str)
    times = st.integers(0, 40).map(float)
    history = {w: data.draw(times) for w in workloads if data.draw(st.booleans())}
    first = data.draw(times)
    later = first + data.draw(times)
    if not settled(state.pods, policy, first, history):
        young = any(
            first - p.created < eviction.min_pod_age for p in state.pods if p.created is not None
        )
        assert young or any(first - t < eviction.cooldown for t in history.values())
        return
    before = plan(analysis, policy, first, history)
    assert plan(analysis, policy, later, history) == before

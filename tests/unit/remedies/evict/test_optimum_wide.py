"""respread's plan against the brute-force optimum on a second, wider generator.

test_optimum.py draws ReplicaSets with zone and hostname constraints. This one draws what that
one does not: several constraints per pod mixing DoNotSchedule and ScheduleAnyway, maxSkew up
to 3, minDomains above the domain count, nodeAffinityPolicy and nodeTaintsPolicy (Honor and
Ignore) over tainted, cordoned and affinity-excluded nodes, matchLabelKeys over a rollout's two
versions, nil and `{}` selectors, selectors that count other workloads' pods (some of them
with no constraint of their own, so never misplaced and never moved), pods in another
namespace, StatefulSet, DaemonSet, bare, terminating, finished and pending pods, nodes sharing
a hostname value, full nodes (a pod limit, or CPU requests against allocatable), and budgets
given by minAvailable or maxUnavailable (ints and percents) whose status is what the
disruption controller would write.

The property: replayed, the plan (this run's evictions and the deferred ones) leaves no
misplaced pod when it predicts so, with the fewest evictions that do; it never calls a
violation not fixable when some set of evictions fixes every one; no group without a misplaced
pod gets one; no violated group ends further beyond its maxSkew; and each violated group's
report holds up (a skew above maxSkew, or a pod on a node without the key or outside the
counts, and a minimum of at least one move, and no more than the plan makes).

The same property on larger clusters (up to ``LARGER_PODS`` pods, four workloads) covers the
greedy planner's steps across workloads (a pod two groups' selectors count, a preparatory move
of another workload's pod, planning again with the groups left unbalanced first) and the
exhaustive search's bound: where the bound cut the search, the plan is the greedy one and is
held to every promise but the fewest evictions.

``RESPREAD_WIDE_EXAMPLES=N`` runs N examples of each test instead of 300 (60 for the larger);
``RESPREAD_WIDE_PODS=N`` draws up to N pods instead of 7 (and up to 4 workloads above 7).
"""

from __future__ import annotations

import math
import os
from dataclasses import replace
from typing import Any
from unittest.mock import patch

from hypothesis import event, given, settings
from hypothesis import strategies as st

from respread.analysis.groups import Analysis, analyze
from respread.core.model import (
    ClusterState,
    DisruptionBudget,
    LabelSelector,
    Node,
    NodeSelectorTerm,
    Op,
    OwnerRef,
    Phase,
    Pod,
    PodSpec,
    Policy,
    Requirement,
    Resources,
    SpreadConstraint,
    Toleration,
    When,
)
from respread.core.selectors import selector_matches
from respread.remedies.evict import planner
from respread.remedies.evict.planner import Plan, plan
from respread.remedies.evict.replay import apply_moves
from tests.support.brute_force import describe, fewest_evictions, misplaced
from tests.support.builders import (
    EVERYTHING,
    budget,
    constraint,
    eviction_policy,
    hard,
    node,
    pod,
    pod_spec,
    sel,
    soft,
    state,
    taint,
)
from tests.support.constants import HOST, ZONE

# pods in all, movable or not: the brute force explores every set of evictions
MAX_PODS = int(os.environ.get("RESPREAD_WIDE_PODS", "7"))
LARGER_PODS = 10
POLICY = eviction_policy(cooldown=0.0)
EXAMPLES = int(os.environ.get("RESPREAD_WIDE_EXAMPLES", "0"))


@st.composite
def _nodes(draw: st.DrawFn) -> tuple[Node, ...]:
    nodes = []
    for k in range(draw(st.integers(2, 5))):
        labels: dict[str, str] = {}
        zone = draw(st.sampled_from(["za", "za", "zb", "zb", "zc", None]))
        if zone is not None:
            labels[ZONE] = zone
        host = draw(st.sampled_from([f"h{k}"] * 6 + ["h0", None]))  # shared, or missing
        if host is not None:
            labels[HOST] = host
        if draw(st.integers(0, 2)) == 0:
            labels["disk"] = "ssd"
        taints = (taint("dedicated", "x"),) if draw(st.integers(0, 4)) == 0 else ()
        nodes.append(
            node(
                f"n{k}",
                labels,
                taints=taints,
                unschedulable=draw(st.integers(0, 7)) == 0,
                max_pods=draw(st.sampled_from([None, None, 1, 2, 3])),
                allocatable=draw(
                    st.sampled_from([None, None, Resources(cpu=1000, memory=1 << 30)])
                ),
            )
        )
    return tuple(nodes)


def _selectors(app: str, tier: str) -> st.SearchStrategy[LabelSelector | None]:
    return st.sampled_from(
        [
            sel(app=app),
            sel(app=app),
            sel(tier=tier),  # counts the tier's other workloads too
            LabelSelector((Requirement("app", Op.EXISTS),)),  # counts every pod
            LabelSelector((Requirement("app", Op.NOT_IN, (app,)),)),  # counts others, not itself
            None,  # counts nothing: only the key matters
            EVERYTHING,  # `{}`: counts nothing either (spread-semantics.md 2.4)
        ]
    )


@st.composite
def _constraint(draw: st.DrawFn, key: str, app: str, tier: str) -> SpreadConstraint:
    when = draw(st.sampled_from([When.DO_NOT_SCHEDULE] * 3 + [When.SCHEDULE_ANYWAY]))
    hard = when is When.DO_NOT_SCHEDULE
    max_skew = draw(st.sampled_from([1, 1, 2, 3]))
    return constraint(
        key,
        draw(_selectors(app, tier)),
        when=when,
        max_skew=max_skew,
        min_domains=draw(st.sampled_from([None, None, 2, 3, 4])) if hard else None,
        affinity=draw(st.sampled_from([None, Policy.HONOR, Policy.IGNORE])),
        taints=draw(st.sampled_from([None, Policy.HONOR, Policy.IGNORE])),
        match_label_keys=draw(st.sampled_from([(), (), ("version",)])),
    )


_AFFINITIES: tuple[dict[str, Any], ...] = (  # pod_spec's keywords: none, nodeSelector, a term
    {},
    {},
    {},
    {"node_selector": {"disk": "ssd"}},
    {"required_terms": (NodeSelectorTerm((Requirement(ZONE, Op.NOT_IN, ("zc",)),)),)},
)


@st.composite
def _workload_spec(draw: st.DrawFn, app: str, tier: str) -> PodSpec:
    keys = draw(st.sampled_from([(ZONE,), (HOST,), (ZONE, HOST), (ZONE, ZONE), ()]))
    constraints = [draw(_constraint(key, app, tier)) for key in keys]
    if len(keys) == 2 and keys[0] == keys[1]:  # the API allows a key twice only hard + soft
        constraints[1] = soft(ZONE, constraints[1].selector, max_skew=constraints[1].max_skew)
        constraints[0] = replace(constraints[0], when=When.DO_NOT_SCHEDULE)
    tolerations = (Toleration("dedicated", "Exists"),) if draw(st.integers(0, 3)) == 0 else ()
    affinity = draw(st.sampled_from(_AFFINITIES))
    requests = Resources(cpu=draw(st.sampled_from([0, 0, 400, 600])))
    return pod_spec(constraints, **affinity, tolerations=tolerations, requests=requests)


@st.composite
def wide_clusters(draw: st.DrawFn, max_pods: int = MAX_PODS) -> ClusterState:
    nodes = draw(_nodes())
    names = [n.name for n in nodes]
    pods: list[Pod] = []
    room = max_pods
    for w in range(draw(st.integers(1, 3 if max_pods <= 7 else 4))):
        if room <= 0:
            break
        count = draw(st.integers(1, min(4, room)))
        room -= count
        app, tier = f"w{w}", draw(st.sampled_from(["a", "b"]))
        spec = draw(_workload_spec(app, tier))
        kind = draw(st.sampled_from(["ReplicaSet"] * 5 + ["StatefulSet", "DaemonSet", "bare"]))
        rollout = kind == "ReplicaSet" and draw(st.integers(0, 3)) == 0
        crowd = draw(st.sampled_from([0, 1, len(nodes) - 1]))
        for i in range(count):
            version = "2" if rollout and i % 2 else "1"
            owner = None if kind == "bare" else OwnerRef(kind, f"{app}-{version}")
            fate = draw(st.sampled_from(["live"] * 8 + ["terminating", "finished", "pending"]))
            pods.append(
                pod(
                    f"{app}-{i}",
                    None if fate == "pending" else names[draw(st.integers(0, crowd))],
                    {"app": app, "tier": tier, "version": version},
                    spec=spec,
                    phase={"finished": Phase.SUCCEEDED, "pending": Phase.PENDING}.get(
                        fate, Phase.RUNNING
                    ),
                    terminating=fate == "terminating",
                    owner=owner,
                    created=float(i),
                )
            )
    if draw(st.booleans()):  # the same labels in another namespace: never counted here
        labels = {"app": "w0", "tier": "a", "version": "1"}
        where = draw(st.sampled_from(names))
        stray = OwnerRef("ReplicaSet", "stray")
        pods.append(pod("stray", where, labels, namespace="other", owner=stray))
    budgets = [
        _budget(draw, f"pdb{b}", selector, pods)
        for b, selector in enumerate(
            draw(
                st.lists(
                    st.sampled_from([sel(app="w0"), sel(app="w1"), sel(app="w2"), sel(tier="a")]),
                    max_size=2,
                )
            )
        )
    ]
    return state(nodes, pods, budgets=budgets)


def _budget(
    draw: st.DrawFn, name: str, selector: LabelSelector, pods: list[Pod]
) -> DisruptionBudget:
    """A budget's status as the disruption controller writes it: expected pods, healthy ones,
    desiredHealthy from minAvailable or maxUnavailable (percentages rounded up), and
    disruptionsAllowed = healthy - desired, at least 0."""
    covered = [
        p
        for p in pods
        if p.namespace == "default" and not p.finished and selector_matches(selector, p.labels)
    ]
    expected = len(covered)
    healthy = sum(1 for p in covered if p.ready and not p.terminating and p.node_name)
    field, value = draw(
        st.sampled_from(
            [("min", 1), ("min", 2), ("min", "50%"), ("max", 1), ("max", 0), ("max", "30%")]
        )
    )
    scaled = math.ceil(int(value[:-1]) * expected / 100) if isinstance(value, str) else value
    desired = scaled if field == "min" else max(0, expected - scaled)
    stale = draw(st.integers(0, 7)) == 0
    return budget(
        name,
        selector,
        allowed=max(0, healthy - desired),
        generation=2 if stale else 1,
        observed=1,
        healthy=healthy,
        desired=desired,
        expected=expected,
    )


def check(state: ClusterState) -> Plan:
    """Every promise of the plan for ``state``, asserted; the plan."""
    analysis = analyze(state, POLICY)
    result = plan(analysis, POLICY)
    evictions = result.moves + result.deferred
    why = f"{result.method_note}\n{_moves(result)}\n{describe_wide(state)}"
    _check_report(analysis, why)
    after_state = apply_moves(state, evictions)
    _check_no_group_worse(analysis, analyze(after_state, POLICY), result, why)
    cut = "gave up" in result.method_note  # the search's bound: the greedy plan stands
    if all(o.fixable for o in result.outcomes):
        assert misplaced(after_state.nodes, after_state.pods) == [], why
        optimum = fewest_evictions(state, POLICY, len(evictions))
        if cut:
            assert optimum is not None and optimum <= len(evictions), f"optimum {optimum}\n{why}"
        else:
            assert optimum == len(evictions), f"optimum {optimum}\n{why}"
        for o in result.outcomes:  # "fixable by eviction (at least N move(s))"
            least = o.group.minimum_moves
            assert least is not None and least <= optimum, f"minimumMoves {least}\n{why}"
    elif not cut:
        optimum = fewest_evictions(state, POLICY, len(state.pods))
        assert optimum is None, f"optimum {optimum}\n{why}"
    return result


def _check_report(analysis: Analysis, why: str) -> None:
    for g in analysis.violations:
        c = g.constraint
        # a pod outside the counts (a node the inclusion policies leave out) is judged as one
        # more pod of its domain: misplaced there at a skew of exactly maxSkew
        space = analysis.index.tables(g.members.profile)[g.index].space
        outside = any(n not in space.node_domain for n in g.members.by_node)
        assert g.skew > c.max_skew or g.unresolvable or (outside and g.skew == c.max_skew), (
            f"{g.workload} {c.key}: skew {g.skew}\n{why}"
        )
        assert g.minimum_moves is None or g.minimum_moves >= 1, (
            f"{g.workload} {c.key}: minimumMoves {g.minimum_moves}\n{why}"
        )


def _check_no_group_worse(before: Analysis, after: Analysis, result: Plan, why: str) -> None:
    old = {(g.workload, g.members.profile.constraints[g.index]): g for g in before.groups}
    for g in after.groups:
        was = old.get((g.workload, g.constraint))
        if g.violating and was is not None:
            name = f"{g.workload} {g.constraint.key}"
            assert was.violating, f"{name} newly violated\n{why}"
            assert g.skew <= max(was.skew, g.constraint.max_skew), f"{name} worse\n{why}"
    unfixable = {(o.group.workload, o.group.constraint) for o in result.outcomes if not o.fixable}
    assert {(g.workload, g.constraint) for g in after.violations} <= unfixable, why


def _moves(result: Plan) -> str:
    return ", ".join(f"{m.pod.name}->{m.to_node}" for m in result.moves + result.deferred)


def describe_wide(state: ClusterState) -> str:
    lines = [describe(state)]
    for n in state.nodes:
        if n.taints or n.unschedulable:
            lines.append(f"node {n.name} taints={n.taints} cordoned={n.unschedulable}")
    for p in state.pods:
        lines.append(
            f"pod {p.namespace}/{p.name} owner={p.owner} phase={p.phase} term={p.terminating} "
            f"tol={len(p.spec.tolerations)} aff={p.spec.affinity} cons={p.spec.constraints}"
        )
    lines += [
        f"budget {b.name} {b.selector} allowed={b.disruptions_allowed}" for b in state.budgets
    ]
    return "\n".join(lines)


# More than the profile's default: an example takes milliseconds (300 of each: ~15 s).
_settings = settings(max_examples=EXAMPLES or 300)


@_settings
@given(wide_clusters())
def test_the_plan_keeps_every_promise_on_wide_clusters(state: ClusterState) -> None:
    result = check(state)
    evictions = len(result.moves) + len(result.deferred)
    fixable = all(o.fixable for o in result.outcomes)
    event(f"{result.method if result.outcomes else 'balanced'}, fixable={fixable}: {evictions}")


@_settings
@given(wide_clusters())
def test_the_greedy_planner_alone_keeps_its_promises_on_wide_clusters(
    state: ClusterState,
) -> None:
    result = check_greedy(state)
    event(f"greedy alone: {len(result.moves) + len(result.deferred)} eviction(s)")


def check_greedy(state: ClusterState) -> Plan:
    """The exhaustive search off (as on clusters too large for it): replayed, the greedy plan
    makes no group worse and leaves exactly the violations it calls not fixable."""
    with patch.object(planner, "EXACT_MOVABLE", 0):
        analysis = analyze(state, POLICY)
        result = plan(analysis, POLICY)
    why = f"{result.method_note}\n{_moves(result)}\n{describe_wide(state)}"
    after = analyze(apply_moves(state, result.moves + result.deferred), POLICY)
    _check_no_group_worse(analysis, after, result, why)
    unfixable = {(o.group.workload, o.group.constraint) for o in result.outcomes if not o.fixable}
    assert {(g.workload, g.constraint) for g in after.violations} == unfixable, why
    return result


@st.composite
def crowded_tiers(draw: st.DrawFn) -> ClusterState:
    """Two or three workloads crowded onto few nodes, whose zone and hostname spreads count
    their own pods or their whole tier's, over nodes some of which are nearly full: where one
    pod's move fixes two groups, or waits on another workload's."""
    nodes = [
        node(
            f"n{k}",
            {ZONE: draw(st.sampled_from(["za", "zb", "zc"])), HOST: f"h{k}"},
            max_pods=draw(st.sampled_from([None, None, 2, 3])),
        )
        for k in range(draw(st.integers(2, 4)))
    ]
    pods: list[Pod] = []
    room = LARGER_PODS
    for w in range(draw(st.integers(2, 3))):
        count = draw(st.integers(1, min(4, room)))
        room -= count
        app, tier = f"w{w}", draw(st.sampled_from(["a", "b"]))
        spread = [
            hard(key, draw(st.sampled_from([sel(app=app), sel(tier=tier)])), max_skew=skew)
            for key, skew in draw(
                st.lists(
                    st.tuples(st.sampled_from([ZONE, HOST]), st.integers(1, 2)),
                    min_size=1,
                    max_size=2,
                    unique_by=lambda t: t[0],
                )
            )
        ]
        crowd = draw(st.integers(1, 2))
        owner = OwnerRef("ReplicaSet", f"{app}-1")
        labels = {"app": app, "tier": tier}
        for i in range(count):
            on = nodes[draw(st.integers(0, crowd - 1))].name
            pods.append(
                pod(f"{app}-{i}", on, labels, constraints=tuple(spread), owner=owner, created=i)
            )
        if room <= 0:
            break
    return state(nodes, pods)


_larger = settings(max_examples=EXAMPLES or 150, deadline=None)


@_larger
@given(st.one_of(wide_clusters(max_pods=LARGER_PODS), crowded_tiers()))
def test_the_plan_keeps_every_promise_on_larger_clusters(state: ClusterState) -> None:
    result = check(state)
    fixable = all(o.fixable for o in result.outcomes)
    cut = "gave up" in result.method_note
    event(f"{result.method if result.outcomes else 'balanced'}, fixable={fixable}, cut={cut}")


@_larger
@given(st.one_of(wide_clusters(max_pods=LARGER_PODS), crowded_tiers()))
def test_the_greedy_planner_alone_keeps_its_promises_on_larger_clusters(
    state: ClusterState,
) -> None:
    result = check_greedy(state)
    prepared = any(m.reason.startswith("prepares") for m in result.moves + result.deferred)
    fixable = all(o.fixable for o in result.outcomes)
    event(f"{'violated' if result.outcomes else 'balanced'}, fixable={fixable}")
    event(f"a preparatory move: {prepared}")

"""plan_costs on a generated cluster equals a straightforward reference, field by field.

The reference is the algorithm as first written: every ReplicaSet's order searched, then
compared with the current costs' order, and every state judged by analysis.violating_nodes
itself. The fast paths (the current order kept without a search when it keeps maxSkew in every
state; the judgement with each node's reads prepared once) must give the same CostPlan on the
cluster as generated (no costs), with every wanted cost written (the steady state), and with
some written costs reversed (a current order the search must be compared with). A CostMemo
carried from scan to scan over those states, and over small changes that touch what a
remembered order read (a node's zone, a pod of another workload counted by a selector, a pod's
readiness), must give the same plans as the reference too: never a stale order.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from collections.abc import Sequence
from functools import cache
from types import ModuleType

import pytest

from respread.analysis.groups import Analysis, Members, analyze, violating_nodes
from respread.analysis.whatif import GroupCheck
from respread.core.annotations import DELETION_COST
from respread.core.model import ClusterState, Labels, Pod
from respread.inputs.objects import load_documents
from respread.inputs.policy import DEFAULT_POLICY, DeletionCostSettings
from respread.remedies.cost import order as deletion_cost
from respread.remedies.cost.memo import CostMemo
from respread.remedies.cost.order import (
    CostPlan,
    OrderState,
    _quality,
    _ranked_by_cost,
    _ScaleIn,
    plan_costs,
    removal_order,
    replay,
)
from tests.support.constants import ZONE
from tests.support.paths import REPO

GENERATE = REPO / "bench" / "generate.py"
SETTINGS = DeletionCostSettings(enabled=True)


@cache
def generated(nodes: int, pods: int, seed: int) -> ClusterState:
    spec = importlib.util.spec_from_file_location("bench_generate", GENERATE)
    assert spec is not None and spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    loaded = load_documents(("generated", m) for m in module.generate(nodes, pods, seed))
    assert not loaded.problems
    return loaded.state


def reference_kept_or_searched(
    sim: _ScaleIn, pods: Sequence[Pod]
) -> tuple[list[Pod], list[bool], bool]:
    computed = removal_order(sim, pods)
    for pod, _ in reversed(computed):
        sim.restore(pod)
    order = [p for p, _ in computed]
    safe = [ok for _, ok in computed]
    today = _ranked_by_cost(pods)
    if today is not None:
        safe_today = replay(sim, today)
        if _quality(safe_today) >= _quality(safe):
            return today, safe_today, True
    return order, safe, False


def reference_misplaced(check: GroupCheck) -> int:
    counts, m = check.counts, check.members
    positions = {n: tuple(p) for n, p in counts.positions(m).items() if p}
    if not positions:
        return 0
    view = Members(m.workload, m.profile, positions)
    bad = violating_nodes(counts.index, view, counts.tables(m.profile), check.constraint)
    return sum(len(positions[n]) for n in bad)


def reference(analysis: Analysis, monkeypatch: pytest.MonkeyPatch) -> CostPlan:
    with monkeypatch.context() as patched:
        patched.setattr(deletion_cost, "_kept_or_searched", reference_kept_or_searched)
        patched.setattr(GroupCheck, "misplaced", reference_misplaced)
        return plan_costs(analysis, SETTINGS)


def as_fields(plan: CostPlan) -> list[object]:
    """Every field a report or a patch reads (the pods by key: the states hold other objects)."""
    out: list[object] = []
    for o in plan.orders:
        out.append((o.workload, o.replica_set, o.safe_steps, o.state, o.message))
        out.extend(
            (
                p.pod.key,
                p.rank,
                p.tier,
                p.desired,
                p.current,
                p.within_max_skew,
                p.domains,
                p.foreign,
            )
            for p in o.pods
        )
    out.append(plan.excluded)
    out.append([(p.pod.key, p.desired) for p in plan.patches])
    out.append(plan.deferred_patches)
    return out


def with_costs(state: ClusterState, costs: dict[str, int]) -> ClusterState:
    pods = tuple(
        dataclasses.replace(p, annotations=Labels({**p.annotations, DELETION_COST: str(c)}))
        if (c := costs.get(p.key)) is not None
        else p
        for p in state.pods
    )
    return dataclasses.replace(state, pods=pods)


def wanted_costs(plan: CostPlan, *, reverse_every: int = 0) -> dict[str, int]:
    """The costs the plan writes; every ``reverse_every``-th ReplicaSet's reversed."""
    out: dict[str, int] = {}
    for n, o in enumerate(plan.orders):
        if o.state is not OrderState.CHANGES:
            continue
        costs = [p.desired for p in o.pods]
        if reverse_every and n % reverse_every == 0:
            costs.reverse()
        out.update((p.pod.key, c) for p, c in zip(o.pods, costs, strict=True))
    return out


@pytest.mark.parametrize(("nodes", "pods", "seed"), [(120, 3600, 1), (90, 2700, 2)])
def test_plan_costs_equals_the_reference(
    nodes: int, pods: int, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = generated(nodes, pods, seed)
    cold = analyze(state, DEFAULT_POLICY)
    first = plan_costs(cold, SETTINGS)
    assert as_fields(first) == as_fields(reference(cold, monkeypatch))
    assert any(o.safe_steps < len(o.pods) for o in first.orders)  # no order keeps maxSkew
    for reverse_every in (0, 3):
        changed = with_costs(state, wanted_costs(first, reverse_every=reverse_every))
        analysis = analyze(changed, DEFAULT_POLICY)
        fast = plan_costs(analysis, SETTINGS)
        assert as_fields(fast) == as_fields(reference(analysis, monkeypatch))
        kept = sum(o.state is OrderState.UNCHANGED for o in fast.orders)
        assert kept > len(fast.orders) // 2


def check(state: ClusterState, memo: CostMemo, monkeypatch: pytest.MonkeyPatch) -> CostPlan:
    analysis = analyze(state, DEFAULT_POLICY)
    with_memo = plan_costs(analysis, SETTINGS, memo)
    assert as_fields(with_memo) == as_fields(reference(analysis, monkeypatch))
    return with_memo


def changes(state: ClusterState, first: CostPlan) -> list[ClusterState]:
    """Small edits of what remembered orders read, each from the state given."""
    ordered = [o for o in first.orders if len(o.pods) > 2]
    pod = ordered[0].pods[0].pod
    node_name = pod.node_name
    relabelled = [
        dataclasses.replace(n, labels=Labels({**n.labels, ZONE: "elsewhere"}))
        if n.name == node_name
        else n
        for n in state.nodes
    ]
    gone = [p for p in state.pods if p.key != ordered[1].pods[-1].pod.key]
    unready = [
        dataclasses.replace(p, ready=False) if p.key == ordered[2].pods[-1].pod.key else p
        for p in state.pods
    ]
    neighbour = next(
        p
        for p in state.pods
        if p.namespace == pod.namespace
        and p.owner is not None
        and p.owner.name != ordered[0].replica_set
    )
    moved = [
        dataclasses.replace(p, node_name=node_name) if p.key == neighbour.key else p
        for p in state.pods
    ]
    # pods without constraints that the ReplicaSet's selectors count: only the counts change
    last = ordered[0].pods[-1].pod
    uncounted = tuple(
        dataclasses.replace(
            last,
            name=f"{last.name}-copy{n}",
            uid=None,
            owner=None,
            annotations=Labels(),
            spec=dataclasses.replace(last.spec, constraints=()),
        )
        for n in range(3)
    )
    return [
        dataclasses.replace(state, pods=(*state.pods, *uncounted)),
        dataclasses.replace(state, nodes=tuple(relabelled)),
        dataclasses.replace(state, pods=tuple(gone)),
        dataclasses.replace(state, pods=tuple(unready)),
        dataclasses.replace(state, pods=tuple(moved)),
    ]


@pytest.mark.parametrize(("nodes", "pods", "seed"), [(120, 3600, 1), (90, 2700, 2)])
def test_a_memo_across_scans_gives_the_reference_plans(
    nodes: int, pods: int, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    state = generated(nodes, pods, seed)
    memo = CostMemo()
    first = check(state, memo, monkeypatch)
    assert as_fields(check(state, memo, monkeypatch)) == as_fields(first)  # all remembered
    written = with_costs(state, wanted_costs(first))
    reversed_some = with_costs(state, wanted_costs(first, reverse_every=3))
    for changed in (written, reversed_some, written, state):
        check(changed, memo, monkeypatch)
    for changed in changes(written, first):
        check(written, memo, monkeypatch)  # remembered, then read again after the change
        check(changed, memo, monkeypatch)

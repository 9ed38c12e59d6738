"""The deletion-cost memo's whole-plan reuse (memo.py): the very analysis of the last scan,
with the same settings, gives the last plan again; anything else is planned afresh, equal to a
plan made without a memo. The analysis is never kept alive by the memo."""

from __future__ import annotations

import gc
import weakref
from dataclasses import replace

from respread.analysis.groups import analyze
from respread.core.model import ClusterState, OwnerRef
from respread.inputs.policy import DEFAULT_POLICY, DeletionCostSettings
from respread.remedies.cost.memo import CostMemo
from respread.remedies.cost.order import OrderState, plan_costs
from tests.support.builders import hard, pod, rollout, sel, state, with_cost, zone_node
from tests.support.constants import ZONE

SETTINGS = DeletionCostSettings(enabled=True)
RS = OwnerRef("ReplicaSet", "web-abc")


def cluster() -> ClusterState:
    """Two web pods in each of three zones, costs that take zone a first twice."""
    nodes = [zone_node(f"n{i}", z) for i, z in enumerate("abc")]
    labels = {"app": "web", "pod-template-hash": "abc"}
    constraints = [hard(ZONE, sel(app="web"))]
    pods = [
        with_cost(pod(f"web-n{n}-{i}", f"n{n}", labels, constraints=constraints, owner=RS), c)
        for (n, i), c in zip([(n, i) for n in range(3) for i in range(2)], range(1, 7), strict=True)
    ]
    return state(nodes, pods, workloads=rollout("web", "abc"))


def test_the_same_analysis_gives_the_last_plan_again() -> None:
    analysis = analyze(cluster(), DEFAULT_POLICY)
    memo = CostMemo()
    first = plan_costs(analysis, SETTINGS, memo)
    assert first.patches  # something to write: the plan is not trivial
    assert plan_costs(analysis, SETTINGS, memo) is first
    assert first == plan_costs(analysis, SETTINGS)


def test_another_analysis_or_other_settings_are_planned_afresh() -> None:
    analysis = analyze(cluster(), DEFAULT_POLICY)
    memo = CostMemo()
    first = plan_costs(analysis, SETTINGS, memo)
    again = analyze(cluster(), DEFAULT_POLICY)  # equal, another object
    replanned = plan_costs(again, SETTINGS, memo)
    assert replanned is not first
    assert replanned == first
    capped = DeletionCostSettings(enabled=True, max_patches_per_scan=2)
    fewer = plan_costs(again, capped, memo)
    assert fewer == plan_costs(again, capped)
    assert len(fewer.patches) == 2 < len(first.patches)


def test_the_memo_does_not_keep_the_analysis_alive() -> None:
    memo = CostMemo()
    analysis = analyze(cluster(), DEFAULT_POLICY)
    plan_costs(analysis, SETTINGS, memo)
    held = weakref.ref(analysis)
    del analysis
    gc.collect()
    assert held() is None


def test_a_pod_changed_where_the_recall_does_not_look_is_assembled_again() -> None:
    """A pod replaced by one that differs only in who manages its cost (the order recalled,
    the pods equal as the search reads them) is assembled again: reported as a conflict."""
    memo = CostMemo()
    first = plan_costs(analyze(cluster(), DEFAULT_POLICY), SETTINGS, memo)
    same_pods = cluster()
    state_again = analyze(same_pods, DEFAULT_POLICY)
    again = plan_costs(state_again, SETTINGS, memo)
    assert again is not first  # another analysis: planned again, equal
    assert again.orders == first.orders
    pods = list(same_pods.pods)
    pods[0] = with_cost(pods[0], 1, managers=("kubectl",))
    foreign = replace(same_pods, pods=tuple(pods))
    changed = plan_costs(analyze(foreign, DEFAULT_POLICY), SETTINGS, memo)
    assert changed == plan_costs(analyze(foreign, DEFAULT_POLICY), SETTINGS)
    assert [o.state for o in changed.orders] == [OrderState.CONFLICT]


def test_the_same_pods_scanned_again_reuse_their_assembled_order() -> None:
    memo = CostMemo()
    state_ = cluster()
    first = plan_costs(analyze(state_, DEFAULT_POLICY), SETTINGS, memo)
    again = plan_costs(analyze(state_, DEFAULT_POLICY), SETTINGS, memo)
    assert again.orders[0] is first.orders[0]
    other = DeletionCostSettings(enabled=True, take_over=True)
    taken = plan_costs(analyze(state_, DEFAULT_POLICY), other, memo)
    assert taken.orders[0] is not first.orders[0]  # other settings: assembled again
    assert taken == plan_costs(analyze(state_, DEFAULT_POLICY), other)

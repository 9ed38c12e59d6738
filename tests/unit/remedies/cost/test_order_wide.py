"""The deletion-cost order on a wider space of generated clusters, checked by brute force.

test_deletion_cost_properties.py covers one ReplicaSet of Ready or not-Ready pods without costs.
This generator adds: up to four zones of up to three nodes; nodes without the zone key and pods
pinned by a nodeSelector under nodeAffinityPolicy Honor or Ignore; minDomains above the domain
count; maxSkew up to 3; a Deployment mid-rollout (two ReplicaSets, matchLabelKeys splitting them
or not, the new template's constraints the same or not); a second hard or a soft constraint;
another workload's pods counted by the selector; pods in every tier (unassigned, Pending,
Unknown, not Ready, Ready, terminating), pods on a node gone from the snapshot, look-alikes in
another namespace; costs already written, tied, or owned by another field manager (never
written without takeOver: a conflict).

For each ReplicaSet ordered, with every state judged afresh by ``analyze`` on the cluster
without the removed pods (a state is within maxSkew when no group holding the ReplicaSet's pods
is violated and no group is violated that was not before):

- (c) each step's verdict is that of ``analyze``;
- (a, b) ``safe_steps``, the removals from the first within maxSkew, is the most that any
  removal order (the controller's tiers first) achieves, found by exhaustive search; so the
  order keeps every state within maxSkew whenever some order does;
- the report says so truthfully: "violated now" only when a group holding its pods is violated;
- the costs give the order: ranking the pods by (tier, desired cost) is the order, no tie
  within a tier;
- (d) nothing raises.

HYPOTHESIS_WIDE_EXAMPLES (default 150) sets the number of examples.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from respread.analysis.groups import Group, WorkloadRef, analyze
from respread.core.annotations import DELETION_COST
from respread.core.model import ClusterState, Labels, OwnerRef, Phase, Pod, Policy, SpreadConstraint
from respread.inputs.policy import DEFAULT_POLICY, DeletionCostSettings
from respread.remedies.cost.order import CostPlan, OrderState, ReplicaSetOrder, plan_costs
from respread.scheduling.spread import Profile
from tests.support.builders import hard, node, pod, rollout, sel, soft, state, taint, zone_node
from tests.support.constants import HOST, ZONE
from tests.support.removal_orders import most_safe_removals

WEB = WorkloadRef("default", "Deployment", "web")
FRONT = sel(tier="front")
EXAMPLES = int(os.environ.get("HYPOTHESIS_WIDE_EXAMPLES", "150"))
MAX_PODS = 7  # per ReplicaSet, to keep the exhaustive search small


@dataclass(frozen=True)
class Generated:
    cluster: ClusterState
    replica_sets: dict[str, tuple[Pod, ...]]  # web's ReplicaSets' active pods


def _tiered(draw: st.DrawFn, p: Pod) -> Pod:
    kind = draw(st.sampled_from(["ready"] * 6 + ["notready", "pending", "unknown", "terminating"]))
    if kind == "notready":
        return replace(p, ready=False)
    if kind == "pending":
        return replace(p, phase=Phase.PENDING, ready=False)
    if kind == "unknown":
        return replace(p, phase=Phase.UNKNOWN, ready=False)
    if kind == "terminating":
        return replace(p, terminating=True)
    return p


def _costed(draw: st.DrawFn, p: Pod) -> Pod:
    cost = draw(st.sampled_from([None, None, "1", "2", "3", "5", "-1"]))
    if cost is None:
        return p
    managers = draw(st.sampled_from([("respread",), ("respread",), ("kubectl-annotate",)]))
    return replace(p, annotations=Labels({DELETION_COST: cost}), deletion_cost_managers=managers)


@st.composite
def _constraints(draw: st.DrawFn) -> list[SpreadConstraint]:
    """A pod template's constraints: a hard zone one, maybe a second on the hostname."""
    zone_constraint = hard(
        ZONE,
        FRONT if draw(st.booleans()) else sel(app="web"),
        max_skew=draw(st.integers(1, 3)),
        min_domains=draw(st.sampled_from([None, 2, 3, 5])),
        affinity=draw(st.sampled_from([None, Policy.HONOR, Policy.IGNORE])),
        taints=draw(st.sampled_from([None, Policy.HONOR, Policy.IGNORE])),
        match_label_keys=("pod-template-hash",) if draw(st.booleans()) else (),
    )
    constraints = [zone_constraint]
    second = draw(st.sampled_from(["none", "hard", "soft"]))
    if second == "hard":
        constraints.append(hard(HOST, sel(app="web"), max_skew=draw(st.integers(1, 2))))
    elif second == "soft":
        constraints.append(soft(HOST, sel(app="web")))
    return constraints


def _pods_per_node(draw: st.DrawFn, names: list[str]) -> list[int]:
    """How many pods of a ReplicaSet each node holds: anything from 0 to 2, or round-robin
    over the zones' n-th nodes from a random one (mostly balanced)."""
    if draw(st.booleans()):
        return [draw(st.integers(0, 2)) for _ in names]
    rounds = sorted(range(len(names)), key=lambda j: (names[j][-1], names[j]))
    start, count = draw(st.integers(0, len(names) - 1)), draw(st.integers(2, MAX_PODS))
    per_node = [0] * len(names)
    for k in range(count):
        per_node[rounds[(start + k) % len(names)]] += 1
    return per_node


@st.composite
def clusters(draw: st.DrawFn) -> Generated:
    zones = draw(st.integers(1, 4))
    nodes = []
    for z in range(zones):
        for k in range(draw(st.integers(1, 3))):
            name = f"z{z}n{k}"
            pool = "a" if (z + k) % 2 == 0 else "b"
            nodes.append(zone_node(name, f"z{z}", pool=pool))
    if draw(st.booleans()):
        nodes.append(node("nokey", {HOST: "nokey", "pool": "a"}))
    if draw(st.integers(0, 3)) == 0:
        nodes.append(zone_node("tainted", "z0", taints=(taint("dedicated", "x"),)))
    names = [n.name for n in nodes]
    pinned = draw(st.booleans())
    template = draw(_constraints())
    replica_sets: dict[str, list[Pod]] = {}
    all_web: list[Pod] = []
    for rs in draw(st.sampled_from([("abc",), ("abc", "new")])):
        made: list[Pod] = []
        # mid-rollout, the new template may change the constraints
        constraints = template if rs == "abc" or draw(st.booleans()) else draw(_constraints())
        per_node = _pods_per_node(draw, names)
        per_node.append(draw(st.integers(0, 1)))  # on a node the snapshot no longer holds
        per_node.append(draw(st.integers(0, 1)))  # unassigned
        for name, number in zip([*names, "gone", None], per_node, strict=True):
            for i in range(number):
                p = pod(
                    f"web-{rs}-{name or 'none'}-{i}",
                    name,
                    {"app": "web", "tier": "front", "pod-template-hash": rs},
                    constraints=constraints,
                    owner=OwnerRef("ReplicaSet", f"web-{rs}"),
                    node_selector={"pool": "a"} if pinned else None,
                )
                p = replace(p, created=float(draw(st.integers(0, 3))))
                if name is not None:
                    p = _tiered(draw, p)
                made.append(_costed(draw, p))
        made = made[:MAX_PODS]
        all_web.extend(made)
        replica_sets[f"web-{rs}"] = [p for p in made if not p.terminating]
    api_constraint = hard(ZONE, draw(st.sampled_from([FRONT, sel(app="api")])))
    api = [
        pod(
            f"api-{name}-{i}",
            name,
            {"app": "api", "tier": "front", "pod-template-hash": "def"},
            constraints=[api_constraint],
            owner=OwnerRef("ReplicaSet", "api-def"),
        )
        for name in names
        for i in range(draw(st.integers(0, 1)))
    ]
    workloads = (*rollout("web", "abc", "new"), *rollout("api", "def"))
    # the same labels in another namespace: never counted by web's selectors
    elsewhere = [
        replace(p, namespace="other", name=f"other-{p.name}", owner=OwnerRef("ReplicaSet", "x"))
        for p in all_web[: draw(st.integers(0, 2))]
    ]
    cluster = state(nodes, (*all_web, *api, *elsewhere), workloads=workloads)
    return Generated(cluster, {k: tuple(v) for k, v in replica_sets.items()})


GroupId = tuple[WorkloadRef, int, Profile]


class Judge:
    """Whether a state (the cluster without some pods) is within maxSkew for one ReplicaSet's
    scale-in, by ``analyze``."""

    def __init__(self, cluster: ClusterState, replica_set: str) -> None:
        self.cluster = cluster
        self._seen: dict[frozenset[str], bool] = {}
        analysis = analyze(cluster, DEFAULT_POLICY)
        self.own = frozenset(
            self._id(g)
            for g in analysis.groups
            if any(
                p.owner == OwnerRef("ReplicaSet", replica_set)
                for on_node in g.members.by_node.values()
                for p in on_node
            )
        )
        self.before = self._violated(frozenset())

    @staticmethod
    def _id(g: Group) -> GroupId:
        # one group per profile: two ReplicaSets' pods may share a workload and a selector
        return (g.workload, g.index, g.members.profile)

    def _violated(self, removed: frozenset[str]) -> frozenset[GroupId]:
        pods = tuple(p for p in self.cluster.pods if p.name not in removed)
        analysis = analyze(replace(self.cluster, pods=pods), DEFAULT_POLICY)
        return frozenset(self._id(g) for g in analysis.violations)

    @property
    def violated_now(self) -> bool:
        return bool(self.before & self.own)

    def within(self, removed: frozenset[str]) -> bool:
        known = self._seen.get(removed)
        if known is None:
            now = self._violated(removed)
            known = self._seen[removed] = not (now & self.own) and now <= self.before
        return known


def check_order(cluster: ClusterState, order: ReplicaSetOrder, pods: Sequence[Pod]) -> None:
    assert sorted(e.pod.name for e in order.pods) == sorted(p.name for p in pods)
    ranked = sorted(order.pods, key=lambda e: (e.tier, e.desired))
    assert [e.pod.name for e in ranked] == [e.pod.name for e in order.pods]
    for a, b in itertools.pairwise(order.pods):
        assert a.tier != b.tier or a.desired < b.desired, "tied costs within a tier"

    judge = Judge(cluster, order.replica_set)
    removed: set[str] = set()
    verdicts = []
    for entry in order.pods:
        removed.add(entry.pod.name)
        verdicts.append(judge.within(frozenset(removed)))
    assert [e.within_max_skew for e in order.pods] == verdicts
    prefix = next((i for i, ok in enumerate(verdicts) if not ok), len(verdicts))
    assert order.safe_steps == prefix
    most = most_safe_removals(judge, pods)
    event(f"violated now: {judge.violated_now}")
    event(f"safe steps: {'all' if most == len(pods) else 'some' if most else 'none'}")
    assert order.safe_steps == most, f"{order.safe_steps} safe removals; {most} achievable"
    if order.message.startswith("violated now"):
        assert judge.violated_now, order.message


def check_writes(plan: CostPlan, take_over: bool) -> None:
    """A pod whose cost another manager owns is never written without takeOver; a ReplicaSet
    with such a pod and a change is a conflict."""
    for order in plan.orders:
        foreign = any(e.foreign for e in order.pods)
        if foreign and order.changed and not take_over:
            assert order.state is OrderState.CONFLICT
        elif order.changed:
            assert order.state is OrderState.CHANGES
        else:
            assert order.state is OrderState.UNCHANGED
    for entry in plan.patches:
        assert entry.changed and (take_over or not entry.foreign)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_the_order_keeps_max_skew_as_long_as_any_order_can(case: Generated) -> None:
    analysis = analyze(case.cluster, DEFAULT_POLICY)
    plan = plan_costs(analysis, DeletionCostSettings(enabled=True))
    check_writes(plan, take_over=False)
    taken = plan_costs(analysis, DeletionCostSettings(enabled=True, take_over=True))
    check_writes(taken, take_over=True)
    assert [o.pods for o in taken.orders] == [o.pods for o in plan.orders]
    by_name = {o.replica_set: o for o in plan.orders if o.workload.namespace == "default"}
    assert set(by_name) <= {"web-abc", "web-new", "api-def"}
    nodes = {n.name for n in case.cluster.nodes}
    for name, pods in case.replica_sets.items():
        if name not in by_name:
            # no active pod, or nothing of web analysed: no pod of it on a node of the snapshot
            on_nodes = any(p.node_name in nodes for ps in case.replica_sets.values() for p in ps)
            assert not pods or not on_nodes
            continue
        check_order(case.cluster, by_name[name], pods)

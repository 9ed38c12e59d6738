"""The deletion-cost order on generated workloads (hypothesis), checked by brute force.

Clusters of up to three zones with one or two nodes each, maybe a node without the zone label
and a tainted node; a Deployment "web" with a hard zone constraint (maxSkew, minDomains,
nodeTaintsPolicy, matchLabelKeys, a selector that may also count another Deployment's pods) and
maybe a hard hostname constraint; another Deployment "api"; a StatefulSet and a bare pod.

Every state along the order is judged afresh by ``analyze`` on the cluster without the removed
pods (independent of the simulation): a state is within maxSkew when no group of web is
violated and no group that was balanced before is violated. Then:

- the order's per-step verdicts are exactly those of ``analyze``;
- whenever some removal order (the controller's tiers first) keeps every state within maxSkew,
  found by exhaustive search, the computed order does too;
- the order holds every active pod of web's ReplicaSet once, tiers first, with costs rising
  along it; StatefulSet and bare pods are never ordered.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from hypothesis import event, given
from hypothesis import strategies as st

from respread.analysis.groups import WorkloadRef, analyze
from respread.core.model import ClusterState, OwnerRef, Pod, Policy
from respread.inputs.policy import DEFAULT_POLICY, DeletionCostSettings
from respread.remedies.cost.order import plan_costs
from tests.support.builders import hard, node, pod, rollout, sel, state, taint, workload, zone_node
from tests.support.constants import HOST, ZONE
from tests.support.removal_orders import most_safe_removals

WEB = WorkloadRef("default", "Deployment", "web")
WEB_RS = OwnerRef("ReplicaSet", "web-abc")
API_RS = OwnerRef("ReplicaSet", "api-def")
FRONT = sel(tier="front")


@dataclass(frozen=True)
class Generated:
    cluster: ClusterState
    web: tuple[Pod, ...]  # the pods of web's ReplicaSet


@st.composite
def clusters(draw: st.DrawFn) -> Generated:
    zones = draw(st.integers(1, 3))
    nodes = []
    for z in range(zones):
        for k in range(draw(st.integers(1, 2))):
            name = f"z{z}n{k}"
            nodes.append(zone_node(name, f"z{z}"))
    if draw(st.integers(0, 3)) == 0:
        nodes.append(node("nokey", {HOST: "nokey"}))
    if draw(st.integers(0, 3)) == 0:
        nodes.append(zone_node("tainted", "z0", taints=(taint("dedicated", "x"),)))
    shared = draw(st.booleans())
    web_constraints = [
        hard(
            ZONE,
            FRONT if shared else sel(app="web"),
            max_skew=draw(st.integers(1, 2)),
            min_domains=draw(st.sampled_from([None, 2, 4])),
            taints=draw(st.sampled_from([None, Policy.HONOR])),
            match_label_keys=("pod-template-hash",) if draw(st.booleans()) else (),
        )
    ]
    if draw(st.booleans()):
        web_constraints.append(hard(HOST, sel(app="web"), max_skew=draw(st.integers(1, 2))))
    names = [n.name for n in nodes]
    web: list[Pod] = []
    for name in names:
        for i in range(draw(st.integers(0, 2))):
            ready = draw(st.integers(0, 4)) > 0  # mostly Ready
            web.append(
                pod(
                    f"web-{name}-{i}",
                    name,
                    {"app": "web", "tier": "front", "pod-template-hash": "abc"},
                    constraints=web_constraints,
                    owner=WEB_RS,
                    ready=ready,
                    created=float(draw(st.integers(0, 3))),
                )
            )
    web = web[:6]  # keep the exhaustive search small
    api_constraint = hard(ZONE, draw(st.sampled_from([FRONT, sel(app="api")])))
    api = [
        pod(
            f"api-{name}-{i}",
            name,
            {"app": "api", "tier": "front", "pod-template-hash": "def"},
            constraints=[api_constraint],
            owner=API_RS,
        )
        for name in names
        for i in range(draw(st.integers(0, 1)))
    ]
    excluded = [
        pod(
            "db-0",
            names[0],
            {"app": "db"},
            constraints=[hard(ZONE, sel(app="db"))],
            owner=OwnerRef("StatefulSet", "db"),
        ),
        pod("lonely", names[-1], {"app": "lonely"}, constraints=[hard(ZONE, sel(app="lonely"))]),
    ]
    workloads = (
        *rollout("web", "abc"),
        *rollout("api", "def"),
        workload("StatefulSet", "db", sel(app="db")),
    )
    cluster = state(nodes, (*web, *api, *excluded), workloads=workloads)
    return Generated(cluster, tuple(web))


class Judge:
    """Whether a state (the cluster without some of web's pods) is within maxSkew, by analyze."""

    def __init__(self, cluster: ClusterState) -> None:
        self.cluster = cluster
        self._seen: dict[frozenset[str], bool] = {}
        self.before = self._violated(frozenset())

    def _violated(self, removed: frozenset[str]) -> frozenset[tuple[WorkloadRef, str]]:
        pods = tuple(p for p in self.cluster.pods if p.name not in removed)
        analysis = analyze(replace(self.cluster, pods=pods), DEFAULT_POLICY)
        return frozenset((g.workload, g.constraint.key) for g in analysis.violations)

    def within(self, removed: frozenset[str]) -> bool:
        known = self._seen.get(removed)
        if known is None:
            now = self._violated(removed)
            known = self._seen[removed] = not any(w == WEB for w, _ in now) and now <= self.before
        return known


@given(clusters())
def test_the_order_keeps_max_skew_whenever_some_order_does(case: Generated) -> None:
    plan = plan_costs(analyze(case.cluster, DEFAULT_POLICY), DeletionCostSettings(enabled=True))
    for order in plan.orders:
        for entry in order.pods:
            assert entry.pod.owner is not None and entry.pod.owner.kind == "ReplicaSet"
            assert order.workload.kind in ("Deployment", "ReplicaSet")
    web_orders = [o for o in plan.orders if o.replica_set == "web-abc"]
    ordered_names = {e.pod.name for o in plan.orders for e in o.pods}
    assert "db-0" not in ordered_names and "lonely" not in ordered_names
    if not web_orders:
        # no web pod is bound and analysed: nothing to order
        assert not any(p.node_name for p in case.web)
        event("no web pod bound")
        return
    (order,) = web_orders
    assert sorted(e.pod.name for e in order.pods) == sorted(p.name for p in case.web)
    tiers = [e.tier for e in order.pods]
    assert tiers == sorted(tiers)
    desired = [e.desired for e in order.pods]
    assert all(a < b for a, b in itertools.pairwise(desired))

    judge = Judge(case.cluster)
    removed: set[str] = set()
    verdicts = []
    for entry in order.pods:
        removed.add(entry.pod.name)
        verdicts.append(judge.within(frozenset(removed)))
    assert [e.within_max_skew for e in order.pods] == verdicts
    exists = most_safe_removals(judge, case.web) == len(case.web)
    event(f"{len(order.pods)} pods; a safe order exists: {exists}; found: {all(verdicts)}")
    if exists:
        assert all(verdicts), "a safe order exists, but the computed one leaves maxSkew"
        assert order.safe_steps == len(order.pods)

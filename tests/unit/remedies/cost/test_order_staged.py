"""A ReplicaSet's order written over several scans (maxPatchesPerScan), on generated clusters.

Pods of one ReplicaSet over two to four zones of one or two nodes, some not Ready (a lower tier
the controller removes first), under a hard zone constraint and maybe a hard hostname one; old
costs absent, tied, negative or above the new ones, as an earlier order, a hand or another tool
left them; a cap of one to five patches a scan. Every scan's patches are applied as the API
server would and the next scan plans on the result. Then:

- after each scan that writes, the ReplicaSet controller's first removals (tier, then cost) are
  exactly the order's first ones, up to the last pod written, and each goes strictly before
  every pod after it: a scale-in between two scans follows the new order that far;
- no scan writes more than the cap, and the scans end, within one more than the order's
  length over the cap, with an order whose costs give it and nothing left to write;
- the installed order is as good as the first scan's (its safe removals from the start).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from hypothesis import event, given
from hypothesis import strategies as st

from respread.analysis.groups import analyze
from respread.core.model import ClusterState, Node, OwnerRef, Pod
from respread.inputs.policy import DEFAULT_POLICY, DeletionCostSettings
from respread.remedies.cost.order import OrderState, plan_costs
from respread.scheduling.controller import current_cost, tier
from tests.support.builders import hard, pod, rollout, sel, state, with_cost, zone_node
from tests.support.constants import HOST, ZONE


@dataclass(frozen=True)
class Case:
    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...]
    cap: int

    def cluster(self, pods: tuple[Pod, ...]) -> ClusterState:
        return state(self.nodes, pods, workloads=rollout("web", "abc"))


OLD_COST = st.one_of(
    st.none(), st.integers(-5, 15), st.sampled_from([0, 1, 1000, -1000, 2**31 - 1])
)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    zones = draw(st.integers(2, 4))
    nodes = [
        zone_node(f"n{z}{i}", f"z{z}") for z in range(zones) for i in range(draw(st.integers(1, 2)))
    ]
    constraints = [hard(ZONE, sel(app="web"), max_skew=draw(st.integers(1, 2)))]
    if draw(st.booleans()):
        constraints.append(hard(HOST, sel(app="web"), max_skew=draw(st.integers(1, 3))))
    pods = []
    for n in nodes:
        for i in range(draw(st.integers(0, 4))):
            cost = draw(OLD_COST)
            pods.append(
                with_cost(
                    replace(
                        pod(
                            f"web-{n.name}-{i}",
                            n.name,
                            {"app": "web", "pod-template-hash": "abc"},
                            constraints=constraints,
                            owner=OwnerRef("ReplicaSet", "web-abc"),
                        ),
                        ready=draw(st.integers(0, 5)) > 0,
                    ),
                    cost,
                )
            )
    return Case(tuple(nodes), tuple(pods), draw(st.integers(1, 5)))


def written(pods: tuple[Pod, ...], patches: dict[str, int]) -> tuple[Pod, ...]:
    return tuple(with_cost(p, patches.get(p.name)) for p in pods)


@given(cases())
def test_an_order_written_over_several_scans_is_followed_from_its_head(case: Case) -> None:
    settings = DeletionCostSettings(enabled=True, max_patches_per_scan=case.cap)
    pods = case.pods
    first_safe: int | None = None
    limit = math.ceil(len(pods) / case.cap) + 1
    for scan in range(1, limit + 1):
        plan = plan_costs(analyze(case.cluster(pods), DEFAULT_POLICY), settings)
        if not plan.orders:
            assert not pods
            event("no pods")
            return
        (order,) = plan.orders
        if first_safe is None:
            first_safe = order.safe_steps
        if not plan.patches:
            assert order.state is OrderState.UNCHANGED
            assert order.safe_steps >= first_safe
            names = [e.pod.name for e in order.pods]
            ranking = sorted(pods, key=lambda p: (tier(p), current_cost(p) or 0, p.name))
            assert [p.name for p in ranking] == names
            event(f"installed in {scan - 1} scan(s) of writes")
            return
        assert len(plan.patches) <= case.cap
        names = [e.pod.name for e in order.pods]
        pods = written(pods, {e.pod.name: e.desired for e in plan.patches})
        head = max(names.index(e.pod.name) for e in plan.patches) + 1
        keys = {p.name: (tier(p), current_cost(p) or 0) for p in pods}
        for i, name in enumerate(names[:head]):
            assert all(keys[name] < keys[other] for other in names[i + 1 :]), (
                f"{name} (removal {i + 1} of the order) is not strictly before every pod"
                f" after it: {[(n, keys[n]) for n in names]}"
            )
    raise AssertionError(f"still writing after {limit} scans")

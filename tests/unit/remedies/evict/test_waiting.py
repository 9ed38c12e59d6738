"""The Waiting verdict: a group the plan leaves unbalanced, with pods a hold keeps (minPodAge,
a budget that lifts by itself), is Waiting when, once the holds lift, the greedy planner
balances it on top of the plan (after every move the plan makes, this run's and later runs'),
planning only the groups that can be Waiting.

One table row per way another workload's planned move decides it, then properties on generated
clusters: the plan's simulation, replayed, is the one the verdict goes on from; Waiting is only
ever said of an unbalanced group with a hold.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from respread.analysis.groups import Members, WorkloadRef, analyze
from respread.core.model import ClusterState, OwnerRef, Pod
from respread.inputs.policy import RebalancePolicy
from respread.remedies.evict.evictor import EvictionGate
from respread.remedies.evict.planner import _plan, _replayed, plan
from respread.remedies.evict.simulation import PlanInputs, Simulation
from respread.remedies.evict.steps import Verdict
from tests.support.builders import eviction_policy, hard, pod, sel, state, zone_node
from tests.support.constants import ZONE
from tests.support.tables import cases
from tests.unit.remedies.evict.test_plan_properties import clusters, policies

NOW = 1_800_000_000.0
OLD, YOUNG = NOW - 86_400, NOW - 60
MIN_POD_AGE = 3600.0
API = WorkloadRef("default", "ReplicaSet", "api-rs")
WEB = WorkloadRef("default", "ReplicaSet", "web-rs")


def pods(app: str, per_zone: dict[str, int], created: float, counted: str = "app") -> list[Pod]:
    """``app``'s pods (labelled tier=web too), ``per_zone[z]`` on node ``z1``, zone spread
    maxSkew 1 over the pods with its own ``app`` label, or with ``counted="tier"`` over every
    tier=web pod."""
    selector = sel(app=app) if counted == "app" else sel(tier="web")
    return [
        pod(
            f"{app}-{z}{i}",
            f"{z}1",
            {"app": app, "tier": "web"},
            constraints=(hard(ZONE, selector),),
            owner=OwnerRef("ReplicaSet", f"{app}-rs"),
            created=created,
        )
        for z, count in per_zone.items()
        for i in range(count)
    ]


WEB_ROOM = {"a": 3, "b": 1}  # one move from a to c balances it
WEB_COUNTS = {"a": 1, "b": 2}  # counting api's pods too: balanced only once api's move


@cases(
    ("c_room", "api", "api_created", "web", "counted", "api_verdict", "web_verdict"),
    [
        # web (young) counts api's pods: with api's three in a, no move of web's own balances
        # it; the plan moves two of api's (old) out of a, and web's b pod to c then does
        (
            "balanced-by-another-workloads-planned-move",
            None,
            {"a": 3},
            OLD,
            WEB_COUNTS,
            "tier",
            Verdict.FIXABLE,
            Verdict.WAITING,
        ),
        # the same with api young too: nothing moves now; both wait (the lifted pass plans
        # both, api's moves first in effect)
        (
            "both-held-each-waits",
            None,
            {"a": 3},
            YOUNG,
            WEB_COUNTS,
            "tier",
            Verdict.WAITING,
            Verdict.WAITING,
        ),
        # api moves one pod into c1 and leaves one place there: web's
        (
            "room-left-by-the-plan",
            2,
            {"a": 2, "b": 1},
            OLD,
            WEB_ROOM,
            "app",
            Verdict.FIXABLE,
            Verdict.WAITING,
        ),
        # api moves one pod into c1's only place: once web's pods are old enough no node of
        # zone c takes one of them (a second plan from scratch, holds lifted, gave web the
        # place and called it Waiting)
        (
            "room-taken-by-the-plans-move",
            1,
            {"a": 2, "b": 1},
            OLD,
            WEB_ROOM,
            "app",
            Verdict.FIXABLE,
            Verdict.NOT_FIXABLE,
        ),
        # api moves one of its two pods out of c1, but an evicted pod holds its room until it
        # is gone (the landing predictor frees none): no place for web's pod in the plan
        (
            "room-freed-by-an-eviction-is-not-counted",
            2,
            {"c": 2},
            OLD,
            WEB_ROOM,
            "app",
            Verdict.FIXABLE,
            Verdict.NOT_FIXABLE,
        ),
        ("no-room-in-zone-c-at-all", 0, {}, OLD, WEB_ROOM, "app", None, Verdict.NOT_FIXABLE),
    ],
)
def test_a_held_group_waits_only_where_eviction_balances_it_on_top_of_the_plan(
    c_room: int | None,
    api: dict[str, int],
    api_created: float,
    web: dict[str, int],
    counted: str,
    api_verdict: Verdict | None,
    web_verdict: Verdict,
) -> None:
    nodes = (zone_node("a1", "a"), zone_node("b1", "b"), zone_node("c1", "c", max_pods=c_room))
    cluster = state(nodes, [*pods("api", api, api_created), *pods("web", web, YOUNG, counted)])
    policy = eviction_policy(min_pod_age=MIN_POD_AGE)
    result = plan(analyze(cluster, policy), policy, NOW)
    verdicts = {o.group.workload: o for o in result.outcomes}
    assert verdicts[WEB].verdict is web_verdict, verdicts[WEB].message
    assert (verdicts[API].verdict if API in verdicts else None) is api_verdict
    assert all(m.workload == API for m in (*result.moves, *result.deferred))
    if web_verdict is Verdict.WAITING:
        assert verdicts[WEB].waiting_for.startswith("minPodAge: ")
    else:
        assert verdicts[WEB].waiting_for == ""


def _where(sim: Simulation, m: Members) -> dict[str, set[str]]:
    """Where the members' pods are in the simulation: node -> pod names."""
    return {n: {p.name for p in pods} for n, pods in sim.counts.positions(m).items() if pods}


def _inputs(cluster: ClusterState, policy: RebalancePolicy, now: float) -> PlanInputs:
    return PlanInputs(analyze(cluster, policy), policy, now, {}, {})


@given(clusters(), policies(), st.sampled_from([0.0, 5.0, 100.0]))
def test_the_plans_moves_replayed_give_the_simulation_the_verdict_goes_on_from(
    cluster: ClusterState, policy: RebalancePolicy, age: float
) -> None:
    inputs = _inputs(cluster, policy, age)  # pods are created at 0, 1, 2, ...
    found, sim = _plan(inputs)
    again = _replayed(inputs, found)
    for g in inputs.analysis.violations:
        assert again.counts.violators(g.members, g.index) == sim.counts.violators(
            g.members, g.index
        )
        assert _where(again, g.members) == _where(sim, g.members)
    assert again.moved == sim.moved


@given(clusters(), policies(), st.sampled_from([0.0, 5.0, 100.0]), st.sampled_from([0.0, 10.0]))
def test_waiting_is_said_only_of_an_unbalanced_group_with_a_hold(
    cluster: ClusterState, policy: RebalancePolicy, now: float, min_pod_age: float
) -> None:
    policy = eviction_policy(
        min_pod_age=min_pod_age,
        max_per_run=policy.eviction.max_per_run,
        max_per_workload=policy.eviction.max_per_workload,
    )
    result = plan(analyze(cluster, policy), policy, now)
    gate = EvictionGate(policy, cluster.budgets)
    held = {s.workload for s in result.skipped if gate.hold(s.pod, now) is not None}
    for o in result.outcomes:
        if o.verdict is Verdict.WAITING:
            assert not o.fixable and o.group.workload in held
            assert o.message.startswith("waiting: eviction fixes it once these holds lift: ")

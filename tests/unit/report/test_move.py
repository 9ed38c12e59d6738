"""Would respread move this pod? (report/move.py, as `respread explain` asks it of the scan's own
plan): the verdict is the plan's, and every reason it is not moved now is given, with when a
reason passes with time.

The scene: zones a, b, c (nodes a1, b1, c1); ReplicaSet web in namespace shop, 4/1/1 against
maxSkew 1: two of zone a's pods must move. The policy evicts one pod per workload per run.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from respread.core.model import ClusterState, Labels, OwnerRef, Pod
from respread.inputs.policy import Mode, RebalancePolicy, RemediationSettings, Selection
from respread.pipeline import NO_MEMORY, Memory, scan
from respread.remedies.evict.history import PACING, EvictionHistory
from respread.report.move import Context, MoveAnswer, ReasonKind, Verdict, would_move
from respread.scheduling.explain import explain_pod
from tests.support.builders import WEB, budget, eviction_policy, hard, pod, state, zone_node
from tests.support.constants import ZONE
from tests.support.tables import cases

NOW = 1_800_000_000.0
CREATED = NOW - 3600
POLICY = eviction_policy(max_per_workload=1)
WEB_RS = OwnerRef("ReplicaSet", "web")


def _pod(name: str, node: str, **kw: Any) -> Pod:
    p = pod(name, node, {"app": "web"}, constraints=(hard(ZONE, WEB),), namespace="shop")
    return replace(p, owner=WEB_RS, created=CREATED, **kw)


def scene(*changes: tuple[str, dict[str, Any]]) -> ClusterState:
    nodes = [zone_node(f"{z}1", z) for z in "abc"]
    pods = [_pod(f"web-a{i}", "a1") for i in range(4)]
    pods += [_pod("web-b0", "b1"), _pod("web-c0", "c1")]
    edits = dict(changes)
    return state(nodes, [replace(p, **edits.get(p.name, {})) for p in pods])


def evicting(**settings: Any) -> RebalancePolicy:
    return replace(POLICY, eviction=replace(POLICY.eviction, **settings))


def answer(
    cluster: ClusterState,
    name: str,
    policy: RebalancePolicy = POLICY,
    memory: Memory = NO_MEMORY,
) -> MoveAnswer:
    result = scan(cluster, policy, NOW, memory)
    p = next(p for p in cluster.pods if p.name == name)
    ctx = Context(
        result.analysis,
        result.plan,
        policy,
        NOW,
        result.memory.evictions.last_eviction,
        result.held,
    )
    return would_move(p, ctx, explain_pod(result.analysis.index, p))


def kinds(a: MoveAnswer) -> list[ReasonKind]:
    return [r.kind for r in a.reasons]


def test_the_plan_s_eviction_is_now_and_the_next_one_later() -> None:
    first = answer(scene(), "web-a0")
    assert (first.verdict, first.step, first.reasons) == (Verdict.NOW, 1, ())
    assert first.predicted_node in ("b1", "c1")
    second = answer(scene(), "web-a1")
    assert second.verdict is Verdict.LATER
    assert second.reasons[0].text == "left for a later run: maxPerWorkload 1 reached"
    assert ReasonKind.CAP in kinds(second)


def test_a_pod_the_plan_does_not_need_says_which_it_moves_instead() -> None:
    third = answer(scene(), "web-a2")
    assert third.verdict is Verdict.NO
    assert kinds(third) == [ReasonKind.CAP, ReasonKind.PLANNER]
    assert "the plan moves 2 other pod(s) of ReplicaSet shop/web instead" in third.reasons[1].text


def test_a_pod_placed_within_its_constraints_has_nothing_to_fix() -> None:
    placed = answer(scene(), "web-b0")
    assert placed.verdict is Verdict.NO
    assert kinds(placed) == [ReasonKind.PLACEMENT]


YOUNG = ("web-a0", {"created": NOW - 60})
OPTED_OUT = ("web-a0", {"annotations": Labels({"respread.io/evict": "false"})})
EXCLUDED = replace(POLICY, selection=Selection(exclude_namespaces=frozenset({"shop"})))
EVICT_OFF = replace(POLICY, remediation=RemediationSettings(evict=False))
NO_DISRUPTION = budget("web", WEB, allowed=0, namespace="shop", healthy=6, desired=6)


@cases(
    ("cluster", "policy", "kind", "says"),
    [
        ("minPodAge", scene(YOUNG), evicting(min_pod_age=300.0), ReasonKind.MIN_POD_AGE,
         "younger than minPodAge (60s < 300s)"),
        ("opted out", scene(OPTED_OUT), POLICY, ReasonKind.PROTECTION,
         'opted out (respread.io/evict: "false")'),
        ("a budget that allows none", replace(scene(), budgets=(NO_DISRUPTION,)), POLICY,
         ReasonKind.BUDGET, "PodDisruptionBudget web allows no disruption"),
        ("a namespace the policy leaves out", scene(), EXCLUDED, ReasonKind.SCOPE,
         "does not select namespace shop"),
        ("eviction switched off", scene(), EVICT_OFF, ReasonKind.REMEDIATION,
         "spec.remediation.evict is false"),
    ],
)  # fmt: skip
def test_every_reason_it_is_not_moved(
    cluster: ClusterState, policy: RebalancePolicy, kind: ReasonKind, says: str
) -> None:
    got = answer(cluster, "web-a0", policy)
    assert got.verdict is Verdict.NO
    reason = next(r for r in got.reasons if r.kind is kind)
    assert says in reason.text


def test_a_hold_that_passes_with_time_says_when() -> None:
    young = answer(
        scene(YOUNG),
        "web-a0",
        replace(POLICY, eviction=replace(POLICY.eviction, min_pod_age=300.0)),
    )
    assert [r.until for r in young.reasons if r.kind is ReasonKind.MIN_POD_AGE] == [NOW - 60 + 300]

    ref = next(iter(scan(scene(), POLICY, NOW).analysis.members)).workload
    memory = replace(NO_MEMORY, evictions=EvictionHistory({ref: NOW - 100}))
    cooling = answer(
        scene(),
        "web-a0",
        replace(POLICY, eviction=replace(POLICY.eviction, cooldown=600.0)),
        memory,
    )
    assert cooling.verdict is Verdict.LATER
    (cooldown,) = [r for r in cooling.reasons if r.kind is ReasonKind.COOLDOWN]
    assert cooldown.until == NOW - 100 + 600
    assert "had an eviction 100s ago" in cooldown.text


def test_the_operator_s_holds_are_reasons() -> None:
    """In Enforce, a workload with a replacement not Ready yet is held back (pacing)."""
    cluster = scene(("web-c0", {"ready": False}))
    enforce = replace(POLICY, mode=Mode.ENFORCE)
    held = answer(cluster, "web-a0", enforce, Memory(holds=True))
    assert Verdict.NOW is not held.verdict
    assert any(r.kind is ReasonKind.HELD and r.text == PACING for r in held.reasons)
    assert answer(cluster, "web-a0", enforce).verdict is Verdict.NOW  # a one-off plan holds none


def test_no_landing_is_a_reason() -> None:
    """Zones a and b, minDomains 3: no zone may hold more than one pod, none has room."""
    nodes = [zone_node("a1", "a"), zone_node("b1", "b")]
    spread = (hard(ZONE, WEB, min_domains=3),)
    pods = [
        replace(pod(f"web-{z}{i}", f"{z}1", {"app": "web"}, constraints=spread, namespace="shop"),
                owner=WEB_RS, created=CREATED)
        for z in "ab" for i in range(2)
    ]  # fmt: skip
    got = answer(state(nodes, pods), "web-a0")
    assert got.verdict is Verdict.NO
    assert [r.text for r in got.reasons if r.kind is ReasonKind.NO_LANDING] == [
        "no node would take the replacement (topology spread: 2 node(s))"
    ]

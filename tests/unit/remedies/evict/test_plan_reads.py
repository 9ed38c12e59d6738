"""A plan made before a change is reused only when the change left what the planner reads
(remedies/evict/reads.py): one row per kind of change, each scan checked against a fresh one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from respread.analysis.groups import analyze
from respread.core.model import ClusterState, Labels, OwnerRef, Pod, Resources
from respread.pipeline import NO_MEMORY, AnalysisMemo, scan
from respread.remedies.evict.reads import plan_unchanged
from respread.remedies.evict.simulation import Plan
from respread.report.contract import report_json
from tests.support.builders import (
    budget,
    eviction_policy,
    hard,
    namespace,
    node,
    pod,
    sel,
    service,
    state,
)
from tests.support.tables import cases

ZONE = "zone"
NOW = 1_800_000_000.0
POLICY = eviction_policy()
NODES = tuple(node(f"{z}{i}", zone=z) for z in "abc" for i in (1, 2))


def _deployment(ns: str, app: str, placed: dict[str, int]) -> list[Pod]:
    """``placed[node]`` pods of one ReplicaSet on each node, spread on the zone by app."""
    owner = OwnerRef("ReplicaSet", f"{app}-h")
    return [
        pod(
            f"{app}-{n}-{i}",
            n,
            {"app": app, "pod-template-hash": "h"},
            namespace=ns,
            owner=owner,
            constraints=(hard(ZONE, sel(app=app)),),
        )
        for n, count in placed.items()
        for i in range(count)
    ]


# "hot": four pods in zone a, none in b or c (violated: the plan moves two);
# "calm": two pods in zone a, one in b and c (balanced), and a bare pod labelled otherwise in
# zone a (one more pod counted there would violate it).
HOT = _deployment("hot", "web", {"a1": 2, "a2": 2})
CALM = [
    *_deployment("calm", "db", {"a1": 2, "b1": 1, "c1": 1}),
    pod("bare", "a2", {"app": "x"}, namespace="calm"),
]
BASE = state(
    NODES,
    [*HOT, *CALM],
    budgets=[
        budget("web", sel(app="web"), allowed=3, namespace="hot"),
        budget("db", sel(app="db"), allowed=1, namespace="calm"),
    ],
    services=[service("db", {"app": "db"}, namespace="calm")],
    namespaces=[namespace("hot"), namespace("calm")],
)


def _pods(st: ClusterState, name: str, change: Callable[[Pod], Pod | None]) -> ClusterState:
    """The pod ``name`` changed (None: deleted); every other object the same."""
    pods = []
    for p in st.pods:
        if p.name != name:
            pods.append(p)
        elif (changed := change(p)) is not None:
            pods.append(changed)
    return replace(st, pods=tuple(pods))


def _labelled(p: Pod, **labels: str) -> Pod:
    return replace(p, labels=Labels({**p.labels, **labels}))


CHANGES: list[tuple[str, Callable[[ClusterState], ClusterState], bool]] = [
    (
        "a label nothing reads, on a balanced namespace's pod",
        lambda s: _pods(s, "db-b1-0", lambda p: _labelled(p, note="x")),
        True,
    ),
    (
        "a service added in the balanced namespace",
        lambda s: replace(s, services=(*s.services, service("x", {"app": "x"}, "calm"))),
        True,
    ),
    (
        "the balanced namespace's budget",
        lambda s: replace(
            s, budgets=(s.budgets[0], budget("db", sel(app="db"), allowed=0, namespace="calm"))
        ),
        True,
    ),
    (
        "the balanced Namespace's labels",
        lambda s: replace(s, namespaces=(s.namespaces[0], namespace("calm", team="t"))),
        True,
    ),
    (
        "a label on a violated namespace's pod",
        lambda s: _pods(s, "web-a1-0", lambda p: _labelled(p, note="x")),
        False,
    ),
    (
        "the violated namespace's budget",
        lambda s: replace(
            s, budgets=(budget("web", sel(app="web"), allowed=1, namespace="hot"), s.budgets[1])
        ),
        False,
    ),
    (
        "a pod added to the balanced namespace (a node's room)",
        lambda s: replace(s, pods=(*s.pods, pod("new", "b2", {"app": "y"}, namespace="calm"))),
        False,
    ),
    (
        "a balanced namespace's pod deleted (a node's room)",
        lambda s: _pods(s, "bare", lambda p: None),
        False,
    ),
    (
        "a balanced namespace's pod requesting more (a node's room)",
        lambda s: _pods(
            s, "bare", lambda p: replace(p, spec=replace(p.spec, requests=Resources(cpu=100)))
        ),
        False,
    ),
    (
        "the balanced namespace violated: a pod relabelled into its counts",
        lambda s: _pods(s, "bare", lambda p: _labelled(p, app="db")),
        False,
    ),
    (
        "a node's labels",
        lambda s: replace(s, nodes=(node("a1", zone="a", rack="r"), *s.nodes[1:])),
        False,
    ),
]


def _plan(found: Plan) -> tuple[object, ...]:
    """A plan by value (a group is equal only to itself: its outcome by what it says)."""
    outcomes = [
        (
            o.group.workload,
            o.group.index,
            o.group.counts,
            o.violating_after_run,
            o.violating_after_all,
            o.message,
            o.waiting_for,
        )
        for o in found.outcomes
    ]
    return (replace(found, outcomes=()), outcomes)


@cases(("change", "reused"), CHANGES)
def test_a_plan_is_reused_exactly_when_the_change_left_what_the_planner_reads(
    change: Callable[[ClusterState], ClusterState], reused: bool
) -> None:
    memo = AnalysisMemo()
    first = scan(BASE, POLICY, NOW, NO_MEMORY, analyses=memo)
    assert first.plan.moves  # there is a plan to reuse
    after = change(BASE)
    later = NOW + 60
    again = scan(after, POLICY, later, first.memory, analyses=memo)
    fresh = scan(after, POLICY, later, first.memory, analyses=AnalysisMemo())
    assert memo.plan_reused is reused
    assert plan_unchanged(first.analysis, again.analysis) is reused
    assert _plan(again.plan) == _plan(fresh.plan)
    assert report_json(again.report) == report_json(fresh.report)


def test_the_same_analysis_is_its_own_plan_and_another_policy_read_is_not() -> None:
    a = analyze(BASE, POLICY)
    assert plan_unchanged(a, a)
    narrower = replace(
        POLICY, selection=replace(POLICY.selection, exclude_namespaces=frozenset({"calm"}))
    )
    assert not plan_unchanged(a, analyze(BASE, narrower))

"""The analysis by namespace, carried from the last one (``analyze(..., previous=...)``, issue 23).

Spread counts are per namespace, so while the nodes are unchanged a namespace whose pods,
workloads, services and Namespace object are unchanged keeps its Members and Groups. Whatever is
carried, the result must be the fresh analysis's in everything observable:

- on generated clusters (hypothesis) and one generated change of each kind (a pod relabelled,
  added, deleted, moved, terminating; a namespace's pods relisted in another order; a workload,
  a service, a Namespace, a node, a budget changed; nothing changed), built as the operator's
  cache builds the next snapshot (the unchanged records are the same objects): the analysis,
  the eviction plan and the whole scan (``pipeline.scan`` with memos primed by a scan of the old
  state) equal those made afresh, and ``carried`` holds every namespace the state names but the
  one changed (none after a node change); and so along a chain of two changes;
- one hand-built row per kind of change, with ``carried`` exactly;
- a previous analysis made under other reads of the policy, or other outage domains, carries
  nothing, and the result is still the fresh one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

import pytest
from hypothesis import event, given, note, settings
from hypothesis import strategies as st

from respread.analysis.groups import Analysis, Group, Members, analyze, build_index
from respread.core.model import (
    ClusterState,
    DisruptionBudget,
    Labels,
    Namespace,
    Node,
    OwnerRef,
    Phase,
    Pod,
    PodTemplate,
    Service,
    SpreadConstraint,
    When,
    Workload,
)
from respread.inputs.policy import (
    ConstraintSettings,
    DeletionCostSettings,
    RebalancePolicy,
    RemediationSettings,
    Selection,
)
from respread.pipeline import AnalysisMemo, scan
from respread.remedies.cost.memo import CostMemo
from respread.remedies.evict.planner import Plan, plan
from tests.support import builders as make
from tests.support.constants import HOST, NOW_EPOCH, ZONE
from tests.support.tables import cases

T = TypeVar("T")
DNS, ANYWAY = When.DO_NOT_SCHEDULE, When.SCHEDULE_ANYWAY
NODES = "<the nodes>"  # a change's scope: the nodes, so nothing is carried
NAMESPACES = ("a", "b", "c")
APPS = ("web", "api")
HASHES = ("h1", "h2")
SHARED = make.sel(tier="web")


# --------------------------------------------------------------------------------------------
# What must be equal: the analysis, the plan, the scan


def members_view(m: Members) -> tuple[object, ...]:
    return (m.workload, m.profile, tuple(m.by_node.items()))


def group_view(g: Group) -> tuple[object, ...]:
    return (
        members_view(g.members),
        g.index,
        g.counts,
        g.domains,
        g.global_min,
        g.skew,
        g.violating,
        g.unresolvable,
        g.minimum_moves,
        g.outside,
    )


def analysis_view(a: Analysis) -> tuple[object, ...]:
    return (
        tuple(members_view(m) for m in a.members),
        tuple(group_view(g) for g in a.groups),
        a.pods_scanned,
        a.namespaces_skipped,
    )


def plan_view(p: Plan) -> tuple[object, ...]:
    outcomes = tuple(
        (
            group_view(o.group),
            o.violating_after_run,
            o.violating_after_all,
            o.message,
            o.waiting_for,
        )
        for o in p.outcomes
    )
    return (p.moves, p.deferred, p.skipped, outcomes, dict(p.budgets_used), p.method, p.method_note)


def assert_well_formed(a: Analysis, state: ClusterState) -> None:
    """What a fresh analysis holds by construction: its index is of ``state``, its groups are
    of its own buckets, and each bucket's profile is the one its index gives its pods."""
    assert a.index.state is state
    buckets = {id(m) for m in a.members}
    assert all(id(g.members) in buckets for g in a.groups)
    for m in a.members:
        for pods in m.by_node.values():
            assert all(a.index.profile_of(p) is m.profile for p in pods)


def assert_as_fresh(
    state: ClusterState, policy: RebalancePolicy, previous: Analysis
) -> frozenset[str]:
    """The analysis of ``state`` given ``previous`` is the fresh one, and so is its plan; the
    namespaces it carried."""
    fresh = analyze(state, policy)
    carried = analyze(state, policy, build_index(state, policy), previous=previous)
    assert fresh.carried == frozenset()
    assert_well_formed(carried, state)
    assert analysis_view(carried) == analysis_view(fresh)
    assert [group_view(g) for g in carried.violations] == [group_view(g) for g in fresh.violations]
    assert plan_view(plan(carried, policy)) == plan_view(plan(fresh, policy))
    return carried.carried


def assert_scans_as_fresh(
    old: ClusterState, new: ClusterState, policy: RebalancePolicy
) -> frozenset[str]:
    """The operator's second scan, its memos (analysis, deletion costs) primed by a scan of
    ``old``, is the fresh scan of ``new``; the namespaces its analysis carried."""
    memo, costs = AnalysisMemo(), CostMemo()
    first = scan(old, policy, NOW_EPOCH, memo=costs, analyses=memo)
    primed = scan(new, policy, NOW_EPOCH + 60, first.memory, memo=costs, analyses=memo)
    fresh = scan(new, policy, NOW_EPOCH + 60, first.memory)
    assert not memo.reused
    assert primed.costs == fresh.costs
    assert primed.report == fresh.report
    assert plan_view(primed.plan) == plan_view(fresh.plan)
    assert primed.changes == fresh.changes
    assert primed.held == fresh.held
    return primed.analysis.carried


def named(state: ClusterState) -> frozenset[str]:
    """The namespaces the state names: of its pods, workloads, services and Namespaces."""
    return frozenset(
        {
            *(p.namespace for p in state.pods),
            *(w.namespace for w in state.workloads),
            *(s.namespace for s in state.services),
            *(n.name for n in state.namespaces),
        }
    )


def unchanged(old: ClusterState, new: ClusterState, namespace: str) -> bool:
    """Whether the states hold the same of all a namespace's part of the analysis reads beside
    the nodes: the very pods, in order (the carried buckets hold the pod objects), and equal
    workloads, services and Namespace."""

    def records(s: ClusterState) -> tuple[object, ...]:
        return (
            [w for w in s.workloads if w.namespace == namespace],
            [v for v in s.services if v.namespace == namespace],
            [n for n in s.namespaces if n.name == namespace],
        )

    pods = [[id(p) for p in s.pods if p.namespace == namespace] for s in (old, new)]
    return pods[0] == pods[1] and records(old) == records(new)


def with_members(a: Analysis) -> frozenset[str]:
    return frozenset(m.workload.namespace for m in a.members)


# --------------------------------------------------------------------------------------------
# Generated clusters


class Interned:
    """Equal records shared, as the snapshot parser interns labels, specs and owners (also
    across namespaces)."""

    def __init__(self) -> None:
        self._seen: dict[object, object] = {}

    def get(self, value: T) -> T:
        return cast(T, self._seen.setdefault(value, value))


@dataclass
class Parts:
    nodes: list[Node]
    pods: list[Pod] = field(default_factory=list)
    workloads: list[Workload] = field(default_factory=list)
    services: list[Service] = field(default_factory=list)
    budgets: list[DisruptionBudget] = field(default_factory=list)
    namespaces: list[Namespace] = field(default_factory=list)
    interned: Interned = field(default_factory=Interned)

    def state(self) -> ClusterState:
        return make.state(
            self.nodes,
            self.pods,
            budgets=self.budgets,
            workloads=self.workloads,
            services=self.services,
            namespaces=self.namespaces,
        )


def constraints_of(draw: st.DrawFn, app: str) -> tuple[SpreadConstraint, ...]:
    out = []
    for key in (ZONE, HOST):
        when = draw(st.sampled_from([DNS, ANYWAY, None, DNS]))
        if when is None:
            continue
        out.append(
            make.constraint(
                key,
                draw(st.sampled_from([make.sel(app=app), make.sel(app=app), SHARED, make.sel()])),
                when=when,
                max_skew=draw(st.integers(1, 2)),
                min_domains=draw(st.sampled_from([None, None, 3])) if key == ZONE else None,
                match_label_keys=draw(st.sampled_from([(), ("pod-template-hash",)])),
            )
        )
    return tuple(out)


def add_workload(draw: st.DrawFn, parts: Parts, namespace: str, app: str) -> None:
    """An app's pods: a Deployment's (its ReplicaSets in the snapshot or not) or bare ones,
    with their constraints on the pods, on the template only, or nowhere; maybe a service and
    a budget."""
    kind = draw(st.sampled_from(["deployment", "deployment", "orphan", "bare"]))
    where = draw(st.sampled_from(["pods", "pods", "template", "none"]))
    constraints = parts.interned.get(constraints_of(draw, app))
    spec = parts.interned.get(make.pod_spec(constraints if where == "pods" else ()))
    template = parts.interned.get(make.pod_spec(constraints if where != "none" else ()))
    if kind == "deployment":
        parts.workloads.append(
            make.workload(
                "Deployment",
                app,
                make.sel(app=app),
                namespace,
                template=PodTemplate(Labels({"app": app}), template),
            )
        )
    hashes = HASHES[: draw(st.integers(1, 2))] if kind != "bare" else ("h1",)
    for h in hashes:
        labels = parts.interned.get(Labels({"app": app, "pod-template-hash": h, "tier": "web"}))
        owner = None if kind == "bare" else parts.interned.get(OwnerRef("ReplicaSet", f"{app}-{h}"))
        if kind == "deployment":
            parts.workloads.append(
                make.workload(
                    "ReplicaSet",
                    f"{app}-{h}",
                    make.sel(app=app, **{"pod-template-hash": h}),
                    namespace,
                    template=PodTemplate(labels, template),
                    owner=OwnerRef("Deployment", app),
                )
            )
        placement = draw(st.lists(st.integers(0, len(parts.nodes) - 1), min_size=1, max_size=5))
        parts.pods.extend(
            make.pod(
                f"{app}-{h}-{i}",
                parts.nodes[n].name,
                labels,
                spec=spec,
                namespace=namespace,
                owner=owner,
            )
            for i, n in enumerate(placement)
        )
    selector = draw(st.sampled_from([None, None, {"app": app}, {"tier": "web"}]))
    if selector is not None:
        parts.services.append(make.service(f"{app}-svc", selector, namespace))
    allowed = draw(st.sampled_from([None, 0, 1, 2]))
    if allowed is not None:
        parts.budgets.append(
            make.budget(f"{app}-pdb", make.sel(app=app), allowed=allowed, namespace=namespace)
        )


@st.composite
def clusters(draw: st.DrawFn) -> ClusterState:
    zones = draw(st.integers(2, 3))
    nodes = [
        make.zone_node(f"n{z}{k}", f"z{z}")
        for z in range(zones)
        for k in range(draw(st.integers(1, 2)))
    ]
    if draw(st.integers(0, 3)) == 0:
        nodes.append(make.node("nokey", {HOST: "nokey"}))
    if draw(st.integers(0, 3)) == 0:
        nodes.append(make.zone_node("tainted", "z0", taints=(make.taint("dedicated", "x"),)))
    parts = Parts(nodes)
    for namespace in draw(
        st.lists(st.sampled_from(NAMESPACES), min_size=2, max_size=3, unique=True)
    ):
        if draw(st.integers(0, 3)):
            team = draw(st.sampled_from(["x", "y"]))
            parts.namespaces.append(Namespace(namespace, Labels({"team": team})))
        for app in draw(st.lists(st.sampled_from(APPS), min_size=1, max_size=2, unique=True)):
            add_workload(draw, parts, namespace, app)
    return parts.state()


@st.composite
def policies(draw: st.DrawFn) -> RebalancePolicy:
    selection = Selection(
        include_namespaces=draw(
            st.sampled_from([frozenset(), frozenset(), frozenset(), frozenset("ab")])
        ),
        exclude_namespaces=draw(
            st.sampled_from([frozenset(), frozenset(), frozenset(), frozenset("c")])
        ),
        namespace_selector=draw(st.sampled_from([None, None, None, make.sel(team="x")])),
    )
    constraints = ConstraintSettings(
        when_unsatisfiable=draw(st.sampled_from([frozenset({DNS}), frozenset({DNS, ANYWAY})])),
        default_constraints=draw(
            st.sampled_from([(), (make.hard(ZONE, None),), (make.soft(HOST, None, max_skew=2),)])
        ),
        empty_selector_matches_all=draw(st.booleans()),
    )
    costs = DeletionCostSettings(enabled=draw(st.booleans()))
    return replace(
        make.eviction_policy(max_per_run=draw(st.sampled_from([None, None, 1]))),
        selection=selection,
        constraints=constraints,
        remediation=RemediationSettings(deletion_cost=costs),
    )


# --------------------------------------------------------------------------------------------
# Generated changes, made as the operator's cache makes the next snapshot: the changed records
# new, every other one the same object, in the same order (an added record last, or anywhere:
# a listing may reorder)


@dataclass(frozen=True)
class Change:
    kind: str
    state: ClusterState
    scope: str | None  # the namespace changed; NODES; None: no namespace's inputs changed


Changer = Callable[[st.DrawFn, ClusterState], Change]


def put(records: tuple[T, ...], position: int, record: T | None) -> tuple[T, ...]:
    """``records`` with the one at ``position`` replaced by ``record`` (None: removed)."""
    return records[:position] + ((record,) if record is not None else ()) + records[position + 1 :]


def some(draw: st.DrawFn, records: tuple[T, ...]) -> int:
    return draw(st.integers(0, len(records) - 1))


def pod_relabelled(draw: st.DrawFn, s: ClusterState) -> Change:
    i = some(draw, s.pods)
    p = s.pods[i]
    labels = draw(
        st.sampled_from(
            [
                Labels(p.labels),  # equal, another object
                Labels({**p.labels, "role": "canary"}),
                Labels({**p.labels, "tier": "batch"}),
                *(q.labels for q in s.pods),  # another pod's (interned), maybe another namespace's
            ]
        )
    )
    return Change(
        "a pod relabelled", replace(s, pods=put(s.pods, i, replace(p, labels=labels))), p.namespace
    )


def pod_added(draw: st.DrawFn, s: ClusterState) -> Change:
    """Another of a pod's workload, bound or pending, listed anywhere; with its sibling's spec
    or another pod's (the constraints its workload's pods most carry may change)."""
    p = s.pods[some(draw, s.pods)]
    node = draw(st.sampled_from([None, *(n.name for n in s.nodes)]))
    spec = draw(st.sampled_from([p.spec, *(q.spec for q in s.pods)]))
    phase = Phase.RUNNING if node else Phase.PENDING
    new = replace(p, name=p.name + "-new", node_name=node, phase=phase, spec=spec)
    at = draw(st.integers(0, len(s.pods)))
    kind = "a pod added" if node else "a pending pod added"
    return Change(kind, replace(s, pods=(*s.pods[:at], new, *s.pods[at:])), p.namespace)


def pod_deleted(draw: st.DrawFn, s: ClusterState) -> Change:
    i = some(draw, s.pods)
    return Change("a pod deleted", replace(s, pods=put(s.pods, i, None)), s.pods[i].namespace)


def pod_moved(draw: st.DrawFn, s: ClusterState) -> Change:
    """Deleted and made again under its name on another node: in its place, or last."""
    i = some(draw, s.pods)
    p = s.pods[i]
    moved = replace(p, node_name=draw(st.sampled_from([n.name for n in s.nodes])))
    pods = put(s.pods, i, moved) if draw(st.booleans()) else (*put(s.pods, i, None), moved)
    return Change("a pod moved", replace(s, pods=pods), p.namespace)


def pods_reordered(draw: st.DrawFn, s: ClusterState) -> Change:
    """A namespace's pods listed in another order (a new listing), in the same places."""
    name = s.pods[some(draw, s.pods)].namespace
    places = [i for i, p in enumerate(s.pods) if p.namespace == name]
    order = draw(st.permutations(places))
    pods = list(s.pods)
    for place, i in zip(places, order, strict=True):
        pods[place] = s.pods[i]
    return Change("pods reordered", replace(s, pods=tuple(pods)), name)


def pod_terminating(draw: st.DrawFn, s: ClusterState) -> Change:
    i = some(draw, s.pods)
    p = s.pods[i]
    return Change(
        "a pod terminating",
        replace(s, pods=put(s.pods, i, replace(p, terminating=True))),
        p.namespace,
    )


def workload_changed(draw: st.DrawFn, s: ClusterState) -> Change:
    """A workload's template constraints, owner or selector changed, or it is gone; with none,
    a ReplicaSet for a pod's owner appears (or a Deployment, for bare pods)."""
    if not s.workloads:
        p = s.pods[some(draw, s.pods)]
        name = p.owner.name if p.owner is not None else "lonely"
        kind = "ReplicaSet" if p.owner is not None else "Deployment"
        spec = make.pod_spec((make.hard(HOST, make.sel(app=p.labels.get("app", "")), max_skew=1),))
        new = make.workload(kind, name, None, p.namespace, template=PodTemplate(p.labels, spec))
        return Change("a workload added", replace(s, workloads=(*s.workloads, new)), p.namespace)
    i = some(draw, s.workloads)
    w = s.workloads[i]
    how = draw(st.sampled_from(["template", "owner", "selector", "gone"]))
    changed: Workload | None = None
    if how == "template" and w.template is not None:
        spec = w.template.spec
        constraints = (
            () if spec.constraints else (make.hard(HOST, make.sel(app=w.name), max_skew=1),)
        )
        changed = replace(
            w, template=replace(w.template, spec=replace(spec, constraints=constraints))
        )
    elif how == "owner":
        changed = replace(w, owner=OwnerRef("Deployment", "other"))
    elif how == "selector":
        changed = replace(w, selector=SHARED)
    return Change(
        f"a workload's {how} changed",
        replace(s, workloads=put(s.workloads, i, changed)),
        w.namespace,
    )


def service_changed(draw: st.DrawFn, s: ClusterState) -> Change:
    remove = draw(st.booleans())
    if s.services and remove:
        i = some(draw, s.services)
        return Change(
            "a service removed",
            replace(s, services=put(s.services, i, None)),
            s.services[i].namespace,
        )
    p = s.pods[some(draw, s.pods)]
    selector = draw(st.sampled_from([{"app": p.labels.get("app", "")}, {"tier": "web"}]))
    new = make.service("new-svc", selector, p.namespace)
    return Change("a service added", replace(s, services=(*s.services, new)), p.namespace)


def namespace_changed(draw: st.DrawFn, s: ClusterState) -> Change:
    name = s.pods[some(draw, s.pods)].namespace
    at = next((i for i, n in enumerate(s.namespaces) if n.name == name), None)
    if at is None:
        added = (*s.namespaces, Namespace(name, Labels({"team": "x"})))
        return Change("a Namespace added", replace(s, namespaces=added), name)
    old = s.namespaces[at]
    new = (
        None
        if draw(st.booleans())
        else Namespace(name, Labels({"team": "y" if old.labels.get("team") == "x" else "x"}))
    )
    kind = "a Namespace relabelled" if new else "a Namespace gone"
    return Change(kind, replace(s, namespaces=put(s.namespaces, at, new)), name)


def node_changed(draw: st.DrawFn, s: ClusterState) -> Change:
    i = some(draw, s.nodes)
    n = s.nodes[i]
    how = draw(st.sampled_from(["relabelled", "tainted", "added", "removed"]))
    if how == "relabelled":
        zone = draw(st.sampled_from([z for z in ("z0", "z1", "z9") if z != n.labels.get(ZONE)]))
        nodes = put(s.nodes, i, replace(n, labels=Labels({**n.labels, ZONE: zone})))
    elif how == "tainted":
        nodes = put(s.nodes, i, replace(n, taints=(*n.taints, make.taint("gpu", "true"))))
    elif how == "added":
        nodes = (*s.nodes, make.zone_node("n-new", draw(st.sampled_from(["z0", "z9"]))))
    else:
        nodes = put(s.nodes, i, None)
    return Change(f"a node {how}", replace(s, nodes=nodes), NODES)


def budget_changed(draw: st.DrawFn, s: ClusterState) -> Change:
    edit = draw(st.booleans())
    if s.budgets and edit:
        i = some(draw, s.budgets)
        b = s.budgets[i]
        new = (
            None
            if draw(st.booleans())
            else replace(b, disruptions_allowed=b.disruptions_allowed + 1)
        )
        return Change("a budget changed", replace(s, budgets=put(s.budgets, i, new)), None)
    p = s.pods[some(draw, s.pods)]
    new_budget = make.budget(
        "new-pdb", make.sel(app=p.labels.get("app", "")), allowed=0, namespace=p.namespace
    )
    return Change("a budget added", replace(s, budgets=(*s.budgets, new_budget)), None)


def nothing_changed(draw: st.DrawFn, s: ClusterState) -> Change:
    return Change("nothing changed", replace(s), None)


CHANGES: tuple[Changer, ...] = (
    pod_relabelled,
    pod_added,
    pod_deleted,
    pod_moved,
    pods_reordered,
    pod_terminating,
    workload_changed,
    service_changed,
    namespace_changed,
    node_changed,
    budget_changed,
    nothing_changed,
)


@dataclass(frozen=True)
class Scenario:
    old: ClusterState
    change: Change
    policy: RebalancePolicy


@st.composite
def scenarios(draw: st.DrawFn, changer: Changer) -> Scenario:
    old = draw(clusters())
    return Scenario(old, changer(draw, old), draw(policies()))


def expected_carried(old: ClusterState, change: Change) -> frozenset[str]:
    """None after a node change; otherwise every namespace the new state names, but the one
    changed (unless the change left it as it was)."""
    new = change.state
    if change.scope == NODES:
        return frozenset()
    return frozenset(n for n in named(new) if n != change.scope or unchanged(old, new, n))


# Each kind of change its share of the profile's examples (a fifth: the file runs in seconds).
EXAMPLES = max(10, settings().max_examples // 5)


@pytest.mark.parametrize("changer", CHANGES, ids=[c.__name__ for c in CHANGES])
@settings(max_examples=EXAMPLES)
@given(data=st.data())
def test_an_analysis_carried_from_the_last_one_is_the_fresh_one(
    changer: Changer, data: st.DataObject
) -> None:
    case = data.draw(scenarios(changer))
    new, policy = case.change.state, case.policy
    note(f"change: {case.change.kind} ({case.change.scope})")
    carried = assert_as_fresh(new, policy, analyze(case.old, policy))
    assert carried == expected_carried(case.old, case.change)
    assert assert_scans_as_fresh(case.old, new, policy) == carried
    event(case.change.kind)
    buckets = with_members(analyze(new, policy))
    event(f"namespaces with buckets carried: {len(buckets & carried)} of {len(buckets)}")


@dataclass(frozen=True)
class Chain:
    first: Scenario
    second: Change  # of the first's new state


@st.composite
def chains(draw: st.DrawFn) -> Chain:
    first = draw(scenarios(draw(st.sampled_from(CHANGES))))
    return Chain(first, draw(st.sampled_from(CHANGES))(draw, first.change.state))


@settings(max_examples=EXAMPLES * 2)
@given(chains())
def test_a_chain_of_changes_carries_from_analyses_that_were_carried_themselves(
    chain: Chain,
) -> None:
    """Each scan's analysis is the previous one for the next: a namespace analyzed afresh in
    the middle one, or carried through it, is carried from it as exactly."""
    first, second = chain.first, chain.second
    old, mid, new, policy = first.old, first.change.state, second.state, first.policy
    note(f"changes: {first.change.kind}, then {second.kind} ({second.scope})")
    middle = analyze(mid, policy, build_index(mid, policy), previous=analyze(old, policy))
    assert middle.carried == expected_carried(old, first.change)
    assert assert_as_fresh(new, policy, middle) == expected_carried(mid, second)
    memo = AnalysisMemo()
    for state in (old, mid):
        scan(state, policy, NOW_EPOCH, analyses=memo)
    last = scan(new, policy, NOW_EPOCH + 60, analyses=memo)
    assert last.report == scan(new, policy, NOW_EPOCH + 60).report
    assert last.analysis.carried == expected_carried(mid, second)
    event(f"{first.change.kind}, then {second.kind}")


# --------------------------------------------------------------------------------------------
# One row per kind of change, with the namespaces carried exactly

ZONES = (make.zone_node("a1", "a"), make.zone_node("b1", "b"), make.zone_node("c1", "c"))
SPACES = ("shop", "blog", "wiki")
COUNTED = make.hard(ZONE, make.sel(app="web"), max_skew=1)
WEB_LABELS = Labels({"app": "web", "pod-template-hash": "abc"})
API_LABELS = Labels({"app": "api", "pod-template-hash": "def"})
WEB_RS, API_RS = OwnerRef("ReplicaSet", "web-abc"), OwnerRef("ReplicaSet", "api-def")


def team(namespace: str) -> list[Pod]:
    """A namespace's web pods (their own zone constraint: 3, 1, 0 over the zones, violated)
    and api pods (none, nor their ReplicaSet's template: the policy's default constraint, with
    the services' and the ReplicaSet's selectors)."""
    web = [
        make.pod(
            f"web-{i}", n, WEB_LABELS, constraints=(COUNTED,), namespace=namespace, owner=WEB_RS
        )
        for i, n in enumerate(["a1", "a1", "a1", "b1"])
    ]
    api = [
        make.pod(f"api-{i}", n, API_LABELS, namespace=namespace, owner=API_RS)
        for i, n in enumerate(["a1", "a1", "b1"])
    ]
    return web + api


def _deployment(
    namespace: str, app: str, replica_set: str, template: PodTemplate
) -> list[Workload]:
    """A Deployment of ``app=<app>`` pods and its ReplicaSet with this template."""
    return [
        make.workload("Deployment", app, make.sel(app=app), namespace),
        make.workload(
            "ReplicaSet",
            replica_set,
            make.sel(app=app),
            namespace,
            owner=OwnerRef("Deployment", app),
            template=template,
        ),
    ]


def team_workloads(namespace: str) -> list[Workload]:
    return [
        *_deployment(
            namespace, "web", "web-abc", PodTemplate(WEB_LABELS, make.pod_spec((COUNTED,)))
        ),
        *_deployment(namespace, "api", "api-def", PodTemplate(API_LABELS, make.pod_spec())),
    ]


BASE = make.state(
    ZONES,
    [p for ns in SPACES for p in team(ns)],
    budgets=[make.budget("web", make.sel(app="web"), allowed=1, namespace=ns) for ns in SPACES],
    workloads=[w for ns in SPACES for w in team_workloads(ns)],
    services=[make.service("api", {"app": "api"}, ns) for ns in SPACES],
    namespaces=[make.namespace(ns, team="x") for ns in SPACES],
)
POLICY = replace(
    make.eviction_policy(),
    selection=Selection(exclude_namespaces=frozenset(), namespace_selector=make.sel(team="x")),
    constraints=ConstraintSettings(default_constraints=(make.hard(HOST, None, max_skew=1),)),
)


def in_shop(records: tuple[T, ...], name: str) -> int:
    """The position of the record of shop named ``name`` (a Namespace: shop's)."""
    return next(
        i
        for i, r in enumerate(records)
        if getattr(r, "namespace", r.name if isinstance(r, Namespace) else None) == "shop"
        and getattr(r, "name", None) == name
    )


def with_records(s: ClusterState, kind: str, records: tuple[Any, ...]) -> ClusterState:
    fields: dict[str, Any] = {kind: records}
    return replace(s, **fields)


def edit(s: ClusterState, kind: str, name: str, **fields: object) -> ClusterState:
    """``s`` with shop's record ``name`` of ``kind`` (a ClusterState field) edited."""
    records = getattr(s, kind)
    i = in_shop(records, name)
    return with_records(s, kind, put(records, i, replace(records[i], **fields)))


def drop(s: ClusterState, kind: str, name: str) -> ClusterState:
    records = getattr(s, kind)
    return with_records(s, kind, put(records, in_shop(records, name), None))


def add(s: ClusterState, kind: str, record: object, first: bool = False) -> ClusterState:
    records = getattr(s, kind)
    return with_records(s, kind, (record, *records) if first else (*records, record))


def web_pod(name: str, node: str | None) -> Pod:
    phase = Phase.RUNNING if node else Phase.PENDING
    return replace(
        make.pod(name, node, WEB_LABELS, constraints=(COUNTED,), namespace="shop", owner=WEB_RS),
        phase=phase,
    )


def node_at(s: ClusterState, position: int, new: Node | None) -> ClusterState:
    return replace(s, nodes=put(s.nodes, position, new))


INHERITED = PodTemplate(API_LABELS, make.pod_spec((make.hard(ZONE, make.sel(app="api")),)))
ALL = frozenset(SPACES)
BUT_SHOP = frozenset({"blog", "wiki"})
NONE: frozenset[str] = frozenset()
Edit = Callable[[ClusterState], ClusterState]
ROWS: list[tuple[str, Edit, frozenset[str]]] = [
    ("nothing changed", replace, ALL),
    (
        "a pod relabelled",
        lambda s: edit(s, "pods", "web-0", labels=Labels({"app": "web"})),
        BUT_SHOP,
    ),
    (  # a pod is carried only as the very object (the buckets hold it), equal or not
        "a pod relabelled to equal labels",
        lambda s: edit(s, "pods", "web-0", labels=Labels(WEB_LABELS)),
        BUT_SHOP,
    ),
    ("a pod added last", lambda s: add(s, "pods", web_pod("web-9", "c1")), BUT_SHOP),
    ("a pod added first", lambda s: add(s, "pods", web_pod("web-9", "c1"), True), BUT_SHOP),
    ("a pending pod added", lambda s: add(s, "pods", web_pod("web-9", None)), BUT_SHOP),
    ("a pod deleted", lambda s: drop(s, "pods", "web-0"), BUT_SHOP),
    ("a pod moved", lambda s: edit(s, "pods", "web-0", node_name="c1"), BUT_SHOP),
    ("a pod terminating", lambda s: edit(s, "pods", "web-0", terminating=True), BUT_SHOP),
    (
        "a ReplicaSet's template",
        lambda s: edit(s, "workloads", "api-def", template=INHERITED),
        BUT_SHOP,
    ),
    (
        "a ReplicaSet's owner",
        lambda s: edit(s, "workloads", "web-abc", owner=OwnerRef("Deployment", "shop-web")),
        BUT_SHOP,
    ),
    ("a ReplicaSet gone", lambda s: drop(s, "workloads", "api-def"), BUT_SHOP),
    (
        "a service added",
        lambda s: add(s, "services", make.service("all", {"pod-template-hash": "def"}, "shop")),
        BUT_SHOP,
    ),
    ("a service removed", lambda s: drop(s, "services", "api"), BUT_SHOP),
    (
        "a Namespace relabelled",
        lambda s: edit(s, "namespaces", "shop", labels=Labels({"team": "y"})),
        BUT_SHOP,
    ),
    ("a Namespace gone", lambda s: drop(s, "namespaces", "shop"), BUT_SHOP),
    ("a node relabelled", lambda s: node_at(s, 2, make.zone_node("c1", "b")), NONE),
    (
        "a node tainted",
        lambda s: node_at(s, 2, make.zone_node("c1", "c", taints=(make.taint("x"),))),
        NONE,
    ),
    ("a node added", lambda s: add(s, "nodes", make.zone_node("d1", "d")), NONE),
    ("a node removed", lambda s: node_at(s, 2, None), NONE),
    ("a budget changed", lambda s: edit(s, "budgets", "web", disruptions_allowed=0), ALL),
    ("a budget added", lambda s: add(s, "budgets", make.budget("api", make.sel(app="api"))), ALL),
]


@cases("change, expected", ROWS)
def test_a_change_carries_the_namespaces_it_left_alone(
    change: Edit, expected: frozenset[str]
) -> None:
    new = change(BASE)
    assert with_members(analyze(BASE, POLICY)) == ALL  # every namespace has buckets to carry
    assert assert_as_fresh(new, POLICY, analyze(BASE, POLICY)) == expected
    assert assert_scans_as_fresh(BASE, new, POLICY) == expected


# Changes no group shows: none; another Labels object of equal labels (only the identity the
# analysis buckets by changed); a budget (the plan reads it); a node no constraint tells apart.
UNSEEN = {
    "nothing changed",
    "a pod relabelled to equal labels",
    "a node tainted",
    "a node added",
    "a budget changed",
    "a budget added",
}


@cases("change", [(name, change) for name, change, _ in ROWS if name not in UNSEEN])
def test_each_rows_change_shows_in_a_fresh_analysis(change: Edit) -> None:
    """So that a row carrying a namespace it changed is caught by the comparison with the
    fresh analysis as well as by ``carried``."""
    assert analysis_view(analyze(change(BASE), POLICY)) != analysis_view(analyze(BASE, POLICY))


# --------------------------------------------------------------------------------------------
# A previous analysis made otherwise carries nothing

OTHER_READS: list[tuple[str, RebalancePolicy]] = [
    (
        "other excludeNamespaces",
        replace(POLICY, selection=Selection(exclude_namespaces=frozenset({"wiki"}))),
    ),
    (
        "other includeNamespaces",
        replace(
            POLICY,
            selection=Selection(
                include_namespaces=frozenset({"shop", "blog"}), exclude_namespaces=frozenset()
            ),
        ),
    ),
    ("no namespaceSelector", replace(POLICY, selection=Selection(exclude_namespaces=frozenset()))),
    (
        "another namespaceSelector",
        replace(
            POLICY,
            selection=Selection(
                exclude_namespaces=frozenset(), namespace_selector=make.sel(team="y")
            ),
        ),
    ),
    (
        "ScheduleAnyway counted",
        replace(
            POLICY,
            constraints=replace(POLICY.constraints, when_unsatisfiable=frozenset({DNS, ANYWAY})),
        ),
    ),
    (
        "no default constraints",
        replace(POLICY, constraints=replace(POLICY.constraints, default_constraints=())),
    ),
    (
        "an empty selector matching all",
        replace(POLICY, constraints=replace(POLICY.constraints, empty_selector_matches_all=True)),
    ),
]


@cases("other", OTHER_READS)
def test_an_analysis_under_other_reads_of_the_policy_carries_nothing(
    other: RebalancePolicy,
) -> None:
    for old, new in (
        (BASE, BASE),
        (BASE, replace(BASE)),
        (BASE, edit(BASE, "pods", "web-0", node_name="c1")),
    ):
        assert assert_as_fresh(new, POLICY, analyze(old, other)) == frozenset()
        assert assert_as_fresh(new, other, analyze(old, POLICY)) == frozenset()


OUTAGE = {ZONE: frozenset({"c"})}


def test_an_analysis_with_other_outage_domains_carries_nothing() -> None:
    new = replace(BASE)
    for made_with, now_with in ((OUTAGE, None), (None, OUTAGE)):
        previous = analyze(BASE, POLICY, build_index(BASE, POLICY, made_with))
        fresh = analyze(new, POLICY, build_index(new, POLICY, now_with))
        carried = analyze(new, POLICY, build_index(new, POLICY, now_with), previous=previous)
        assert carried.carried == frozenset()
        assert analysis_view(carried) == analysis_view(fresh)
        assert plan_view(plan(carried, POLICY)) == plan_view(plan(fresh, POLICY))
    same = analyze(BASE, POLICY, build_index(BASE, POLICY, OUTAGE))
    again = analyze(new, POLICY, build_index(new, POLICY, OUTAGE), previous=same)
    assert again.carried == ALL
    fresh = analyze(new, POLICY, build_index(new, POLICY, OUTAGE))
    assert analysis_view(again) == analysis_view(fresh)

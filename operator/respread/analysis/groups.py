"""Spread analysis: every constraint group, its domain counts, skew and state.

A *group* is the pods of one workload that share a profile (spread.py), seen through one of the
profile's constraints. A group is Violated when at least one of its pods sits where the
scheduler would not place it again today (the Filter, with the pod itself taken out of the
counts); that is exactly the scheduler's judgement, pod by pod. ``skew`` is reported as
``max(count) - globalMin`` over the eligible domains, as the design defines it.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from operator import is_

from respread.core.kernel import CountTable, DomainSpace, FilterStatus
from respread.core.model import ClusterState, Labels, Namespace, Pod, Service, When, Workload
from respread.core.selectors import selector_matches
from respread.inputs.policy import RebalancePolicy
from respread.scheduling.spread import EffectiveConstraint, Profile, SpreadIndex


@dataclass(frozen=True, slots=True, order=True)
class WorkloadRef:
    namespace: str
    kind: str
    name: str

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


class GroupState(StrEnum):
    BALANCED = "Balanced"
    VIOLATED = "Violated"


@dataclass(frozen=True, slots=True, eq=False)
class Members:
    """The pods of one workload sharing one profile, by node. One of an analysis's buckets:
    equal only to itself, so the simulation keys its state by the bucket."""

    workload: WorkloadRef
    profile: Profile
    by_node: Mapping[str, tuple[Pod, ...]]

    @property
    def count(self) -> int:
        return sum(len(p) for p in self.by_node.values())

    @property
    def labels(self) -> Labels:
        """The labels of one of them, standing for all: they share the labels their own
        selectors read, and differ at most in per-pod ones (a StatefulSet's pod name) that
        another workload's selector seldom reads."""
        return next(iter(self.by_node.values()))[0].labels


@dataclass(frozen=True, slots=True)
class Group:
    members: Members
    index: int
    counts: Mapping[str, int]  # sparse: eligible domains not listed hold 0
    domains: tuple[str, ...]  # every eligible domain, sorted
    global_min: int
    skew: int
    violating: int  # member pods the scheduler would not place where they are
    unresolvable: int  # of those, pods on nodes lacking a topology key
    minimum_moves: int | None  # the fewest moves for this constraint alone; None: none can fix it
    # of the misplaced, pods on nodes the inclusion policies leave out of the counts (judged as
    # one more pod of their domain: misplaced there at a skew of maxSkew)
    outside: int = 0

    @property
    def constraint(self) -> EffectiveConstraint:
        return self.members.profile.constraints[self.index]

    @property
    def workload(self) -> WorkloadRef:
        return self.members.workload

    @property
    def state(self) -> GroupState:
        return GroupState.VIOLATED if self.violating else GroupState.BALANCED

    def domain_count(self, domain: str) -> int:
        return self.counts.get(domain, 0)


@dataclass(frozen=True, slots=True)
class NamespaceInputs:
    """All that a namespace's part of the analysis reads of the state beside the nodes: its
    Namespace (its labels select it), its pods in the order listed, their owners and the
    services that may select them. Spread counts never cross a namespace, so a namespace with
    the same inputs, over the same nodes and with the same settings, has the same members and
    groups."""

    namespace: Namespace | None
    pods: tuple[Pod, ...]
    workloads: tuple[Workload, ...]
    services: tuple[Service, ...]

    def same(self, other: NamespaceInputs | None) -> bool:
        """The same pods (the very objects: the carried members hold them, and pods are found
        by identity downstream; the operator's cache keeps an unchanged pod the same object),
        and equal owners, services and Namespace."""
        return (
            other is not None
            and len(self.pods) == len(other.pods)
            and all(map(is_, self.pods, other.pods))
            and self.workloads == other.workloads
            and self.services == other.services
            and self.namespace == other.namespace
        )


def namespace_inputs(state: ClusterState) -> dict[str, NamespaceInputs]:
    """Every namespace's inputs, for each namespace the state names."""
    pods: defaultdict[str, list[Pod]] = defaultdict(list)
    for pod in state.pods:
        pods[pod.namespace].append(pod)
    workloads: defaultdict[str, list[Workload]] = defaultdict(list)
    for w in state.workloads:
        workloads[w.namespace].append(w)
    services: defaultdict[str, list[Service]] = defaultdict(list)
    for svc in state.services:
        services[svc.namespace].append(svc)
    objects = {n.name: n for n in state.namespaces}
    return {
        name: NamespaceInputs(
            objects.get(name),
            tuple(pods.get(name, ())),
            tuple(workloads.get(name, ())),
            tuple(services.get(name, ())),
        )
        for name in sorted({*pods, *workloads, *services, *objects})
    }


@dataclass(frozen=True, slots=True, weakref_slot=True)  # the cost memo refers to the last one
class Analysis:
    index: SpreadIndex
    members: tuple[Members, ...]
    groups: tuple[Group, ...]
    pods_scanned: int = 0
    namespaces_skipped: frozenset[str] = field(default_factory=frozenset)
    reads: tuple[object, ...] = ()  # what it read of its policy (analysis_reads)
    inputs: Mapping[str, NamespaceInputs] = field(default_factory=dict)  # per namespace
    carried: frozenset[str] = frozenset()  # namespaces carried from the analysis before

    @property
    def violations(self) -> tuple[Group, ...]:
        return tuple(g for g in self.groups if g.state is GroupState.VIOLATED)


def workload_of(pod: Pod, index: SpreadIndex) -> WorkloadRef:
    """The top-level controller: a Deployment for its ReplicaSets' pods, else the owner."""
    owner = pod.owner
    if owner is None:
        return WorkloadRef(pod.namespace, "Pod", pod.name)
    if owner.kind == "ReplicaSet":
        rs = index.workloads.get((pod.namespace, "ReplicaSet", owner.name))
        if rs is not None and rs.owner is not None:
            return WorkloadRef(pod.namespace, rs.owner.kind, rs.owner.name)
        if rs is None:
            # A Deployment names its ReplicaSets <deployment>-<pod-template-hash>.
            h = pod.labels.get("pod-template-hash")
            if h and owner.name.endswith("-" + h) and len(owner.name) > len(h) + 1:
                return WorkloadRef(pod.namespace, "Deployment", owner.name[: -len(h) - 1])
    return WorkloadRef(pod.namespace, owner.kind, owner.name)


def namespace_selected(
    name: str, policy: RebalancePolicy, namespaces: Mapping[str, Namespace]
) -> bool:
    sel = policy.selection
    if sel.include_namespaces and name not in sel.include_namespaces:
        return False
    if name in sel.exclude_namespaces:
        return False
    if sel.namespace_selector is not None:
        ns = namespaces.get(name)
        return ns is not None and selector_matches(sel.namespace_selector, ns.labels)
    return True


def analysis_reads(policy: RebalancePolicy) -> tuple[object, ...]:
    """All that the analysis reads of a policy (``namespace_selected``, ``build_index``,
    ``wanted``): the namespaces it selects and its constraint settings. Policies equal in
    these get the same analysis of the same state, whatever they remedy and however."""
    sel = policy.selection
    return (
        sel.include_namespaces,
        sel.exclude_namespaces,
        sel.namespace_selector,
        policy.constraints,
    )


def build_index(
    state: ClusterState,
    policy: RebalancePolicy,
    outage_domains: Mapping[str, frozenset[str]] | None = None,
) -> SpreadIndex:
    """``outage_domains``: domains in an outage that KEP-5980's counting leaves out of skew."""
    return SpreadIndex(
        state,
        default_constraints=policy.constraints.default_constraints,
        empty_selector_matches_all=policy.constraints.empty_selector_matches_all,
        include_soft=When.SCHEDULE_ANYWAY in policy.constraints.when_unsatisfiable,
        outage_domains=outage_domains,
    )


def collect_members(
    index: SpreadIndex, policy: RebalancePolicy, carried: Collection[str] = ()
) -> tuple[tuple[Members, ...], frozenset[str]]:
    """Bound, live pods with spread constraints, grouped by workload and profile, but those of
    the ``carried`` namespaces."""
    state = index.state
    all_pods = state.pods
    namespaces = {n.name: n for n in state.namespaces}
    selected: dict[str, bool] = {}
    buckets: dict[tuple[WorkloadRef, int], dict[str, list[int]]] = defaultdict(dict)
    profiles: dict[int, Profile] = {}
    skipped: set[str] = set()
    for positions in index.shapes:
        first = all_pods[positions[0]]
        if first.namespace in carried:
            continue
        ok = selected.get(first.namespace)
        if ok is None:
            ok = selected[first.namespace] = namespace_selected(first.namespace, policy, namespaces)
        if not ok:
            skipped.add(first.namespace)
            continue
        profile = index.profile_of(first)
        if not any(wanted(c, policy) for c in profile.constraints):
            continue
        profiles[id(profile)] = profile
        by_node = buckets[(workload_of(first, index), id(profile))]
        for position in positions:
            node = all_pods[position].node_name
            assert node is not None
            on_node = by_node.get(node)
            if on_node is None:
                by_node[node] = [position]
            else:
                on_node.append(position)

    profiles_of = Counter(workload for workload, _ in buckets)

    def order(
        item: tuple[tuple[WorkloadRef, int], dict[str, list[int]]],
    ) -> tuple[WorkloadRef, str]:
        # A workload's profiles (the ReplicaSets of a rollout) in the order of their first pod's
        # name: deterministic for any listing order (never by the profiles' identities).
        (workload, _), by_node = item
        if profiles_of[workload] == 1:
            return workload, ""
        return workload, min(all_pods[i].name for p in by_node.values() for i in p)

    pod_at = all_pods.__getitem__
    members = tuple(
        Members(
            workload,
            profiles[pid],
            {n: tuple(map(pod_at, sorted(p))) for n, p in sorted(by_node.items())},
        )
        for (workload, pid), by_node in sorted(buckets.items(), key=order)
    )
    return members, frozenset(skipped)


def wanted(constraint: EffectiveConstraint, policy: RebalancePolicy) -> bool:
    return constraint.when in policy.constraints.when_unsatisfiable


def violating_nodes(
    index: SpreadIndex, members: Members, tables: tuple[CountTable, ...], constraint: int
) -> dict[str, FilterStatus]:
    """Nodes whose members the scheduler would not place there again, for one constraint."""
    profile = members.profile
    table = tables[constraint]
    judge = index.rules(profile)[constraint]
    if index.counts_pod(profile.constraints[constraint].selector, members.labels):
        node_domain = table.space.node_domain  # members there are in the counts
    else:
        node_domain = {}
    return judge.ceilings(table).rejections(
        members.by_node, index.node_labels, judge.key, node_domain
    )


def _outside_counts(
    index: SpreadIndex,
    members: Members,
    key: str,
    table: CountTable,
    bad: Mapping[str, FilterStatus],
) -> Counter[str]:
    """Misplaced members on nodes that have the key but that the constraint's inclusion
    policies leave out of the counts, per domain. The Filter judges such a pod as if it were
    one more pod of its domain (count + 1 - min), so, for the fewest moves, it stands in its
    domain like a counted pod: it must move, or its domain must drain (a lower bound, exact
    but where its domain is the emptiest)."""
    out: Counter[str] = Counter()
    space = table.space
    for node_name, status in bad.items():
        if status is FilterStatus.UNRESOLVABLE or node_name in space.node_domain:
            continue
        value = index.nodes[node_name].labels.get(key)
        if value is not None and value in space.domain_nodes:
            out[value] += len(members.by_node[node_name])
    return out


def _members_by_domain(
    index: SpreadIndex, members: Members, key: str, table: CountTable, counted: bool
) -> Counter[str]:
    """The members per eligible domain that must pass there: in the counts when their
    selector counts them, else on any node of the domain (the Filter reads the domain's
    count for them wherever they sit)."""
    out: Counter[str] = Counter()
    space = table.space
    for node_name, pods in members.by_node.items():
        if counted:
            value = space.node_domain.get(node_name)
        else:
            value = index.nodes[node_name].labels.get(key)
        if value is not None and value in space.domain_nodes:
            out[value] += len(pods)
    return out


def group_moves(
    counts: Mapping[str, int],
    members: Mapping[str, int],
    domains: Sequence[str],
    max_skew: int,
    min_domains: int,
    *,
    arriving: int = 0,
    counted: bool = True,
) -> int | None:
    """The fewest moves that let every member of a group pass one constraint (a lower bound
    where the counts hold pods that are not the group's; exact, ``minimum_moves``, where they
    hold nothing else). None when moves cannot fix it.

    ``counts`` and ``members`` are sparse over the eligible ``domains`` (absent: 0).
    ``members``: the group's pods that must pass in each domain (in ``counts`` when
    ``counted``). Only a domain holding members must end within maxSkew of the minimum: one
    over it costs the fewer of its excess and its members (they may all leave instead);
    ``arriving`` members must move whatever happens, and fill emptier domains when counted.
    """
    held = {d: n for d, n in counts.items() if n}
    must = {d: n for d, n in members.items() if n}
    if counted and must == held:
        return minimum_moves([held.get(d, 0) for d in domains], max_skew, min_domains, arriving)
    if not domains:
        return None
    pairs = [(held.get(d, 0), m) for d, m in must.items()]
    if len(domains) < min_domains:  # the global minimum is 0
        if counted and sum(must.values()) + arriving > max_skew * len(domains):
            return None
        return arriving + sum(min(c - max_skew, m) for c, m in pairs if c > max_skew)
    empty = len(domains) - len(held)  # eligible domains holding none
    best: int | None = None
    for low in range(max(held.values(), default=0) + arriving + 1):  # the final minimum
        high = low + max_skew
        out = sum(min(c - high, m) for c, m in pairs if c > high)
        into = low * empty + sum(low - c for c in held.values() if c < low)
        cost = arriving + max(out, into - arriving if counted else into)
        best = cost if best is None else min(best, cost)
    return best


def minimum_moves(
    counts: list[int], max_skew: int, min_domains: int, arriving: int = 0
) -> int | None:
    """The fewest pod moves that bring one constraint within maxSkew, if moves alone can.

    Assumes every counted pod may move and every domain has room. ``arriving``: counted pods
    that must move into some domain whatever happens (they sit on nodes without the key).
    Pods leave domains above the final maximum H and fill domains below the final minimum
    L = H - maxSkew, the arriving pods first; the cost of a target (L, H) is the arriving pods
    plus the larger of the pods leaving and the gaps the arriving pods leave, minimised over L.
    """
    domains, total = len(counts), sum(counts) + arriving
    if domains == 0:
        return None
    if domains < min_domains:
        if total > max_skew * domains:
            return None
        return arriving + sum(max(0, c - max_skew) for c in counts)
    best: int | None = None
    for low in range(total // domains + 1):
        high = low + max_skew
        if high * domains < total:
            continue
        out = sum(c - high for c in counts if c > high)
        into = sum(low - c for c in counts if c < low)
        cost = arriving + max(out, into - arriving)
        best = cost if best is None else min(best, cost)
    return best


def analyze(
    state: ClusterState,
    policy: RebalancePolicy,
    index: SpreadIndex | None = None,
    previous: Analysis | None = None,
) -> Analysis:
    """Every group of ``state`` under ``policy``. ``previous``: an analysis of an earlier state,
    whose namespaces with unchanged inputs are carried rather than analyzed again (nothing is,
    unless the nodes, what it read of its policy and the index's settings are the same); the
    result is the same as without it."""
    index = index or build_index(state, policy)
    reads = analysis_reads(policy)
    inputs = namespace_inputs(state)
    carried = _carried(previous, index, reads, inputs)
    if previous is not None and carried:
        index.adopt(previous.index, carried)
    members, skipped = collect_members(index, policy, carried)
    groups = _groups(index, policy, members)
    if previous is not None and carried:
        members, groups, skipped = _with_carried(previous, carried, members, groups, skipped)
    return Analysis(
        index, members, groups, len(state.pods), skipped, reads, inputs, frozenset(carried)
    )


def _carried(
    previous: Analysis | None,
    index: SpreadIndex,
    reads: tuple[object, ...],
    inputs: Mapping[str, NamespaceInputs],
) -> frozenset[str]:
    """The namespaces ``previous`` holds exactly as they are now: none unless it read the same
    of its policy and was made over the same nodes with the same settings; then those with
    the same inputs (``NamespaceInputs.same``)."""
    if previous is None or previous.reads != reads:
        return frozenset()
    before = previous.index
    if before.settings != index.settings or before.state.nodes != index.state.nodes:
        return frozenset()
    was = previous.inputs
    return frozenset(name for name, now in inputs.items() if now.same(was.get(name)))


def unchanged_namespaces(before: Analysis, after: Analysis) -> frozenset[str]:
    """The namespaces ``after`` holds exactly as ``before`` did (the same members and groups):
    none unless both read the same of their policy over the same nodes with the same
    settings; then those whose inputs are the same (``NamespaceInputs.same``). Found again
    from both, whatever ``after`` was made from."""
    return _carried(before, after.index, after.reads, after.inputs)


def _with_carried(
    previous: Analysis,
    carried: frozenset[str],
    members: tuple[Members, ...],
    groups: tuple[Group, ...],
    skipped: frozenset[str],
) -> tuple[tuple[Members, ...], tuple[Group, ...], frozenset[str]]:
    """The fresh members and groups with the carried namespaces' own from ``previous``, in
    the order a fresh analysis gives: by workload, so by namespace first (a stable sort keeps
    each namespace's order)."""

    def namespace(item: Members | Group) -> str:
        return item.workload.namespace

    kept_members = [m for m in previous.members if m.workload.namespace in carried]
    kept_groups = [g for g in previous.groups if g.workload.namespace in carried]
    return (
        tuple(sorted([*kept_members, *members], key=namespace)),
        tuple(sorted([*kept_groups, *groups], key=namespace)),
        skipped | (previous.namespaces_skipped & carried),
    )


def _groups(
    index: SpreadIndex, policy: RebalancePolicy, members: Sequence[Members]
) -> tuple[Group, ...]:
    """Each member bucket seen through each of its profile's constraints the policy wants."""
    groups: list[Group] = []
    # Spaces are shared by many groups; sorting a hostname space's thousands of domains once
    # per space rather than once per group keeps analysis linear (and shares the tuples).
    sorted_domains: dict[DomainSpace, tuple[str, ...]] = {}
    for m in members:
        tables = index.tables(m.profile)
        for i, c in enumerate(m.profile.constraints):
            if not wanted(c, policy):
                continue
            groups.append(_group(index, m, tables, i, sorted_domains))
    return tuple(groups)


def _group(
    index: SpreadIndex,
    m: Members,
    tables: tuple[CountTable, ...],
    i: int,
    sorted_domains: dict[DomainSpace, tuple[str, ...]],
) -> Group:
    """One member bucket seen through its profile's ``i``th constraint."""
    c = m.profile.constraints[i]
    table = tables[i]
    bad = violating_nodes(index, m, tables, i)
    violating = sum(len(m.by_node[n]) for n in bad)
    unresolvable = sum(len(m.by_node[n]) for n, s in bad.items() if s is FilterStatus.UNRESOLVABLE)
    gmin = table.global_min(c.min_domains)
    domains = sorted_domains.get(table.space)
    if domains is None:
        domains = sorted_domains[table.space] = tuple(sorted(table.space.domain_nodes))
    moves = None
    outside: Counter[str] = Counter()
    if violating:
        counted = index.counts_pod(c.selector, m.labels)
        own = _members_by_domain(index, m, c.key, table, counted)
        if counted:
            outside = _outside_counts(index, m, c.key, table, bad)
        moves = group_moves(
            Counter(table.counts) + outside if outside else table.counts,
            own + outside,
            domains,
            c.max_skew,
            # domains in an outage (KEP-5980 counting) count toward minDomains
            max(1, c.min_domains - table.space.absent),
            arriving=unresolvable,
            counted=counted,
        )
    return Group(
        members=m,
        index=i,
        counts=dict(table.counts),
        domains=domains,
        global_min=gmin,
        skew=table.max_count() - gmin if domains else 0,
        violating=violating,
        unresolvable=unresolvable,
        minimum_moves=moves,
        outside=sum(outside.values()),
    )

"""Why a group is skewed, decided from evidence, by one function for the CLI and the operator.

``attribute`` reads the objects themselves first, so that a snapshot, a live read and the
operator's scan of the same cluster give the same cause; only where the objects hold no
evidence does it read what changed since the previous scan (which only the operator has).
The evidence, strongest first (docs/causes.md lists it for users):

1. RollingUpdate: the group's pods come from several ReplicaSets, or the Deployment has more
   than one ReplicaSet holding pods (a rollout in progress; with matchLabelKeys
   pod-template-hash each ReplicaSet's pods are a group of their own).
2. NodeLoss: pods of the workload bound to nodes the state lacks; a node of the emptiest
   domain not Ready, unreachable, cordoned or being removed by an autoscaler.
3. NodeAdded: an emptiest domain whose nodes all joined after every pod of the group.
4. ScaleDown, in progress: a controller of the group's pods reports more replicas in its
   status than its spec asks for.
5. TooFewDomains: fewer eligible domains than minDomains (the global minimum is 0).
6. ScaleDown, done: a Deployment whose spec changed more often than its template (generation
   above its revision), or a ReplicaSet of its own resized after it was created.
7. RollingUpdate, done: the pods all come from the Deployment's newest ReplicaSet, an older one
   is still listed, and the constraint does not key on pod-template-hash (the new pods were
   placed while the old ones counted).
8. From the previous scan: a node gone, fewer pods (of the workload, over all its groups), a
   node added.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property

from respread.analysis.groups import Analysis, Group, Members, WorkloadRef, workload_of
from respread.core.kernel import DomainSpace
from respread.core.model import Node, Pod, Workload

# namespace, workload kind, workload name, topology key, and the pairs matchLabelKeys added to
# the selector ("k=v,..." or ""): a rollout's ReplicaSets are a group and a violation each
CauseKey = tuple[str, str, str, str, str]

TEMPLATE_HASH = "pod-template-hash"
# Taints that say a node is gone or going: the node lifecycle controller's, and the autoscalers'.
LEAVING_TAINTS = {
    "node.kubernetes.io/unreachable": "unreachable",
    "node.kubernetes.io/not-ready": "not ready",
    "ToBeDeletedByClusterAutoscaler": "being removed by the cluster autoscaler",
    "karpenter.sh/disrupted": "being removed by Karpenter",
    "karpenter.sh/disruption": "being removed by Karpenter",
}
NAMED = 3  # objects a message names before "and N more"


class Cause(StrEnum):
    SCALE_DOWN = "ScaleDown"
    NODE_LOSS = "NodeLoss"
    NODE_ADDED = "NodeAdded"
    ROLLING_UPDATE = "RollingUpdate"
    TOO_FEW_DOMAINS = "TooFewDomains"
    UNKNOWN = "Unknown"


@dataclass(frozen=True, slots=True)
class Attribution:
    cause: Cause
    message: str


NO_EVIDENCE = Attribution(Cause.UNKNOWN, "nothing in the cluster's objects says what skewed it")


@dataclass(frozen=True, slots=True)
class PreviousScan:
    """What the previous scan saw: node names, and each workload's pods per domain."""

    nodes: frozenset[str] = frozenset()
    node_domains: Mapping[str, Mapping[str, str]] = field(
        default_factory=dict
    )  # node -> key -> value
    members: Mapping[WorkloadRef, int] = field(default_factory=dict)

    @classmethod
    def of(cls, analysis: Analysis) -> PreviousScan:
        """What this scan saw, the next scan's evidence."""
        index = analysis.index
        return cls(
            nodes=frozenset(index.nodes),
            node_domains={n.name: dict(n.labels) for n in index.state.nodes},
            members=pods_per_workload(analysis),
        )


def pods_per_workload(analysis: Analysis) -> Mapping[WorkloadRef, int]:
    """Each workload's pods over all its groups (a rollout's ReplicaSets are several, with
    matchLabelKeys pod-template-hash); every pod is a member of one profile only."""
    out: Counter[WorkloadRef] = Counter()
    for m in analysis.members:
        out[m.workload] += m.count
    return dict(out)


def _named(names: list[str]) -> str:
    shown = ", ".join(names[:NAMED])
    return shown + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")


def _revision(w: Workload) -> int | None:
    try:
        return int(w.revision) if w.revision is not None else None
    except ValueError:
        return None


class Facts:
    """The evidence a state holds, indexed once per scan (on first use) for every group."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.index = analysis.index
        # Per domain of a space (spaces are shared by groups, and equal only to themselves):
        self._first_leaving: dict[tuple[DomainSpace, str], str | None] = {}
        self._earliest: dict[tuple[DomainSpace, str], float | None] = {}
        self._since: tuple[PreviousScan, list[str], list[str]] | None = None
        self._live: dict[WorkloadRef, Counter[str]] = {}  # live_by_replica_set's answers

    @cached_property
    def leaving(self) -> Mapping[str, str]:
        """The nodes gone or going, with why (`_node_state`)."""
        return {name: why for name, n in self.index.nodes.items() if (why := _node_state(n))}

    def first_leaving(self, space: DomainSpace, domain: str) -> str | None:
        """The first of the domain's nodes (in the space's order) gone or going."""
        key = (space, domain)
        if key not in self._first_leaving:
            leaving = self.leaving
            nodes = space.domain_nodes.get(domain, ()) if leaving else ()
            self._first_leaving[key] = next((n for n in nodes if n in leaving), None)
        return self._first_leaving[key]

    def earliest_joined(self, space: DomainSpace, domain: str) -> float | None:
        """When the first of the domain's nodes was created; None when the domain has no node
        or a node without a creation time."""
        key = (space, domain)
        if key not in self._earliest:
            nodes = self.index.nodes
            created = [nodes[n].created for n in space.domain_nodes.get(domain, ())]
            known = [c for c in created if c is not None]
            self._earliest[key] = min(known) if known and len(known) == len(created) else None
        return self._earliest[key]

    def since(self, previous: PreviousScan) -> tuple[list[str], list[str]]:
        """The nodes gone since ``previous`` and those added, each sorted."""
        if self._since is None or self._since[0] is not previous:
            nodes = self.index.nodes.keys()
            self._since = (previous, sorted(previous.nodes - nodes), sorted(nodes - previous.nodes))
        return self._since[1], self._since[2]

    @cached_property
    def replica_sets(self) -> Mapping[tuple[str, str], tuple[Workload, ...]]:
        """(namespace, Deployment) -> its ReplicaSets, oldest revision first."""
        out: dict[tuple[str, str], list[Workload]] = defaultdict(list)
        for w in self.index.state.workloads:
            if w.kind == "ReplicaSet" and w.owner is not None and w.owner.kind == "Deployment":
                out[(w.namespace, w.owner.name)].append(w)
        return {
            k: tuple(sorted(v, key=lambda w: (_revision(w) or 0, w.name))) for k, v in out.items()
        }

    @cached_property
    def _members(self) -> Mapping[WorkloadRef, list[Members]]:
        """Each workload's members, in the analysis's order."""
        out: dict[WorkloadRef, list[Members]] = defaultdict(list)
        for m in self.analysis.members:
            out[m.workload].append(m)
        return out

    def live_by_replica_set(self, w: WorkloadRef) -> Counter[str]:
        """The workload's live pods per ReplicaSet (counted or not, bound to a known node);
        counted when first asked: only violated groups' workloads are."""
        live = self._live.get(w)
        if live is None:
            live = self._live[w] = Counter()
            for m in self._members.get(w, ()):
                for pods in m.by_node.values():
                    for p in pods:
                        if p.owner is not None and p.owner.kind == "ReplicaSet":
                            live[p.owner.name] += 1
        return live

    @cached_property
    def pods(self) -> Mapping[WorkloadRef, int]:
        """Each workload's pods over all its groups."""
        return pods_per_workload(self.analysis)

    @cached_property
    def lost(self) -> Mapping[WorkloadRef, tuple[Pod, ...]]:
        """Each workload's live pods bound to a node the state lacks."""
        nodes = self.index.nodes
        out: dict[WorkloadRef, list[Pod]] = defaultdict(list)
        for p in self.index.state.pods:
            if p.node_name and p.node_name not in nodes and not (p.terminating or p.finished):
                out[workload_of(p, self.index)].append(p)
        return {w: tuple(ps) for w, ps in out.items()}

    @cached_property
    def autoscalers(self) -> Mapping[tuple[str, str, str], str]:
        """(namespace, kind, name) of a scale target -> the HorizontalPodAutoscaler's name."""
        return {
            (a.namespace, a.target_kind, a.target_name): a.name
            for a in self.index.state.autoscalers
        }

    def workload(self, ref: WorkloadRef) -> Workload | None:
        return self.index.workloads.get((ref.namespace, ref.kind, ref.name))

    def controllers(self, group: Group) -> list[Workload]:
        """The group's workload and the ReplicaSets its pods come from, as the state holds them."""
        out = []
        top = self.workload(group.workload)
        if top is not None:
            out.append(top)
        names = {p.owner.name for p in _pods(group) if p.owner and p.owner.kind == "ReplicaSet"}
        ns = group.workload.namespace
        for name in sorted(names):
            rs = self.index.workloads.get((ns, "ReplicaSet", name))
            if rs is not None and rs is not top:
                out.append(rs)
        return out


def _pods(group: Group) -> list[Pod]:
    return [p for ps in group.members.by_node.values() for p in ps]


def cause_key(group: Group) -> CauseKey:
    w = group.workload
    match = ",".join(f"{k}={v}" for k, v in group.constraint.match_labels)
    return (w.namespace, w.kind, w.name, group.constraint.key, match)


# ---- evidence in the objects ---------------------------------------------------------------


def _rolling_out(group: Group, facts: Facts) -> Attribution | None:
    """Several ReplicaSets of one workload hold pods: a rollout in progress."""
    owners = {p.owner.name for p in _pods(group) if p.owner and p.owner.kind == "ReplicaSet"}
    if len(owners) > 1:
        names = sorted(owners)
        return Attribution(
            Cause.ROLLING_UPDATE, f"pods come from {len(names)} ReplicaSets ({_named(names)})"
        )
    w = group.workload
    live = facts.live_by_replica_set(w)
    active = set(live)
    for rs in facts.replica_sets.get((w.namespace, w.name), ()) if w.kind == "Deployment" else ():
        if rs.replicas:
            active.add(rs.name)
    if len(active) < 2:
        return None
    revisions = {rs.name: rs.revision for rs in facts.replica_sets.get((w.namespace, w.name), ())}
    shown = [
        f"{n} ({f'revision {revisions[n]}, ' if revisions.get(n) else ''}{live[n]} pods)"
        for n in sorted(active)
    ]
    return Attribution(
        Cause.ROLLING_UPDATE, f"{w} is rolling out: ReplicaSets {_named(shown)} hold pods"
    )


def _node_state(node: Node) -> str:
    """Why a node is gone or going ("" when it is neither)."""
    for t in node.taints:
        if t.key in LEAVING_TAINTS:
            return LEAVING_TAINTS[t.key]
    if not node.ready:
        return "not Ready"
    if node.unschedulable:
        return "cordoned"
    return ""


def _emptiest(group: Group) -> list[str]:
    if not group.domains:
        return []
    low = min(group.domain_count(d) for d in group.domains)
    return [d for d in group.domains if group.domain_count(d) == low]


def _nodes_lost(group: Group, facts: Facts) -> Attribution | None:
    """Pods bound to nodes the state lacks; a node of the emptiest domain gone or going."""
    lost = facts.lost.get(group.workload, ())
    if lost:
        nodes = sorted({p.node_name for p in lost if p.node_name})
        return Attribution(
            Cause.NODE_LOSS,
            f"{len(lost)} pod(s) of {group.workload} are bound to node(s) {_named(nodes)}, which "
            "the input does not hold (deleted, or left out of the snapshot)",
        )
    space = facts.index.space(group.members.profile, group.index)
    key = group.constraint.key
    for domain in _emptiest(group):
        name = facts.first_leaving(space, domain)
        if name is not None:
            return Attribution(
                Cause.NODE_LOSS,
                f"node {name} of {key} {domain}, the emptiest domain, is "
                f"{facts.leaving[name]}: its pods were or will be evicted, and no replacement "
                "lands there",
            )
    return None


def _nodes_added(group: Group, facts: Facts) -> Attribution | None:
    """An emptiest domain whose nodes all joined after every pod of the group was placed."""
    created = [p.created for p in _pods(group) if p.created is not None]
    if not created:
        return None
    newest_pod = max(created)
    space = facts.index.space(group.members.profile, group.index)
    for domain in _emptiest(group):
        joined = facts.earliest_joined(space, domain)
        if joined is not None and joined > newest_pod:
            return Attribution(
                Cause.NODE_ADDED,
                f"{group.constraint.key} {domain}: its node(s) joined after every pod of "
                f"{group.workload} was placed",
            )
    return None


def _scaling_in(group: Group, facts: Facts) -> Attribution | None:
    """A controller of the group's pods reports more replicas than its spec asks for."""
    for w in facts.controllers(group):
        desired = w.replicas
        observed = w.rollout.replicas if w.rollout is not None else w.status_replicas
        if desired is not None and observed is not None and observed > desired:
            return Attribution(
                Cause.SCALE_DOWN,
                f"{w.kind} {w.namespace}/{w.name} is scaling in ({observed} replicas, "
                f"{desired} desired): pods are removed without regard to the spread",
            )
    return None


def _too_few_domains(group: Group, facts: Facts) -> Attribution | None:
    c = group.constraint
    if len(group.domains) >= c.min_domains:
        return None
    return Attribution(
        Cause.TOO_FEW_DOMAINS,
        f"{len(group.domains)} eligible {c.key} domain(s) for minDomains {c.min_domains}: the "
        f"global minimum is 0, so no domain may hold more than maxSkew ({c.max_skew}) pod(s)",
    )


def _autoscaled(w: Workload, facts: Facts) -> str:
    hpa = facts.autoscalers.get((w.namespace, w.kind, w.name))
    return f"; HorizontalPodAutoscaler {hpa} scales it" if hpa else ""


def _resized(group: Group, facts: Facts) -> Attribution | None:
    """A Deployment whose spec changed more often than its template; a ReplicaSet of its own
    resized after it was created."""
    w = facts.workload(group.workload)
    if w is None or not w.generation:
        return None
    if w.kind == "Deployment":
        sets = facts.replica_sets.get((w.namespace, w.name), ())
        revision = _revision(w) or max((_revision(rs) or 0 for rs in sets), default=0)
        if not revision or w.generation <= revision:
            return None
        changes = w.generation - revision
        what = f"{w.kind} {w.namespace}/{w.name}"
        return Attribution(
            Cause.SCALE_DOWN,
            f"{what}'s spec changed {changes} time(s) without a new template revision "
            f"(generation {w.generation}, revision {revision}), as a change of replicas does; "
            f"a scale-in removes pods without regard to the spread{_autoscaled(w, facts)}",
        )
    if w.kind == "ReplicaSet" and w.owner is None and w.generation > 1:
        return Attribution(
            Cause.SCALE_DOWN,
            f"ReplicaSet {w.namespace}/{w.name} was resized after it was created (generation "
            f"{w.generation}): a scale-in removes pods without regard to the spread"
            f"{_autoscaled(w, facts)}",
        )
    return None


def _keyed_on_template(group: Group) -> bool:
    selector = group.constraint.selector
    return selector is not None and any(r.key == TEMPLATE_HASH for r in selector.requirements)


def _rolled_out(group: Group, facts: Facts) -> Attribution | None:
    """The pods all come from the newest ReplicaSet, placed while an older one's counted."""
    w = group.workload
    if w.kind != "Deployment" or _keyed_on_template(group):
        return None
    sets = facts.replica_sets.get((w.namespace, w.name), ())
    owners = {p.owner.name for p in _pods(group) if p.owner and p.owner.kind == "ReplicaSet"}
    if len(sets) < 2 or owners != {sets[-1].name}:
        return None
    new, old = sets[-1], sets[-2]
    if _revision(new) is None or _revision(old) is None:
        return None
    return Attribution(
        Cause.ROLLING_UPDATE,
        f"the pods of ReplicaSet {new.name} (revision {new.revision}) were placed while those of "
        f"{old.name} (revision {old.revision}) still counted (the constraint does not key on "
        f"{TEMPLATE_HASH}); the old pods then went without regard to the spread",
    )


Rule = Callable[[Group, Facts], Attribution | None]
EVIDENCE: tuple[Rule, ...] = (
    _rolling_out,
    _nodes_lost,
    _nodes_added,
    _scaling_in,
    _too_few_domains,
    _resized,
    _rolled_out,
)


# ---- evidence from the previous scan -------------------------------------------------------


def _since_previous(
    group: Group, facts: Facts, previous: PreviousScan | None
) -> Attribution | None:
    """What changed since the previous scan: a node gone, fewer pods, a node added."""
    if previous is None:
        return None
    lost, added = facts.since(previous)
    lost_here = [n for n in lost if group.constraint.key in previous.node_domains.get(n, {})]
    if lost_here:
        return Attribution(
            Cause.NODE_LOSS, f"node(s) {_named(lost_here)} left since the previous scan"
        )
    before = previous.members.get(group.workload)
    now = facts.pods.get(group.workload, group.members.count)
    if before is not None and now < before:
        return Attribution(
            Cause.SCALE_DOWN,
            f"{group.workload} went from {before} to {now} pods since the previous scan",
        )
    if added and group.global_min == 0:
        return Attribution(
            Cause.NODE_ADDED, f"node(s) {_named(added)} joined since the previous scan"
        )
    return None


def attribute(
    group: Group,
    facts: Facts,
    previous: PreviousScan | None = None,
    carried: Mapping[CauseKey, Attribution] | None = None,
) -> Attribution:
    """Why the group is skewed: the first evidence found, in EVIDENCE's order, in the objects;
    then what changed since ``previous``, the previous scan; else Unknown. ``carried``: the
    causes the last scan gave its violations. Like ``since``, the cause belongs to the
    violation: an ongoing violation keeps the cause it was first given, and only an Unknown
    one is looked for again."""
    before = (carried or {}).get(cause_key(group))
    if before is not None and before.cause is not Cause.UNKNOWN:
        return before
    for rule in EVIDENCE:
        found = rule(group, facts)
        if found is not None:
            return found
    return _since_previous(group, facts, previous) or NO_EVIDENCE

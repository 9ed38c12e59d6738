"""Pods left Pending by topology spread: which constraint and domain bind, why, and what unblocks.

An unbound pod (no nodeName, not terminating or finished) with hard constraints is judged as the
scheduler would place it now: the Filter (the kernel's rule, the pod not in the counts) and the
other filters respread models (affinity, taints, cordons, volumes, resources) on every node. It
is *held by spread* when no node passes everything, yet some node passes everything but the
spread Filter: spread is what keeps it off the nodes that have room. The binding constraint is
the one that rejects most of those nodes; the domains it admits are the only places the pod may
go, and each one's nodes say why they cannot take it (full, cordoned, tainted, affinity, volume,
another constraint). With no domain admitted, eligible domains are missing (minDomains above the
eligible domains, each at its ceiling): a domain is gone.

What would unblock it: capacity in an admitted domain (named), or a move respread can plan: the
eviction of another pod on a full node of an admitted domain whose removal makes room for the
pending pod, whose replacement the landing predictor puts elsewhere, which no safety rule or
budget refuses, and which leaves the moved pod's own constraints within maxSkew.
The scheduler's PodScheduled=False message is kept as evidence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, replace
from enum import StrEnum

from respread.analysis.groups import Analysis, WorkloadRef, namespace_selected, wanted, workload_of
from respread.core.kernel import CountTable
from respread.core.model import UNSCHEDULABLE_TAINT, Node, Pod, Resources, When
from respread.inputs.policy import RebalancePolicy
from respread.scheduling.budgets import BudgetLedger, BudgetVerdict
from respread.scheduling.landing import LandingPredictor
from respread.scheduling.placement import CapacityLedger, static_reasons, volume_reason
from respread.scheduling.safety import protection
from respread.scheduling.spread import Profile, SpreadIndex, filter_node, rule

DOMAINS_LISTED = 10  # admitted domains detailed per pending pod (the rest are counted)
MOVES_TRIED = 50  # candidate pods tried per admitted node when looking for room


class Obstacle(StrEnum):
    """Why an admitted domain's node does not take the pending pod."""

    FULL = "Full"  # no room: pods or resources
    CORDONED = "Cordoned"
    TAINTED = "Tainted"
    AFFINITY = "NodeAffinity"  # the pod's nodeSelector or required affinity refuses it
    VOLUME = "PinnedByVolume"  # the pod's bound volume refuses it
    SPREAD = "OtherConstraint"  # another of its spread constraints refuses it
    GONE = "Gone"  # no eligible domain admits the pod at all


@dataclass(frozen=True, slots=True)
class NodeObstacle:
    node: str
    obstacle: Obstacle
    detail: str


@dataclass(frozen=True, slots=True)
class AdmittedDomain:
    """A domain the binding constraint admits the pod into, and why none of its nodes take it."""

    domain: str
    pods: int  # its count for the constraint
    nodes: tuple[NodeObstacle, ...]

    @property
    def obstacle(self) -> Obstacle:
        return Counter(n.obstacle for n in self.nodes).most_common(1)[0][0]


class UnblockKind(StrEnum):
    MOVE = "Move"  # an eviction respread can plan makes room
    CAPACITY = "Capacity"  # room (or a node) needed in a named domain


@dataclass(frozen=True, slots=True)
class Unblock:
    kind: UnblockKind
    message: str
    domain: str = ""
    # MOVE: the pod to evict, its node, and where its replacement is predicted to land
    evict: Pod | None = None
    node: str = ""
    predicted_node: str = ""


@dataclass(frozen=True, slots=True)
class PendingPod:
    pod: Pod
    workload: WorkloadRef
    topology_key: str
    max_skew: int
    min_domains: int
    global_min: int
    counts: tuple[tuple[str, int], ...]  # every eligible domain of the binding constraint
    admitted: tuple[AdmittedDomain, ...]  # at most DOMAINS_LISTED
    admitted_total: int
    nodes_refused_by_spread: int  # nodes that would take the pod but for the spread Filter
    obstacle: Obstacle
    message: str
    unblock: tuple[Unblock, ...]
    evidence: str  # the scheduler's PodScheduled=False condition; "" when absent


def pending_pods(
    analysis: Analysis, policy: RebalancePolicy, now: float | None
) -> list[PendingPod]:
    """Every unbound pod of the policy's namespaces that spread holds Pending, in name order."""
    index = analysis.index
    state = index.state
    if not any(p.node_name is None for p in state.pods):
        return []
    namespaces = {n.name: n for n in state.namespaces}
    judge = _Judge(index, policy, now)
    out = []
    selected: dict[str, bool] = {}
    for pod in sorted(_unbound(state.pods), key=lambda p: (p.namespace, p.name)):
        ok = selected.get(pod.namespace)
        if ok is None:
            ok = selected[pod.namespace] = namespace_selected(pod.namespace, policy, namespaces)
        if ok:
            found = judge.pending(pod)
            if found is not None:
                out.append(found)
    return out


def pending_pod(
    index: SpreadIndex, policy: RebalancePolicy, pod: Pod, now: float | None
) -> PendingPod | None:
    """``pod``'s finding when spread holds it Pending (`respread explain`), else None."""
    if next(iter(_unbound((pod,))), None) is None:
        return None
    return _Judge(index, policy, now).pending(pod)


def _unbound(pods: Iterable[Pod]) -> Iterable[Pod]:
    for p in pods:
        # A nominated pod is being placed by preemption: the scheduler has found it a node.
        if p.node_name is None and not p.terminating and not p.finished and not p.nominated_node:
            yield p


class _Judge:
    def __init__(self, index: SpreadIndex, policy: RebalancePolicy, now: float | None) -> None:
        self.index = index
        self.policy = policy
        self.now = now
        state = index.state
        self.ledger = CapacityLedger(state.nodes, state.pods)
        self.budgets = BudgetLedger(state.budgets)
        self._landing: LandingPredictor | None = None
        self._on_node: dict[str, list[Pod]] | None = None
        # (ids of profile and spec, volumes, workload) -> (the profile and spec, kept so
        # that their ids stay theirs, and the finding)
        self._shapes: dict[tuple[object, ...], tuple[Profile, object, PendingPod | None]] = {}

    def pending(self, pod: Pod) -> PendingPod | None:
        """The pod's finding; pods of one shape (profile, spec, volumes, workload) share it, so
        a workload's many pending replicas cost one judgement over the nodes."""
        profile = self.index.profile_of(pod)
        key = (id(profile), id(pod.spec), pod.volume_pins, workload_of(pod, self.index))
        hit = self._shapes.get(key)
        if hit is None:
            hit = self._shapes[key] = (profile, pod.spec, self._judge(pod, profile))
        found = hit[2]
        if found is None or found.pod is pod:
            return found
        return replace(found, pod=pod, evidence=pod.unschedulable or "")

    def _judge(self, pod: Pod, profile: Profile) -> PendingPod | None:
        index = self.index
        hard = [
            i
            for i, c in enumerate(profile.constraints)
            if c.when is When.DO_NOT_SCHEDULE and wanted(c, self.policy)
        ]
        if not hard:
            return None
        tables = index.tables(profile)
        refused_by: Counter[int] = Counter()
        other: dict[str, list[NodeObstacle]] = {}
        for node in index.state.nodes:
            verdict = filter_node(profile, tables, node)
            obstacles = self._obstacles(pod, node)
            if verdict.ok and not obstacles:
                return None  # a node takes it: not held by spread (as far as respread models)
            if not verdict.ok and not obstacles and verdict.constraint in hard:
                assert verdict.constraint is not None
                refused_by[verdict.constraint] += 1
            other[node.name] = obstacles
        if not refused_by:
            return None  # nothing but other filters keeps it off: not spread's doing
        binding = max(refused_by, key=lambda i: (refused_by[i], -i))
        return self._finding(
            pod, profile, tables, binding=binding, refused=refused_by[binding], other=other
        )

    def _obstacles(self, pod: Pod, node: Node) -> list[NodeObstacle]:
        out = []
        for reason in static_reasons(pod.spec, node):
            if reason.startswith(f"untolerated taint {UNSCHEDULABLE_TAINT.key}="):
                out.append(NodeObstacle(node.name, Obstacle.CORDONED, "node is cordoned"))
            elif reason.startswith("untolerated taint"):
                out.append(NodeObstacle(node.name, Obstacle.TAINTED, reason))
            elif reason.startswith("node is cordoned"):
                out.append(NodeObstacle(node.name, Obstacle.CORDONED, reason))
            else:
                out.append(NodeObstacle(node.name, Obstacle.AFFINITY, reason))
        pinned = volume_reason(pod, node)
        if pinned:
            out.append(NodeObstacle(node.name, Obstacle.VOLUME, pinned))
        fit = self.ledger.fit_reason(node.name, pod.spec.requests)
        if fit:
            out.append(NodeObstacle(node.name, Obstacle.FULL, fit))
        return out

    def _finding(
        self,
        pod: Pod,
        profile: Profile,
        tables: tuple[CountTable, ...],
        *,
        binding: int,
        refused: int,
        other: dict[str, list[NodeObstacle]],
    ) -> PendingPod:
        index = self.index
        c = profile.constraints[binding]
        table = tables[binding]
        judge = rule(profile, binding)
        gmin = table.global_min(c.min_domains)
        ceiling = judge.ceiling(table)
        domains = sorted(table.space.domain_nodes)
        admitted_names = [d for d in domains if table.get(d) <= ceiling]
        admitted = []
        for d in admitted_names[:DOMAINS_LISTED]:
            nodes = []
            for name in table.space.domain_nodes[d]:
                found = other.get(name) or []
                if not found:  # it passes the binding constraint: another one refuses it
                    verdict = filter_node(profile, tables, index.nodes[name])
                    found = [NodeObstacle(name, Obstacle.SPREAD, verdict.reason)]
                nodes.append(found[0])
            admitted.append(AdmittedDomain(d, table.get(d), tuple(nodes)))
        workload = workload_of(pod, index)
        if admitted:
            obstacle = Counter(a.obstacle for a in admitted).most_common(1)[0][0]
            unblock = self._unblock(pod, profile, c.key, admitted)
        else:
            obstacle = Obstacle.GONE
            unblock = (self._new_domain(c.key, c.min_domains, len(domains)),)
        message = _message(
            c.key,
            c.max_skew,
            min_domains=c.min_domains,
            ceiling=ceiling,
            eligible=len(domains),
            admitted=admitted,
        )
        return PendingPod(
            pod=pod,
            workload=workload,
            topology_key=c.key,
            max_skew=c.max_skew,
            min_domains=c.min_domains,
            global_min=gmin,
            counts=tuple((d, table.get(d)) for d in domains),
            admitted=tuple(admitted),
            admitted_total=len(admitted_names),
            nodes_refused_by_spread=refused,
            obstacle=obstacle,
            message=message,
            unblock=unblock,
            evidence=pod.unschedulable or "",
        )

    # ---- what would unblock it ------------------------------------------------------------

    def _unblock(
        self, pod: Pod, profile: Profile, key: str, admitted: list[AdmittedDomain]
    ) -> tuple[Unblock, ...]:
        out: list[Unblock] = []
        for a in admitted:
            for n in a.nodes:
                if n.obstacle is Obstacle.FULL:
                    move = self._make_room(pod, profile, n.node, key, a.domain)
                    if move is not None:
                        return (move, *self._capacity(pod, key, admitted))
        out.extend(self._capacity(pod, key, admitted))
        return tuple(out)

    def _capacity(self, pod: Pod, key: str, admitted: list[AdmittedDomain]) -> list[Unblock]:
        out = []
        for a in admitted[:3]:
            obstacle = a.obstacle
            if obstacle is Obstacle.CORDONED:
                names = ", ".join(n.node for n in a.nodes if n.obstacle is obstacle)
                what = f"uncordon {names}, or add a node with room"
            elif obstacle is Obstacle.TAINTED:
                what = "a node without the untolerated taint, with room"
            elif obstacle is Obstacle.SPREAD:
                first = next(n for n in a.nodes if n.obstacle is obstacle)
                what = f"a node its other spread constraints admit (now: {first.detail})"
            else:
                what = f"room for one pod ({_requests(pod.spec.requests)})"
            out.append(
                Unblock(UnblockKind.CAPACITY, f"{what} in {key}={a.domain}", domain=a.domain)
            )
        return out

    def _new_domain(self, key: str, min_domains: int, eligible: int) -> Unblock:
        if not eligible:
            what = f"a node labelled {key} that the pod's inclusion policies admit"
        elif eligible < min_domains:
            need = min_domains - eligible
            what = (
                f"{need} more {key} domain(s) with room (minDomains {min_domains}, "
                f"{eligible} eligible)"
            )
        else:
            what = f"a node in another {key} domain"
        return Unblock(UnblockKind.CAPACITY, what)

    def _pods_on(self, node: str) -> list[Pod]:
        if self._on_node is None:
            self._on_node = {}
            for p in self.index.state.pods:
                if p.node_name is not None and not p.finished and not p.terminating:
                    self._on_node.setdefault(p.node_name, []).append(p)
        return self._on_node.get(node, [])

    def _make_room(
        self, pod: Pod, profile: Profile, node: str, key: str, domain: str
    ) -> Unblock | None:
        """An eviction from ``node`` that makes room for ``pod`` there, if respread may plan it."""
        index = self.index
        landing = self._landing
        if landing is None:
            state = index.state
            landing = self._landing = LandingPredictor(state.nodes, state.pods, True)
        free = self.ledger.free(node)
        candidates = sorted(self._pods_on(node), key=lambda p: (p.priority, p.namespace, p.name))
        for victim in candidates[:MOVES_TRIED]:
            if self._counted_by(profile, victim):
                continue  # moving one of its own group changes the counts it is judged by
            if protection(victim, self.policy, self.now) is not None:
                continue
            if self.budgets.check(victim).verdict is not BudgetVerdict.ALLOWED:
                continue
            if free is not None and not pod.spec.requests.fits_in(free + victim.spec.requests):
                continue
            target = self._replacement(landing, victim, node, pod)
            if target is None:
                continue
            who = f"{victim.namespace}/{victim.name}"
            return Unblock(
                UnblockKind.MOVE,
                f"evict {who} from {node} ({key}={domain}): its replacement is predicted on "
                f"{target}, and the room it leaves takes this pod",
                domain=domain,
                evict=victim,
                node=node,
                predicted_node=target,
            )
        return None

    def _counted_by(self, profile: Profile, victim: Pod) -> bool:
        index = self.index
        return victim.namespace == profile.namespace and any(
            index.counts_pod(c.selector, victim.labels) for c in profile.constraints
        )

    def _replacement(
        self, landing: LandingPredictor, victim: Pod, node: str, pod: Pod
    ) -> str | None:
        """Where the victim's replacement lands once the pending pod took its room (None:
        nowhere, back on ``node``, or its own constraints would end over maxSkew)."""
        index = self.index
        vprofile = index.profile_of(victim)
        tables = list(index.tables(vprofile))
        for i in range(len(tables)):
            if index.is_counted(vprofile, i, victim):
                tables[i] = tables[i].copy()
                tables[i].add(tables[i].space.node_domain[node], -1)
        wanted_ = [i for i, c in enumerate(vprofile.constraints) if wanted(c, self.policy)]
        landing.release(node, victim.spec.requests)
        landing.reserve(node, pod.spec.requests)
        try:
            target, _ = landing.land(vprofile, tuple(tables), wanted_, victim)
        finally:
            landing.release(node, pod.spec.requests)
            landing.reserve(node, victim.spec.requests)
        if target is None or target.name == node:
            return None
        for i in wanted_:
            t = tables[i]
            value = t.space.node_domain.get(target.name)
            before = index.tables(vprofile)[i].skew(vprofile.constraints[i].min_domains)
            if value is not None:
                t = t.copy()
                t.add(value, 1)
            c = vprofile.constraints[i]
            after = t.skew(c.min_domains)
            if after > c.max_skew and after > before:
                return None
        return target.name


def _requests(r: Resources) -> str:
    parts = []
    if r.cpu:
        parts.append(f"cpu {r.cpu}m")
    if r.memory:
        parts.append(f"memory {r.memory}")
    return ", ".join(parts) or "no resources requested"


def _message(
    key: str,
    max_skew: int,
    *,
    min_domains: int,
    ceiling: int,
    eligible: int,
    admitted: list[AdmittedDomain],
) -> str:
    if not admitted:
        if not eligible:
            return f"no node carries the topology key {key} (or passes its inclusion policies)"
        if eligible < min_domains:
            return (
                f"no {key} domain may take it: minDomains {min_domains} with {eligible} eligible "
                f"domain(s) makes the global minimum 0, and every domain holds maxSkew "
                f"{max_skew} already (a domain is gone)"
            )
        return f"no {key} domain may take it"
    names = ", ".join(f"{a.domain or chr(34) * 2} ({_said(a.obstacle)})" for a in admitted)
    return (
        f"maxSkew {max_skew} on {key} admits it only where the count is at most {ceiling}: {names}"
    )


def _said(obstacle: Obstacle) -> str:
    return {
        Obstacle.FULL: "full",
        Obstacle.CORDONED: "cordoned",
        Obstacle.TAINTED: "tainted",
        Obstacle.AFFINITY: "refused by the pod's node affinity",
        Obstacle.VOLUME: "refused by its bound volume",
        Obstacle.SPREAD: "refused by another spread constraint",
        Obstacle.GONE: "gone",
    }[obstacle]

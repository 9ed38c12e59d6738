"""Surge moves (make before break): fix a Deployment's skew without evicting anything.

For a violated Deployment whose eviction plan is blocked (budgets, caps, protections), or every
violated Deployment with ``when: Always``, a surge move:

1. raises spec.replicas from n to n + k, k being the moves needed (analysis.minimum_moves, the
   largest over the workload's violated hard constraints), at most ``maxSurge``. The scheduler
   places the k new pods; its PodTopologySpread filter only admits them to domains where
   ``count + 1 - min <= maxSkew``, so they land in the least crowded domains;
2. waits (at most ``readyTimeout``) until every one of the n + k pods is Ready;
3. gives the k pods in the crowded domains the lowest pod-deletion-cost and scales back to n:
   the ReplicaSet controller deletes exactly those pods (all pods are Ready: the cost decides).
   Victims that would make another workload's spread worse (surge_others.py) are avoided when
   others as good exist; when none does, the surge is rolled back.

Availability never drops below n and no budget is consumed. The operation's state is an
annotation on the Deployment (snapshot.SURGE_STATE, JSON), written in the same patch as each
replica change with a resourceVersion precondition, so a restarted operator (or a new leader)
resumes it from there. ``advance`` is the state machine: one observed Deployment and its pods
in, one action out.

Everything here is pure: ``plan_surges`` decides, ``advance`` steps an operation, and
runtime/surges.py writes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Final

from respread.analysis.groups import (
    Analysis,
    Group,
    Members,
    WorkloadRef,
    violating_nodes,
    workload_of,
)
from respread.core.annotations import SURGE_OPT, SURGE_STATE
from respread.core.kernel import CountTable
from respread.core.model import Autoscaler, Node, Pod, Workload
from respread.inputs.policy import RebalancePolicy, SurgeWhen
from respread.remedies.surge.others import OthersJudge, harm_to_others, judge_others
from respread.scheduling.controller import INT32_MIN, Tier, current_cost, tier
from respread.scheduling.placement import CapacityLedger, static_reasons
from respread.scheduling.spread import filter_node, pod_counts

# GitOps markers: a controller that would put spec.replicas back (docs/surge.md).
GITOPS_MARKERS: Final[Mapping[str, str]] = {
    "argocd.argoproj.io/tracking-id": "Argo CD (annotation tracking)",
    "argocd.argoproj.io/instance": "Argo CD (label tracking)",
    "kustomize.toolkit.fluxcd.io/name": "Flux (Kustomization)",
    "kustomize.toolkit.fluxcd.io/namespace": "Flux (Kustomization)",
    "helm.toolkit.fluxcd.io/name": "Flux (HelmRelease)",
    "helm.toolkit.fluxcd.io/namespace": "Flux (HelmRelease)",
}
VICTIM_COST: Final = INT32_MIN  # the victims' pod-deletion-cost: INT32_MIN, INT32_MIN + 1, ...


class Phase(StrEnum):
    SURGING = "Surging"  # replicas raised to n + k; waiting for the new pods to be Ready
    MARKING = "Marking"  # victims chosen (recorded), their costs being written
    DRAINING = "Draining"  # replicas back to n; waiting for the controller to delete the victims
    ROLLING_BACK = "RollingBack"  # the new pods were not Ready in time: back to n
    ROLLED_BACK = "RolledBack"  # over; kept so that the Deployment is not surged again at once


@dataclass(frozen=True, slots=True)
class Operation:
    """The state of one surge, as kept in the Deployment's annotation."""

    policy: str
    original: int
    target: int
    started: float
    deadline: float
    phase: Phase = Phase.SURGING
    victims: tuple[str, ...] = ()  # pod uids, lowest cost first (Marking and later)
    reason: str = ""

    def to_json(self) -> str:
        return json.dumps(
            {
                "policy": self.policy,
                "originalReplicas": self.original,
                "targetReplicas": self.target,
                "started": self.started,
                "deadline": self.deadline,
                "phase": self.phase.value,
                "victims": list(self.victims),
                "reason": self.reason,
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def parse(cls, raw: str | None) -> Operation | None:
        """The operation in an annotation's value; None when absent or unreadable."""
        if not raw:
            return None
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                return None
            victims = data.get("victims") or []
            original, target = data["originalReplicas"], data["targetReplicas"]
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (original, target)):
                return None
            return cls(
                policy=str(data["policy"]),
                original=original,
                target=target,
                started=float(data["started"]),
                deadline=float(data["deadline"]),
                phase=Phase(data["phase"]),
                victims=tuple(str(v) for v in victims) if isinstance(victims, list) else (),
                reason=str(data.get("reason") or ""),
            )
        except (ValueError, KeyError, TypeError):
            return None


def operation_of(deployment: Workload) -> Operation | None:
    return Operation.parse(deployment.markers.get(SURGE_STATE))


# --------------------------------------------------------------------------------------------
# Planning a surge


Domains = tuple[tuple[str, str], ...]  # (topology key, value) over the hard constraints


@dataclass(frozen=True, slots=True)
class Landing:
    node: str
    domains: Domains
    # other domains the scheduler's Filter also admits, more or less crowded than this one
    others: tuple[Domains, ...] = ()


@dataclass(frozen=True, slots=True)
class Victim:
    pod: Pod
    domains: tuple[tuple[str, str], ...]
    cost: int  # the pod-deletion-cost it gets


@dataclass(frozen=True, slots=True)
class SurgePlan:
    workload: WorkloadRef
    deployment: Workload
    original: int
    surge: int  # k: the extra replicas
    landings: tuple[Landing, ...]  # where the scheduler is predicted to place them
    victims: tuple[Victim, ...]  # predicted: chosen again from the real placement
    misplaced_after: int  # predicted misplaced pods of the workload after the surge
    # after the worst admissible placement (each new pod in the most crowded domain the Filter
    # admits), when the landing is not determined; else misplaced_after
    worst_misplaced: int = 0

    @property
    def determined(self) -> bool:
        """Whether the Filter admits each new pod to one domain only (no choice left to the
        scheduler's scoring)."""
        return not any(lnd.others for lnd in self.landings)


@dataclass(frozen=True, slots=True)
class SurgeSkip:
    workload: WorkloadRef
    reason: str


class ActionKind(StrEnum):
    SCALE_UP = "ScaleUp"
    WAIT = "Wait"
    MARK_AND_SCALE_BACK = "MarkVictimsAndScaleBack"
    SCALE_BACK = "ScaleBack"  # victims already recorded (a resumed Marking)
    ROLLBACK = "Rollback"
    STAND_DOWN = "StandDown"
    DONE = "Done"


@dataclass(frozen=True, slots=True)
class Action:
    kind: ActionKind
    reason: str
    victims: tuple[Victim, ...] = ()  # MarkVictimsAndScaleBack, ScaleBack, Rollback


@dataclass(frozen=True, slots=True)
class InFlight:
    workload: WorkloadRef
    deployment: Workload
    operation: Operation
    action: Action
    orphaned: bool = False  # its policy is gone (surge_orphans.py): no RolledBack record kept


@dataclass(frozen=True, slots=True)
class SurgeReport:
    enabled: bool
    plans: tuple[SurgePlan, ...] = ()
    skips: tuple[SurgeSkip, ...] = ()
    in_flight: tuple[InFlight, ...] = ()
    notes: Mapping[WorkloadRef, str] = field(default_factory=dict)  # per workload: why/what

    @property
    def busy(self) -> frozenset[WorkloadRef]:
        """Workloads a surge plans or holds: no eviction and no cost rewrite for them."""
        return frozenset(p.workload for p in self.plans) | frozenset(
            f.workload for f in self.in_flight
        )


def deployments(analysis: Analysis) -> dict[WorkloadRef, Workload]:
    return {
        WorkloadRef(w.namespace, w.kind, w.name): w
        for w in analysis.index.state.workloads
        if w.kind == "Deployment"
    }


def gitops_marker(deployment: Workload) -> str | None:
    """The GitOps controller a marker names, unless respread's opt-in says surge anyway."""
    if deployment.markers.get(SURGE_OPT) == "true":
        return None
    for key, who in GITOPS_MARKERS.items():
        if key in deployment.markers:
            return f"managed by {who} ({key}): it would put spec.replicas back"
    return None


def autoscaled(deployment: Workload, autoscalers: Iterable[Autoscaler]) -> str | None:
    for a in autoscalers:
        if (
            a.namespace == deployment.namespace
            and a.target_kind == "Deployment"
            and a.target_name == deployment.name
        ):
            return a.name
    return None


def _active_replica_sets(analysis: Analysis, deployment: Workload) -> list[Workload]:
    return [
        w
        for w in analysis.index.state.workloads
        if w.kind == "ReplicaSet"
        and w.namespace == deployment.namespace
        and w.owner is not None
        and w.owner.kind == "Deployment"
        and w.owner.name == deployment.name
        and (w.replicas or 0) > 0
    ]


def guard(analysis: Analysis, deployment: Workload, policy: RebalancePolicy) -> str | None:
    """Why a surge must not touch this Deployment now (None: it may)."""
    settings = policy.remediation.surge
    if deployment.markers.get(SURGE_OPT) == "false":
        return f'opted out ({SURGE_OPT}: "false")'
    marker = gitops_marker(deployment)
    if marker is not None:
        return marker
    hpa = autoscaled(deployment, analysis.index.state.autoscalers)
    if hpa is not None and not settings.allow_autoscaled:
        return (
            f"HorizontalPodAutoscaler {hpa} scales it"
            " (spec.remediation.surge.allowAutoscaled is false)"
        )
    if deployment.paused:
        return "the Deployment is paused"
    if deployment.replicas is None:
        return "the Deployment has no spec.replicas"
    status = deployment.rollout
    if (
        deployment.observed_generation < deployment.generation
        or status is None
        or status.updated != deployment.replicas
        or status.replicas != deployment.replicas
        or len(_active_replica_sets(analysis, deployment)) > 1
    ):
        return "a rollout is in progress"
    if status.ready < deployment.replicas:
        return f"{status.ready} of {deployment.replicas} replicas Ready: not settled"
    return None


def _members(analysis: Analysis, workload: WorkloadRef) -> Members | None:
    found = [m for m in analysis.members if m.workload == workload]
    return max(found, key=lambda m: m.count) if found else None


class _Sim:
    """Copies of one workload's count tables and member positions, to add and remove pods."""

    def __init__(self, analysis: Analysis, members: Members) -> None:
        self.index = analysis.index
        self.members = members
        profile = members.profile
        self.hard = [i for i, c in enumerate(profile.constraints) if c.hard]
        copies: dict[int, CountTable] = {}
        originals = self.index.tables(profile)
        self.tables = tuple(copies.setdefault(id(t), t.copy()) for t in originals)
        self.by_node: dict[str, tuple[Pod, ...]] = dict(members.by_node)
        self.counted = [
            self.index.counts_pod(profile.constraints[i].selector, members.labels)
            for i in range(len(profile.constraints))
        ]
        self._distinct = list({id(t): (i, t) for i, t in enumerate(self.tables)}.values())

    def shift(self, node: str, pod: Pod | None, delta: int) -> None:
        for i, table in self._distinct:
            domain = table.space.node_domain.get(node)
            if self.counted[i] and domain is not None:
                table.add(domain, delta)
        if delta > 0 and pod is not None:
            self.by_node[node] = (*self.by_node.get(node, ()), pod)
        elif pod is not None:
            rest = tuple(p for p in self.by_node.get(node, ()) if p is not pod)
            if rest:
                self.by_node[node] = rest
            else:
                self.by_node.pop(node, None)

    def misplaced(self) -> int:
        m = Members(self.members.workload, self.members.profile, self.by_node)
        if not self.by_node:
            return 0
        total = 0
        for i in self.hard:
            bad = violating_nodes(self.index, m, self.tables, i)
            total += sum(len(self.by_node[n]) for n in bad)
        return total

    def crowding(self, node: str) -> int:
        out = 0
        for i in self.hard:
            c = self.members.profile.constraints[i]
            table = self.tables[i]
            domain = table.space.node_domain.get(node)
            if domain is not None:
                out += table.get(domain) - table.global_min(c.min_domains)
        return out

    def node_class(self, node: str, judge: OthersJudge) -> tuple[object, ...]:
        """What removing a pod from ``node`` changes: its domain in each of the workload's
        tables and in each other group's judged (nodes of one class are interchangeable)."""
        tables = [t for _, t in self._distinct] + [b.tables[b.group.index] for b in judge.groups]
        return (self.domains(node), *(t.space.node_domain.get(node) for t in tables))

    def domains(self, node: str) -> tuple[tuple[str, str], ...]:
        labels = self.index.nodes[node].labels if node in self.index.nodes else {}
        keys = dict.fromkeys(self.members.profile.constraints[i].key for i in self.hard)
        return tuple((k, labels[k]) for k in keys if k in labels)


def _land(
    sim: _Sim, ledger: CapacityLedger, template: Pod, *, worst: bool = False
) -> tuple[str, tuple[Domains, ...]] | None:
    """Where the scheduler would place one more pod, and the other domains it may choose.

    The nodes are those passing every modelled filter, the PodTopologySpread Filter exactly
    (spread.filter_node: count + 1 - globalMin <= maxSkew over the eligible domains,
    minDomains). Among them the likely choice is the least crowded domain (the PodTopologySpread
    score prefers fewer matching pods), then the node with the fewest of the workload's pods,
    then by name. With ``worst``, the most crowded domain the Filter admits (other scores may
    outweigh the spread score: at maxSkew above 1 several domains pass). The other domains
    returned are those the Filter admits that are more or less crowded than the chosen one: a
    domain as crowded is an equivalent choice for the spread (the same counts, relabelled)."""
    by_domain: dict[Domains, tuple[int, int, str]] = {}
    for node in sorted(sim.index.nodes.values(), key=lambda n: n.name):
        if not _fits(sim, ledger, template, node):
            continue
        key = (sim.crowding(node.name), len(sim.by_node.get(node.name, ())), node.name)
        domains = sim.domains(node.name)
        if domains not in by_domain or key < by_domain[domains]:
            by_domain[domains] = key
    if not by_domain:
        return None
    if worst:
        chosen = max(by_domain, key=lambda d: (by_domain[d][0], d))
    else:
        chosen = min(by_domain, key=lambda d: by_domain[d])
    crowding = by_domain[chosen][0]
    others = tuple(sorted(d for d in by_domain if by_domain[d][0] != crowding))
    return by_domain[chosen][2], others


def _fits(sim: _Sim, ledger: CapacityLedger, template: Pod, node: Node) -> bool:
    if not node.ready or static_reasons(template.spec, node):
        return False
    if ledger.fit_reason(node.name, template.spec.requests) is not None:
        return False
    return filter_node(sim.members.profile, sim.tables, node).ok


def _greedy(
    sim: _Sim, candidates: Sequence[Pod], k: int, pending: Sequence[Pod] = ()
) -> tuple[Victim, ...]:
    """Pending and unassigned pods first, then, one at a time, the pod whose removal leaves the
    fewest misplaced pods, from the most crowded domains (then the node with most of the
    workload's pods, the youngest). Leaves the chosen pods taken out of ``sim``."""
    chosen: list[Victim] = []
    for pod in pending[:k]:
        chosen.append(Victim(pod, (), VICTIM_COST + len(chosen)))
    taken = {id(v.pod) for v in chosen}
    left = [p for p in candidates if p.node_name is not None and id(p) not in taken]
    while len(chosen) < k and left:
        scored = []
        for position, pod in enumerate(left):
            node = pod.node_name
            assert node is not None
            crowding = sim.crowding(node)
            sim.shift(node, pod, -1)
            scored.append(
                (
                    tier(pod) is Tier.READY,  # not Ready first
                    sim.misplaced(),
                    -crowding,
                    -len(sim.by_node.get(node, ())),
                    -(pod.created or 0.0),
                    pod.name,
                    position,
                )
            )
            sim.shift(node, pod, +1)
        best = min(scored)
        pod = left.pop(best[-1])
        assert pod.node_name is not None
        chosen.append(Victim(pod, sim.domains(pod.node_name), VICTIM_COST + len(chosen)))
        sim.shift(pod.node_name, pod, -1)
    return tuple(chosen)


SEARCH_LIMIT: Final = 2000  # victim sets searched (by domain class) when the greedy one harms


@dataclass(frozen=True, slots=True)
class VictimChoice:
    victims: tuple[Victim, ...]
    harm: str | None = None  # why these victims would make another workload's group worse
    # with harm: the set harming no group with the fewest misplaced pods found (None: none)
    harmless: tuple[Victim, ...] | None = None


def _removed(victims: Iterable[Victim]) -> list[str]:
    return [v.pod.node_name for v in victims if v.pod.node_name is not None]


def _count_vectors(caps: Sequence[int], k: int, limit: int) -> list[tuple[int, ...]] | None:
    """Every way to take k items from classes holding ``caps`` items (how many from each);
    None when there are more than ``limit``."""
    tail = [sum(caps[i:]) for i in range(len(caps) + 1)]
    out: list[tuple[int, ...]] = []
    stack: list[tuple[int, int, tuple[int, ...]]] = [(0, k, ())]
    while stack:
        i, left, acc = stack.pop()
        if left == 0:
            out.append(acc + (0,) * (len(caps) - i))
            if len(out) > limit:
                return None
            continue
        if i == len(caps) or tail[i] < left:
            continue
        for n in range(min(caps[i], left) + 1):
            stack.append((i + 1, left - n, (*acc, n)))
    return out


def _search(
    sim: _Sim, pool: Sequence[Pod], fixed: tuple[Victim, ...], k: int, judge: OthersJudge
) -> tuple[tuple[int, int], tuple[Victim, ...]] | None:
    """The victim set harming no other group with the fewest Ready pods, then the fewest
    misplaced, then from the most crowded domains: ((Ready, misplaced), victims). Pods are
    equivalent when their nodes are in the same domains of every table involved, so the sets
    are searched by how many pods each such class gives. None when no set is harmless, or the
    sets are more than SEARCH_LIMIT."""
    classes: dict[tuple[object, ...], list[Pod]] = {}
    for pod in pool:
        node = pod.node_name
        assert node is not None
        classes.setdefault(sim.node_class(node, judge), []).append(pod)
    ranked = [
        sorted(
            pods,
            key=lambda p: (
                tier(p) is Tier.READY,
                -len(sim.by_node.get(p.node_name or "", ())),
                -(p.created or 0.0),
                p.name,
            ),
        )
        for _, pods in sorted(classes.items(), key=lambda kv: repr(kv[0]))
    ]
    vectors = _count_vectors([len(pods) for pods in ranked], k - len(fixed), SEARCH_LIMIT)
    if vectors is None:
        return None
    best: tuple[tuple[int, int, int], tuple[Pod, ...]] | None = None
    for vector in vectors:
        pods = tuple(p for n, cls in zip(vector, ranked, strict=True) for p in cls[:n])
        nodes = [p.node_name or "" for p in pods]
        if judge.harm([*_removed(fixed), *nodes]) is not None:
            continue
        crowding = sum(sim.crowding(n) for n in nodes)
        for node, pod in zip(nodes, pods, strict=True):
            sim.shift(node, pod, -1)
        misplaced = sim.misplaced()
        for node, pod in zip(nodes, pods, strict=True):
            sim.shift(node, pod, +1)
        ready = sum(tier(p) is Tier.READY for p in (*(v.pod for v in fixed), *pods))
        key = (ready, misplaced, -crowding)
        if best is None or key < best[0]:
            best = (key, pods)
    if best is None:
        return None
    victims = list(fixed)
    for pod in best[1]:
        victims.append(Victim(pod, sim.domains(pod.node_name or ""), VICTIM_COST + len(victims)))
    return best[0][:2], tuple(victims)


def choose_victims(
    sim: _Sim,
    candidates: Sequence[Pod],
    k: int,
    pending: Sequence[Pod] = (),
    judge: OthersJudge | None = None,
) -> VictimChoice:
    """The k pods to remove, and whether removing them makes another workload's group worse.

    Pending and unassigned pods go first (the controller takes them first anyway); then, one
    at a time, the pod whose removal leaves the fewest misplaced pods (``_greedy``). When that
    set would make a group of ``judge`` worse, the sets harming none are searched: one with as
    few Ready pods and misplaced pods as the greedy set is chosen instead. Otherwise the greedy
    set is returned with the harm, and the best harmless set found. ``sim`` is left with the
    chosen pods taken out."""
    chosen = _greedy(sim, candidates, k, pending)
    if judge is None or not judge.groups:
        return VictimChoice(chosen)
    harm = judge.harm(_removed(chosen))
    if harm is None:
        return VictimChoice(chosen)
    score = (sum(tier(v.pod) is Tier.READY for v in chosen), sim.misplaced())
    fixed = chosen[: min(len(pending), k)]
    for v in chosen[len(fixed) :]:
        assert v.pod.node_name is not None
        sim.shift(v.pod.node_name, v.pod, +1)
    taken = {id(v.pod) for v in fixed}
    pool = [p for p in candidates if p.node_name is not None and id(p) not in taken]
    found = _search(sim, pool, fixed, k, judge)
    better = found is not None and found[0] <= score
    out = found[1] if found is not None and better else chosen
    for v in out[len(fixed) :]:
        assert v.pod.node_name is not None
        sim.shift(v.pod.node_name, v.pod, -1)
    if better:
        return VictimChoice(out)
    return VictimChoice(chosen, harm, found[1] if found is not None else None)


def _synthetic(template: Pod, node: str, n: int) -> Pod:
    return replace(template, name=f"(new pod {n})", node_name=node, uid=None, created=None)


@dataclass(frozen=True, slots=True)
class Prediction:
    surge: int
    landings: tuple[Landing, ...]
    victims: tuple[Victim, ...]
    misplaced: int  # after the likely placement and the victims chosen from it
    worst: int  # after the worst admissible placement (= misplaced when determined)


def _simulate(
    analysis: Analysis, members: Members, k: int, *, worst: bool
) -> tuple[tuple[Landing, ...], tuple[Victim, ...], int]:
    """k new pods placed one at a time (likely or worst), then the victims chosen from there
    (as Marking chooses them from the real placement): (landings, victims, misplaced)."""
    state = analysis.index.state
    template = next(iter(members.by_node.values()))[0]
    sim = _Sim(analysis, members)
    ledger = CapacityLedger(state.nodes, state.pods)
    originals = [p for pods in members.by_node.values() for p in pods]
    landings = []
    for n in range(k):
        found = _land(sim, ledger, template, worst=worst)
        if found is None:
            break
        node, others = found
        ledger.reserve(node, template.spec.requests)
        sim.shift(node, _synthetic(template, node, n), +1)
        landings.append(Landing(node, sim.domains(node), others))
    judge = judge_others(
        analysis, members.workload, members.labels, added=[lnd.node for lnd in landings]
    )
    choice = choose_victims(sim, originals, len(landings), judge=judge)
    return tuple(landings), choice.victims, sim.misplaced()


def predict(
    analysis: Analysis, members: Members, original: int, max_surge: int, first: int
) -> Prediction | None:
    """The smallest k from ``first`` to ``max_surge`` whose likely and worst admissible
    placements both leave no misplaced pod; else the smallest whose likely placement leaves
    none (its worst case reported); else the best found at ``max_surge``. None when not even
    one new pod has a node to land on."""
    best: Prediction | None = None
    for k in range(max(1, first), max_surge + 1):
        landings, victims, misplaced = _simulate(analysis, members, k, worst=False)
        if not landings:
            return best
        worst = misplaced
        if any(lnd.others for lnd in landings):
            worst = max(misplaced, _simulate(analysis, members, k, worst=True)[2])
        found = Prediction(len(landings), landings, victims, misplaced, worst)
        if best is None or (found.misplaced, found.worst) < (best.misplaced, best.worst):
            best = found
        if (found.misplaced == 0 and found.worst == 0) or len(landings) < k:
            break
    return best


def operations(analysis: Analysis, policy: str, now: float) -> tuple[InFlight, ...]:
    """The surges of this policy in flight (their Deployments' annotations), each with its next
    action."""
    return tuple(
        InFlight(ref, dep, op, advance(op, dep, analysis, ref, now))
        for ref, dep in sorted(deployments(analysis).items())
        if (op := operation_of(dep)) is not None
        and op.policy == policy
        and op.phase is not Phase.ROLLED_BACK
    )


def plan_surges(
    analysis: Analysis,
    eviction_blocked: frozenset[WorkloadRef],
    policy: RebalancePolicy,
    now: float,
) -> SurgeReport:
    """Per violated Deployment: a surge plan or the reason there is none; and every operation
    in flight (of any policy: only this policy's are advanced), with its next action.
    ``eviction_blocked``: the violated workloads that eviction does not fix (the chooser's)."""
    settings = policy.remediation.surge
    deps = deployments(analysis)
    in_flight = operations(analysis, policy.name, now)
    flying = {f.workload for f in in_flight}
    if not settings.enabled:
        return SurgeReport(False, in_flight=in_flight)
    by_workload: dict[WorkloadRef, list[Group]] = {}
    for g in analysis.violations:
        by_workload.setdefault(g.workload, []).append(g)
    plans: list[SurgePlan] = []
    skips: list[SurgeSkip] = []
    for ref, groups in sorted(by_workload.items()):
        if ref.kind != "Deployment":
            continue
        if ref in flying:
            continue
        dep = deps.get(ref)
        if dep is None:
            skips.append(SurgeSkip(ref, "the Deployment is not in the cluster state"))
            continue
        other = operation_of(dep)
        if other is None and dep.markers.get(SURGE_STATE):
            # A surge's record damaged (edited by hand?): its replicas may still be raised, and
            # a new surge would take them for the original count.
            skips.append(
                SurgeSkip(
                    ref,
                    f"its {SURGE_STATE} annotation is unreadable: set spec.replicas as wanted"
                    " and remove the annotation",
                )
            )
            continue
        if other is not None and other.phase is Phase.ROLLED_BACK:
            retry = other.deadline + policy.eviction.cooldown
            if now < retry:
                skips.append(
                    SurgeSkip(
                        ref,
                        f"the last surge was rolled back ({other.reason}); not retried within "
                        "spec.eviction.cooldown",
                    )
                )
                continue
        elif other is not None:
            skips.append(SurgeSkip(ref, f"a surge of policy {other.policy} is in flight"))
            continue
        if settings.when is SurgeWhen.WHEN_EVICTION_BLOCKED and ref not in eviction_blocked:
            skips.append(SurgeSkip(ref, "eviction fixes it (surge.when is WhenEvictionBlocked)"))
            continue
        why = guard(analysis, dep, policy)
        if why is not None:
            skips.append(SurgeSkip(ref, why))
            continue
        hard = [g for g in groups if g.constraint.hard]
        if not hard:
            skips.append(SurgeSkip(ref, "only soft constraints are violated"))
            continue
        moves = [g.minimum_moves for g in hard]
        if any(m is None for m in moves):
            skips.append(SurgeSkip(ref, "moves cannot fix it (too few eligible domains)"))
            continue
        needed = max(m for m in moves if m is not None)
        if needed > settings.max_surge:
            skips.append(
                SurgeSkip(
                    ref, f"needs {needed} extra replicas, above maxSurge {settings.max_surge}"
                )
            )
            continue
        members = _members(analysis, ref)
        assert dep.replicas is not None
        found = (
            predict(analysis, members, dep.replicas, settings.max_surge, needed)
            if members is not None
            else None
        )
        if found is None:
            skips.append(SurgeSkip(ref, "no node would take a new pod"))
            continue
        k, landings, victims, misplaced = (
            found.surge,
            found.landings,
            found.victims,
            found.misplaced,
        )
        if misplaced:
            skips.append(
                SurgeSkip(
                    ref,
                    f"a surge of up to {k} is predicted to leave {misplaced} misplaced pod(s)",
                )
            )
            continue
        assert members is not None
        harm = harm_to_others(
            analysis,
            ref,
            members.labels,
            (lnd.node for lnd in landings),
            (v.pod.node_name for v in victims if v.pod.node_name is not None),
        )
        if harm is not None:
            skips.append(SurgeSkip(ref, harm))
            continue
        plans.append(
            SurgePlan(ref, dep, dep.replicas, k, landings, victims, misplaced, found.worst)
        )
    return SurgeReport(True, tuple(plans), tuple(skips), in_flight)


def start(plan: SurgePlan, policy: RebalancePolicy, now: float) -> Operation:
    """The operation a ScaleUp writes."""
    return Operation(
        policy=policy.name,
        original=plan.original,
        target=plan.original + plan.surge,
        started=now,
        deadline=now + policy.remediation.surge.ready_timeout,
    )


# --------------------------------------------------------------------------------------------
# The state machine


def _pods_of(analysis: Analysis, workload: WorkloadRef) -> list[Pod]:
    """The workload's active pods (not terminating, not finished), bound or not."""
    index = analysis.index
    return [
        p
        for p in index.state.pods
        if p.namespace == workload.namespace
        and p.owner is not None
        and pod_counts(p)
        and workload_of(p, index) == workload
    ]


def stand_down(op: Operation, deployment: Workload) -> Action | None:
    """Stand down when spec.replicas is not the value respread set (someone else changed it)."""
    expected = op.target if op.phase in (Phase.SURGING, Phase.MARKING) else op.original
    if deployment.replicas != expected:
        return Action(
            ActionKind.STAND_DOWN,
            f"spec.replicas is {deployment.replicas}, not the {expected} respread set: "
            "changed by someone else",
        )
    return None


def drained(op: Operation, deployment: Workload, pods: Sequence[Pod]) -> Action:
    """Draining or rolling back: done once the Deployment is back at its original count."""
    status = deployment.rollout
    if (
        deployment.observed_generation >= deployment.generation
        and status is not None
        and status.replicas == op.original
        and len(pods) == op.original
    ):
        return Action(ActionKind.DONE, f"back to {op.original} replicas")
    return Action(ActionKind.WAIT, f"{len(pods)} pods, scaling back to {op.original}")


def advance(
    op: Operation, deployment: Workload, analysis: Analysis, workload: WorkloadRef, now: float
) -> Action:
    """The next step of an operation, from the Deployment and its pods as observed now."""
    pods = _pods_of(analysis, workload)
    ready = [p for p in pods if p.node_name is not None and tier(p) is Tier.READY]
    status = deployment.rollout
    settled = deployment.observed_generation >= deployment.generation
    down = stand_down(op, deployment)
    if down is not None:
        return down
    if op.phase in (Phase.DRAINING, Phase.ROLLING_BACK):
        return drained(op, deployment, pods)
    k = op.target - op.original
    if op.phase is Phase.MARKING:
        by_uid = {p.uid: p for p in pods}
        if all(uid in by_uid for uid in op.victims) and len(op.victims) == k:
            sim = _sim_for(analysis, workload)
            victims = tuple(
                Victim(
                    by_uid[uid],
                    sim.domains(by_uid[uid].node_name or "") if sim is not None else (),
                    VICTIM_COST + rank,
                )
                for rank, uid in enumerate(op.victims)
            )
            return Action(ActionKind.SCALE_BACK, "victims recorded; scaling back", victims)
    all_ready = (
        settled
        and status is not None
        and status.ready >= op.target
        and len(pods) == op.target
        and len(ready) == op.target
    )
    if all_ready:
        choice = _victims(analysis, workload, pods, k, rollback=False)
        if choice.harm is None:
            return Action(
                ActionKind.MARK_AND_SCALE_BACK,
                f"all {op.target} replicas Ready; removing {k} from the crowded domains",
                choice.victims,
            )
        # The plan judged the predicted placement harmless; the real one is not. A surge must
        # not make another workload's spread worse, so it ends as a rollback (kept as
        # RolledBack: not retried within the cooldown), with the best harmless victims.
        return Action(
            ActionKind.ROLLBACK,
            f"all {op.target} replicas Ready, but removing the {k} that fix the skew best "
            f"would make another workload's spread worse ({choice.harm})",
            choice.harmless or newest_first(pods, k),
        )
    if now >= op.deadline:
        choice = _victims(analysis, workload, pods, k, rollback=True)
        reason = f"{len(ready)} of {op.target} replicas Ready at the deadline (readyTimeout)"
        if choice.harm is None:
            return Action(ActionKind.ROLLBACK, reason, choice.victims)
        return Action(
            ActionKind.ROLLBACK,
            f"{reason}; the newest pods go, as the crowded ones would make another "
            f"workload's spread worse ({choice.harm})"
            if choice.harmless is None
            else reason,
            choice.harmless or newest_first(pods, k),
        )
    return Action(ActionKind.WAIT, f"{len(ready)} of {op.target} replicas Ready")


def newest_first(pods: Iterable[Pod], k: int) -> tuple[Victim, ...]:
    """The k pods a rollback removes when the spread is not judged: the lowest tiers first
    (unassigned, Pending, not Ready: the controller takes them first anyway), then the newest
    (the surge's own pods)."""
    ranked = sorted(pods, key=lambda p: (tier(p), -(p.created or 0.0), p.name))
    return tuple(Victim(p, (), VICTIM_COST + i) for i, p in enumerate(ranked[: max(k, 0)]))


def _sim_for(analysis: Analysis, workload: WorkloadRef) -> _Sim | None:
    members = _members(analysis, workload)
    return _Sim(analysis, members) if members is not None else None


def _arrived(pods: Sequence[Pod], k: int) -> list[str]:
    """The nodes of the surge's new pods that are bound: the k newest pods of the Deployment
    (a creation timestamp is the API server's, so no clock of ours is compared with it)."""
    newest = sorted(pods, key=lambda p: (-(p.created or 0.0), p.name))[: max(k, 0)]
    return [p.node_name for p in newest if p.node_name is not None]


def _victims(
    analysis: Analysis, workload: WorkloadRef, pods: Sequence[Pod], k: int, *, rollback: bool
) -> VictimChoice:
    pending = [p for p in pods if tier(p) < Tier.NOT_READY] if rollback else []
    sim = _sim_for(analysis, workload)
    if sim is None:  # not analysed (its namespace no longer selected): the surge's own pods
        return VictimChoice(newest_first(pods, k))
    bound = [p for node in sim.by_node.values() for p in node]
    judge = judge_others(analysis, workload, sim.members.labels, arrived=_arrived(pods, k))
    return choose_victims(sim, bound, k, pending, judge)


def next_operation(
    current: Operation, action: Action, *, keep_record: bool = True
) -> Operation | None:
    """The annotation an action writes (None: removed). A rollback, once over, stays as
    RolledBack: the Deployment is not surged again within spec.eviction.cooldown (unless
    ``keep_record`` is False: an orphan's policy is gone, no cooldown is left to keep)."""
    if action.kind is ActionKind.DONE and current.phase is Phase.ROLLING_BACK and keep_record:
        return replace(current, phase=Phase.ROLLED_BACK, victims=())
    if action.kind in (ActionKind.DONE, ActionKind.STAND_DOWN):
        return None
    if action.kind is ActionKind.MARK_AND_SCALE_BACK:
        return replace(
            current, phase=Phase.MARKING, victims=tuple(v.pod.uid or "" for v in action.victims)
        )
    if action.kind is ActionKind.ROLLBACK:
        return replace(
            current,
            phase=Phase.ROLLING_BACK,
            victims=tuple(v.pod.uid or "" for v in action.victims),
            reason=action.reason,
        )
    return current


def costs_to_write(victims: Sequence[Victim]) -> list[tuple[Pod, int | None, int]]:
    """(pod, its cost now, the cost to write) for each victim whose cost differs."""
    return [(v.pod, current_cost(v.pod), v.cost) for v in victims if current_cost(v.pod) != v.cost]

"""Pod-deletion-cost ordering: the scale-in order that keeps a workload's spread constraints.

The ReplicaSet controller picks the pods a scale-in deletes by its own ranking, never by
topology: unassigned pods first, then Pending, Unknown, then Running pods that are not Ready,
then the lowest ``controller.kubernetes.io/pod-deletion-cost``, then the pods doubled up on a
node, then the most recently Ready, then the youngest. Only the cost is ours to set. So, per
ReplicaSet of a Deployment (or a ReplicaSet of its own) with hard spread constraints:

1. Its active pods are split into the controller's *tiers* (the ranking before the cost). The
   tiers are removed in that order whatever the costs; within a tier the cost decides.
2. Removals are simulated one at a time on working copies of the count tables the rest of
   respread uses (spread.py), and each state is judged exactly as the analysis judges a group
   (analysis.violating_nodes): every hard constraint of the workload, and every other
   workload's hard constraint whose selector counts these pods and that was balanced before.
3. A depth-first search (pods on one node in one tier are interchangeable, so it branches on
   nodes, prefers the most crowded domains, and remembers dead ends) finds an order that keeps
   every state within maxSkew whenever one exists, within a bounded number of steps. Past the
   bound, or when no such order exists (the workload is already violated, or other workloads'
   pods make it impossible), each step takes the removal that leaves the fewest misplaced pods.
4. The first pod to remove gets the lowest cost. Costs are written only when the order they
   give today differs from (and is worse than) the one computed: a current order that is as
   good is kept, so a scale-in does not make every remaining pod's cost change. A current
   order that keeps maxSkew in every state is as good as any, so it is kept without a search.
5. The operator passes a CostMemo (cost_memo.py): a ReplicaSet whose inputs are all equal to
   the last scan's gets the order found then, without a simulation.

Pods whose cost annotation another field manager owns (metadata.managedFields) are conflicts:
their ReplicaSet is left alone, unless the policy takes over. A ReplicaSet that another
RebalancePolicy writing costs owns (cost_owner.py) is an overlap: left alone, and reported.
StatefulSets, DaemonSets, Jobs, bare pods and other controllers are never given costs; they are
listed with the reason.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import pairwise
from typing import Final

from respread.analysis.groups import Analysis, Members, WorkloadRef, workload_of
from respread.analysis.whatif import GroupCheck, WorkingCounts
from respread.core.annotations import DELETION_COST, FIELD_MANAGER
from respread.core.limits import few_named
from respread.core.model import Labels, Node, Op, Pod, PodName
from respread.inputs.policy import DeletionCostSettings
from respread.remedies.cost.memo import CostMemo, Remembered, ScanKeys
from respread.remedies.cost.owner import Ownership
from respread.scheduling.controller import INT32_MAX, INT32_MIN, Tier, current_cost, tier
from respread.scheduling.spread import pod_counts

ORDERED_KINDS: Final = frozenset({"Deployment", "ReplicaSet"})
SEARCH_STEPS: Final = 2000  # removals the search may try per ReplicaSet, beyond one per pod

EXCLUSION_REASONS: Final[Mapping[str, str]] = {
    "StatefulSet": "a StatefulSet removes its highest ordinal first; pod-deletion-cost has no say",
    "DaemonSet": "a DaemonSet runs one pod per node and is never scaled in",
    "Pod": "a bare pod: no controller scales it in",
    "Job": "a Job's pods finish; it is not scaled in by pod-deletion-cost",
}


def foreign_managers(pod: Pod) -> tuple[str, ...]:
    """Field managers other than respread's that own the pod's cost annotation."""
    if DELETION_COST not in pod.annotations:
        return ()
    return tuple(m for m in pod.deletion_cost_managers if m != FIELD_MANAGER)


class OrderState(StrEnum):
    UNCHANGED = "Unchanged"  # the current costs already give the order: nothing to write
    CHANGES = "Changes"  # some pods need a new cost
    CONFLICT = "Conflict"  # another field manager owns a cost: left alone
    OVERLAP = "Overlap"  # another RebalancePolicy orders these pods (cost_owner.py): left alone


@dataclass(frozen=True, slots=True)
class PodCost:
    pod: Pod
    rank: int  # 0: the first pod a scale-in removes
    tier: Tier
    desired: int
    current: int | None
    within_max_skew: bool  # every hard constraint holds once this pod (and those before) are gone
    domains: tuple[tuple[str, str], ...]  # the pod's value of each of the workload's hard keys
    foreign: tuple[str, ...] = ()  # other managers owning its cost annotation

    @property
    def changed(self) -> bool:
        return self.desired != self.current


@dataclass(frozen=True, slots=True)
class ReplicaSetOrder:
    workload: WorkloadRef
    replica_set: str
    pods: tuple[PodCost, ...]  # in removal order
    safe_steps: int  # removals, from the first, that keep every hard constraint within maxSkew
    state: OrderState
    message: str
    owner: str | None = None  # Overlap: the RebalancePolicy that orders these pods

    @property
    def changed(self) -> tuple[PodCost, ...]:
        return tuple(p for p in self.pods if p.changed)

    @property
    def conflicts(self) -> tuple[PodCost, ...]:
        return tuple(p for p in self.pods if p.foreign)


@dataclass(frozen=True, slots=True)
class Excluded:
    workload: WorkloadRef
    pods: int
    reason: str


@dataclass(frozen=True, slots=True)
class CostPlan:
    orders: tuple[ReplicaSetOrder, ...]
    excluded: tuple[Excluded, ...]
    patches: tuple[PodCost, ...]  # the costs to write this scan, in order (bounded)
    deferred_patches: int  # changed costs left for later scans by maxPatchesPerScan

    @property
    def overlapping(self) -> tuple[ReplicaSetOrder, ...]:
        """The ReplicaSets another RebalancePolicy orders: never written by this one."""
        return tuple(o for o in self.orders if o.state is OrderState.OVERLAP)


# --------------------------------------------------------------------------------------------
# The simulation


@dataclass(frozen=True, slots=True)
class _Counters:
    """A namespace's groups, as positions (member, constraint), that another workload's pods
    can be counted in: the balanced hard constraints with a selector. Each is filed under the
    (key, value) pairs its first In requirement accepts (a label set without one of them cannot
    match it), or, without an In requirement, among those asked of every label set."""

    by_label: Mapping[tuple[str, str], tuple[tuple[int, int], ...]]
    unfiled: tuple[tuple[int, int], ...]
    by_workload: Mapping[WorkloadRef, tuple[int, ...]]  # each workload's members, by position

    @classmethod
    def of(cls, members: Sequence[Members], balanced: frozenset[tuple[Members, int]]) -> _Counters:
        by_label: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
        unfiled: list[tuple[int, int]] = []
        by_workload: dict[WorkloadRef, list[int]] = defaultdict(list)
        for j, m in enumerate(members):
            by_workload[m.workload].append(j)
            for i, c in enumerate(m.profile.constraints):
                if not c.hard or c.selector is None or (m, i) not in balanced:
                    continue
                needed = next((r for r in c.selector.requirements if r.op is Op.IN), None)
                if needed is None:
                    unfiled.append((j, i))
                else:
                    for value in dict.fromkeys(needed.values):
                        by_label[(needed.key, value)].append((j, i))
        return cls(
            {k: tuple(v) for k, v in by_label.items()},
            tuple(unfiled),
            {w: tuple(js) for w, js in by_workload.items()},
        )

    def asked(self, labels: Labels) -> set[tuple[int, int]]:
        """The groups whose selector may count pods with these labels."""
        found = set(self.unfiled)
        by_label = self.by_label
        for item in labels.items():
            filed = by_label.get(item)
            if filed is not None:
                found.update(filed)
        return found


@dataclass(frozen=True, slots=True)
class _Context:
    """What every ReplicaSet's simulation reads: the analysis, by namespace, and the scan's
    working counts (each ReplicaSet's removals are undone before the next one's)."""

    analysis: Analysis
    counts: WorkingCounts
    members_by_namespace: Mapping[str, tuple[Members, ...]]
    balanced: frozenset[tuple[Members, int]]  # (members, constraint) of balanced groups
    counters: Mapping[str, _Counters]  # by namespace

    @classmethod
    def of(cls, analysis: Analysis) -> _Context:
        by_namespace: dict[str, list[Members]] = defaultdict(list)
        for m in analysis.members:
            by_namespace[m.profile.namespace].append(m)
        balanced = frozenset((g.members, g.index) for g in analysis.groups if not g.violating)
        return cls(
            analysis,
            WorkingCounts(analysis),
            {ns: tuple(ms) for ns, ms in by_namespace.items()},
            balanced,
            {ns: _Counters.of(ms, balanced) for ns, ms in by_namespace.items()},
        )


class _ScaleIn:
    """One ReplicaSet's scale-in on the scan's working counts (whatif.py): its pods removed one
    at a time, each removal undone by ``restore``, and the groups every state is judged by
    (analysis.violating_nodes' judgement, class by class: whatif.GroupCheck). The groups are
    every hard constraint of the workload, and every other workload's hard constraint whose
    selector counts these pods and that was balanced before."""

    def __init__(self, context: _Context, workload: WorkloadRef, pods: Sequence[Pod]) -> None:
        self.counts = counts = context.counts
        self.index = context.analysis.index
        names = {(p.namespace, p.name) for p in pods}
        by_labels: dict[int, tuple[Labels, list[Pod]]] = {}
        for p in pods:
            if p.node_name is not None:
                by_labels.setdefault(id(p.labels), (p.labels, []))[1].append(p)
        self.checks: list[GroupCheck] = []
        self.own: list[tuple[Members, int]] = []  # the workload's groups
        self.holder: dict[PodName, Members] = {}  # the members holding each pod
        self._marks: list[int] = []
        members = context.members_by_namespace.get(workload.namespace, ())
        counters = context.counters.get(workload.namespace)
        counted = self._counted(members, counters, by_labels) if counters else set()
        ours = counters.by_workload.get(workload, ()) if counters else ()
        # the members in their order, as every member was visited: the others add nothing
        for j in sorted({*ours, *(j for j, _ in counted)}):
            m = members[j]
            own = m.workload == workload and any(
                (p.namespace, p.name) in names for on_node in m.by_node.values() for p in on_node
            )
            for i, c in enumerate(m.profile.constraints):
                if not c.hard or not (own or (j, i) in counted):
                    continue
                self.checks.append(counts.check(m, i))
                if own:
                    self.own.append((m, i))
            if own:
                self.holder.update(
                    ((p.namespace, p.name), m) for ps in m.by_node.values() for p in ps
                )
        # a node -> how far above the global minimum its domains are, over the own constraints
        self.crowded = counts.crowding(self.own)

    def _counted(
        self,
        members: Sequence[Members],
        counters: _Counters,
        by_labels: Mapping[int, tuple[Labels, list[Pod]]],
    ) -> set[tuple[int, int]]:
        """The (member, constraint) of other workloads' groups that were balanced and whose
        selector counts these pods on a node eligible to it (index.counts_pod, asked once per
        label set and group: the pods are in the namespace and live)."""
        counted: set[tuple[int, int]] = set()
        for labels, same in by_labels.values():
            for j, i in counters.asked(labels) - counted:
                m = members[j]
                selector = m.profile.constraints[i].selector
                if not self.index.counts_pod(selector, labels, remember=False):
                    continue
                eligible = self.index.space(m.profile, i).node_domain
                if any(p.node_name in eligible for p in same):
                    counted.add((j, i))
        return counted

    def remove(self, pod: Pod) -> None:
        """Take ``pod`` out (an unbound pod is counted nowhere: nothing changes)."""
        counts = self.counts
        self._marks.append(counts.mark())
        if pod.node_name is not None:
            counts.remove_pod(pod, pod.node_name, self.holder.get((pod.namespace, pod.name)))

    def restore(self, pod: Pod) -> None:
        """Put back ``pod``, the last pod removed."""
        self.counts.undo(self._marks.pop())

    def misplaced(self) -> int:
        """Member pods of the checked groups that sit where the scheduler would not place them."""
        total = 0
        for check in self.checks:
            value = check.value  # GroupCheck.misplaced's, inlined where it is kept
            total += check.misplaced() if value is None else value
        return total


# --------------------------------------------------------------------------------------------
# The search


class _Buckets:
    """The pods still to remove, by (tier, node): pods of one bucket are interchangeable.

    A bucket gives its pods in a fixed order, so the pods left in each bucket (``state``) say
    which pods are gone, and so what the simulation judges: ``known`` keeps the misplaced
    pods of each state judged, for the search and the least harmful step to share."""

    def __init__(self, pods: Sequence[Pod]) -> None:
        groups: dict[tuple[Tier, str], list[Pod]] = defaultdict(list)
        for p in pods:
            groups[(tier(p), p.node_name or "")].append(p)
        # within a bucket the controller's own preference: youngest first, then by name
        self.keys = sorted(groups)
        self.pods = [
            sorted(groups[k], key=lambda p: (-(p.created or 0.0), p.name)) for k in self.keys
        ]
        self.left = [len(b) for b in self.pods]
        self.remaining = sum(self.left)
        self.known: dict[tuple[int, ...], int] = {}
        self.per_node: dict[str, int] = defaultdict(int)
        for (_, node), n in zip(self.keys, self.left, strict=True):
            self.per_node[node] += n

    def state(self) -> tuple[int, ...]:
        return tuple(self.left)

    def open(self) -> list[int]:
        """The buckets the next removal may come from: those of the lowest tier left."""
        # the keys are sorted by tier: the lowest tier left is the first non-empty bucket's,
        # and its buckets follow it up to the next tier
        left, keys = self.left, self.keys
        found: list[int] = []
        lowest = None
        for b, n in enumerate(left):
            if lowest is None:
                if n:
                    lowest = keys[b][0]
                    found.append(b)
            elif keys[b][0] != lowest:
                break
            elif n:
                found.append(b)
        return found

    def take(self, b: int) -> Pod:
        pod = self.pods[b][len(self.pods[b]) - self.left[b]]
        self.left[b] -= 1
        self.remaining -= 1
        self.per_node[self.keys[b][1]] -= 1
        return pod

    def give_back(self, b: int) -> Pod:
        self.left[b] += 1
        self.remaining += 1
        self.per_node[self.keys[b][1]] += 1
        return self.pods[b][len(self.pods[b]) - self.left[b]]


def _preferences(sim: _ScaleIn, buckets: _Buckets) -> list[tuple[tuple[int, int, str], int]]:
    """The open buckets, best first, each with its sort key: most crowded domains, most pods
    on the node. The crowding of every open bucket's node is read at once. An open bucket's
    node is its own (they share the lowest tier), so no two keys tie."""
    found = buckets.open()
    nodes = [buckets.keys[b][1] for b in found]
    per_node = buckets.per_node
    return sorted(
        ((-crowding if node else 0, -per_node[node], node), b)
        for b, node, crowding in zip(found, nodes, sim.crowded.each(nodes), strict=True)
    )


def _candidates(sim: _ScaleIn, buckets: _Buckets) -> list[int]:
    """The open buckets, best first (their safety is checked when they are tried)."""
    return [b for _, b in _preferences(sim, buckets)]


def _removed_if_safe(sim: _ScaleIn, buckets: _Buckets, pod: Pod) -> bool:
    """Remove ``pod``, just taken from its bucket, when the state it leaves keeps every check
    within maxSkew (judged once per state), and say whether it did."""
    state = buckets.state()
    misplaced = buckets.known.get(state)
    if misplaced is None:
        sim.remove(pod)
        misplaced = buckets.known[state] = sim.misplaced()
        if misplaced:
            sim.restore(pod)
    elif not misplaced:
        sim.remove(pod)
    return not misplaced


def _misplaced_after(sim: _ScaleIn, buckets: _Buckets, pod: Pod) -> int:
    """The misplaced pods once ``pod``, just taken from its bucket, is gone; the simulation is
    left as it was."""
    state = buckets.state()
    misplaced = buckets.known.get(state)
    if misplaced is None:
        sim.remove(pod)
        misplaced = buckets.known[state] = sim.misplaced()
        sim.restore(pod)
    return misplaced


def _search(sim: _ScaleIn, buckets: _Buckets, budget: int) -> tuple[list[int], int, list[Pod]]:
    """The longest run of removals found that keeps every check within maxSkew (complete
    when one exists and the budget allows), the removals tried, and the run's pods when the
    search ends on it: then they are left removed (taken from the buckets and the simulation),
    as replaying the run would leave them; otherwise (no pods) the simulation is left as it was
    found."""
    best: list[int] = []
    path: list[int] = []
    taken: list[Pod] = []  # the pods of ``path``
    dead: set[tuple[int, ...]] = set()
    stack = [_candidates(sim, buckets)]
    steps = 0
    while stack and steps < budget:
        moves = stack[-1]
        if not moves:
            dead.add(buckets.state())
            stack.pop()
            if path:
                sim.restore(buckets.give_back(path.pop()))
                taken.pop()
            continue
        b = moves.pop(0)
        pod = buckets.take(b)
        steps += 1
        if buckets.state() in dead or not _removed_if_safe(sim, buckets, pod):
            buckets.give_back(b)
            continue
        path.append(b)
        taken.append(pod)
        if len(path) > len(best):
            best = list(path)
            if not buckets.remaining:
                break
        stack.append(_candidates(sim, buckets))
    if path and path == best:
        return best, steps, taken
    while path:
        sim.restore(buckets.give_back(path.pop()))
    return best, steps, []


def _least_harm(sim: _ScaleIn, buckets: _Buckets) -> int:
    """The open bucket whose next pod leaves the fewest misplaced pods (then the preference)."""
    scored = []
    for preference, b in _preferences(sim, buckets):
        pod = buckets.take(b)
        scored.append((_misplaced_after(sim, buckets, pod), preference, b))
        buckets.give_back(b)
    return min(scored)[2]


def removal_order(sim: _ScaleIn, pods: Sequence[Pod]) -> list[tuple[Pod, bool]]:
    """Every pod, in the order to remove them, each with whether the state after it is within
    maxSkew. The simulation is left with every pod removed."""
    buckets = _Buckets(pods)
    budget = SEARCH_STEPS + 2 * len(pods)
    out: list[tuple[Pod, bool]] = []
    while buckets.remaining:
        # once the budget is spent, the least harmful removal is also the greedy safe one
        run, tried, kept = _search(sim, buckets, budget) if budget > 0 else ([], 0, [])
        budget -= tried
        out.extend((pod, True) for pod in kept)  # the run, left removed by the search
        for b in run[len(kept) :]:
            pod = buckets.take(b)
            sim.remove(pod)
            out.append((pod, True))
        if not buckets.remaining:
            break
        b = _least_harm(sim, buckets)
        pod = buckets.take(b)
        sim.remove(pod)
        out.append((pod, sim.misplaced() == 0))
    return out


def replay(sim: _ScaleIn, order: Sequence[Pod]) -> list[bool]:
    """Whether each state along ``order`` is within maxSkew; the simulation is restored."""
    out = []
    for pod in order:
        sim.remove(pod)
        out.append(sim.misplaced() == 0)
    for pod in reversed(order):
        sim.restore(pod)
    return out


def _quality(safe: Sequence[bool]) -> tuple[int, int]:
    """Better orders keep maxSkew for longer from the start, then in more states."""
    prefix = next((i for i, ok in enumerate(safe) if not ok), len(safe))
    return prefix, sum(safe)


def _ranked_by_cost(pods: Sequence[Pod]) -> list[Pod] | None:
    """The order the controller takes today, when the current costs alone decide it (every
    pod has a cost, distinct within its tier); else None."""
    costs = [(tier(p), current_cost(p), p) for p in pods]
    if any(c is None for _, c, _ in costs):
        return None
    keyed = sorted(((t, c, p) for t, c, p in costs), key=lambda x: (x[0], x[1] or 0))
    for (t1, c1, _), (t2, c2, _) in pairwise(keyed):
        if t1 == t2 and c1 == c2:
            return None
    return [p for _, _, p in keyed]


# --------------------------------------------------------------------------------------------
# Per ReplicaSet, and for the whole cluster


def _own_keys(sim: _ScaleIn) -> tuple[str, ...]:
    """The topology keys of the workload's hard constraints, each once, in order."""
    return tuple(dict.fromkeys(m.profile.constraints[i].key for m, i in sim.own))


def _domains(
    keys: Sequence[str], nodes: Mapping[str, Node], pod: Pod
) -> tuple[tuple[str, str], ...]:
    node = None if pod.node_name is None else nodes.get(pod.node_name)
    if node is None:
        return ()
    return tuple((key, node.labels[key]) for key in keys if key in node.labels)


class _Domains:
    """Each pod's value of its workload's hard keys (``_domains``), one tuple per keys and
    node, shared by every pod there (a scan orders most of the cluster's pods)."""

    __slots__ = ("_found", "_nodes")

    def __init__(self, nodes: Mapping[str, Node]) -> None:
        self._nodes = nodes
        self._found: dict[tuple[tuple[str, ...], str | None], tuple[tuple[str, str], ...]] = {}

    def of(self, keys: tuple[str, ...], pod: Pod) -> tuple[tuple[str, str], ...]:
        at = (keys, pod.node_name)
        found = self._found.get(at)
        if found is None:
            found = self._found[at] = _domains(keys, self._nodes, pod)
        return found


def _kept_or_searched(sim: _ScaleIn, pods: Sequence[Pod]) -> tuple[list[Pod], list[bool], bool]:
    """The order to give (the current costs' when they are as good as the search's), whether
    each state along it is within maxSkew, and whether it is the current costs' order.

    A current order whose every state is within maxSkew has the best quality there is, so it
    is kept whatever the search would find: the search runs only when it is not."""
    today = _ranked_by_cost(pods)
    safe_today = replay(sim, today) if today is not None else None
    if today is not None and safe_today is not None and all(safe_today):
        return today, safe_today, True
    computed = removal_order(sim, pods)
    for pod, _ in reversed(computed):
        sim.restore(pod)
    order = [p for p, _ in computed]
    safe = [ok for _, ok in computed]
    if today is not None and safe_today is not None and _quality(safe_today) >= _quality(safe):
        return today, safe_today, True
    return order, safe, False


def order_replica_set(
    context: _Context,
    *,
    workload: WorkloadRef,
    replica_set: str,
    pods: Sequence[Pod],
    settings: DeletionCostSettings,
) -> ReplicaSetOrder:
    """The scale-in order of one ReplicaSet's active pods and the costs that give it."""
    found = _ordered(context, workload, pods)
    domains = _Domains(context.analysis.index.nodes)
    return _assembled(workload, replica_set, pods, found, domains=domains, settings=settings)


def _ordered(context: _Context, workload: WorkloadRef, pods: Sequence[Pod]) -> Remembered:
    """The order simulated, by positions in ``pods``, in the form the memo keeps."""
    sim = _ScaleIn(context, workload, pods)
    violated = sim.misplaced() > 0
    order, safe, keep = _kept_or_searched(sim, pods)
    context.counts.forget()  # every removal undone: the next ReplicaSet learns its own
    position = {(p.namespace, p.name): i for i, p in enumerate(pods)}
    return Remembered(
        tuple(position[(p.namespace, p.name)] for p in order),
        tuple(safe),
        keep,
        _own_keys(sim),
        violated,
    )


def _remembered(
    context: _Context,
    keys: ScanKeys,
    workload: WorkloadRef,
    pods: Sequence[Pod],
    replica_set: str,
) -> Remembered:
    """The order an earlier scan found for exactly these inputs, else the simulated one."""
    found = keys.recall(workload, replica_set, pods)
    if found is None:
        found = _ordered(context, workload, pods)
        keys.store(workload, replica_set, pods, found)
    return found


def _assembled(
    workload: WorkloadRef,
    replica_set: str,
    pods: Sequence[Pod],
    found: Remembered,
    *,
    domains: _Domains,
    settings: DeletionCostSettings,
    owner: str | None = None,
) -> ReplicaSetOrder:
    """The order's costs, what changes and the message, for the pods as they are now;
    ``owner``: another RebalancePolicy that orders these pods (then nothing is written)."""
    keep, safe = found.kept, found.safe
    entries = []
    for rank, (position, ok) in enumerate(zip(found.order, safe, strict=True)):
        pod = pods[position]
        now = current_cost(pod)
        entries.append(
            PodCost(
                pod=pod,
                rank=rank,
                tier=tier(pod),
                desired=now if keep and now is not None else rank + 1,
                current=now,
                within_max_skew=ok,
                domains=domains.of(found.keys, pod),
                foreign=foreign_managers(pod),
            )
        )
    prefix, _ = _quality(safe)
    conflicts = [e for e in entries if e.foreign]
    changed = [e for e in entries if e.changed]
    if owner is not None:
        state = OrderState.OVERLAP
    elif conflicts and changed and not settings.take_over:
        state = OrderState.CONFLICT
    elif changed:
        state = OrderState.CHANGES
    else:
        state = OrderState.UNCHANGED
    return ReplicaSetOrder(
        workload=workload,
        replica_set=replica_set,
        pods=tuple(entries),
        safe_steps=prefix,
        state=state,
        message=_message(safe, state, conflicts, kept=keep, violated=found.violated, owner=owner),
        owner=owner,
    )


def _assembled_again(
    memo: CostMemo | None,
    workload: WorkloadRef,
    key: tuple[str, str],
    pods: Sequence[Pod],
    found: Remembered,
    *,
    domains: _Domains,
    settings: DeletionCostSettings,
    owner: str | None,
) -> ReplicaSetOrder:
    """`_assembled`, or the order the last scan assembled from the same remembered order, pods
    and other inputs. The nodes' labels it reads (the domains) are part of what a remembered
    order is recalled by (memo.ScanKeys), so the same Remembered means the same labels."""
    if memo is None:
        return _assembled(
            workload, key[1], pods, found, domains=domains, settings=settings, owner=owner
        )
    inputs = (workload, settings.take_over, owner)
    made = memo.assembled(key, pods, found, inputs)
    if isinstance(made, ReplicaSetOrder):
        return made
    order = _assembled(
        workload, key[1], pods, found, domains=domains, settings=settings, owner=owner
    )
    memo.keep_assembled(key, pods, found, inputs, order)
    return order


def _message(
    safe: Sequence[bool],
    state: OrderState,
    conflicts: Sequence[PodCost],
    *,
    kept: bool,
    violated: bool,
    owner: str | None = None,
) -> str:
    total = len(safe)
    prefix, _ = _quality(safe)
    settled = next((i for i in range(total, 0, -1) if not safe[i - 1]), 0)
    if prefix == total:
        head = f"a scale-in keeps every hard constraint within maxSkew for all {total} removals"
    # not violated, a first removal can still leave maxSkew: a lower tier goes first
    elif violated and prefix == 0 and settled < total:
        head = (
            f"violated now: the first {settled} removal(s) take the most misplaced pods, and"
            " every removal after them keeps every hard constraint within maxSkew"
        )
    else:
        head = (
            f"no order found keeps every hard constraint within maxSkew past removal {prefix}"
            f" of {total}; past that, each removal leaves the fewest misplaced pods"
        )
    if state is OrderState.OVERLAP:
        tail = f"RebalancePolicy {owner} also writes costs here and orders these pods: left alone"
    elif state is OrderState.CONFLICT:
        owners = sorted({m for c in conflicts for m in c.foreign})
        tail = (
            f"another field manager ({few_named(owners)}) owns the cost of {len(conflicts)}"
            " pod(s): left alone (spec.remediation.deletionCost.takeOver to write anyway)"
        )
    elif state is OrderState.CHANGES:
        tail = "costs to write"
    else:
        tail = "the current costs already give this order" if kept else "nothing to write"
    return f"{head}; {tail}"


def _exclusion(workload: WorkloadRef) -> str:
    return EXCLUSION_REASONS.get(
        workload.kind,
        f"a {workload.kind} does not scale in by pod-deletion-cost (only Deployments and"
        " ReplicaSets are ordered)",
    )


def plan_costs(
    analysis: Analysis,
    settings: DeletionCostSettings,
    memo: CostMemo | None = None,
    ownership: Ownership | None = None,
) -> CostPlan:
    """Per ReplicaSet in scope, the deletion-cost order; what is never ordered; what to write.

    ``memo``, kept by the caller from one scan to the next, reuses the orders of ReplicaSets
    whose inputs are all unchanged (cost_memo.py); the plan is the same with or without it.
    ``ownership``: the other policies that write costs; a ReplicaSet one of them owns
    (cost_owner.py) is reported as an overlap and never written (None: no other policy).
    A memo given the very analysis of its last scan, with the same settings and ownership,
    gives that scan's plan again."""
    if memo is None:
        return _planned(analysis, settings, None, ownership)
    inputs = (settings, ownership)
    last = memo.last_plan(analysis, inputs)
    if isinstance(last, CostPlan):
        return last
    plan = _planned(analysis, settings, memo, ownership)
    memo.keep_plan(analysis, inputs, plan)
    return plan


def _planned(
    analysis: Analysis,
    settings: DeletionCostSettings,
    memo: CostMemo | None,
    ownership: Ownership | None,
) -> CostPlan:
    index = analysis.index
    ordered: dict[WorkloadRef, bool] = {}
    excluded: dict[WorkloadRef, int] = defaultdict(int)
    for m in analysis.members:
        if not any(c.hard for c in m.profile.constraints):
            continue
        if m.workload.kind in ORDERED_KINDS:
            ordered[m.workload] = True
        else:
            excluded[m.workload] += m.count
    replica_sets: dict[tuple[str, str], list[Pod]] = defaultdict(list)
    owners: dict[tuple[str, str], WorkloadRef] = {}
    for pod in _active(index.state.pods):
        owner = pod.owner
        if owner is None or owner.kind != "ReplicaSet":
            continue
        workload = workload_of(pod, index)
        if workload not in ordered:
            continue
        key = (pod.namespace, owner.name)
        replica_sets[key].append(pod)
        owners[key] = workload
    context = _Context.of(analysis)
    in_order = sorted(replica_sets.items(), key=lambda kv: (owners[kv[0]], kv[0]))
    if memo is None:
        found = [_ordered(context, owners[key], pods) for key, pods in in_order]
    else:
        memo.begin_scan()
        keys = ScanKeys(memo, analysis, context.members_by_namespace, context.balanced)
        found = [_remembered(context, keys, owners[key], pods, key[1]) for key, pods in in_order]
    domains = _Domains(index.nodes)
    orders = tuple(
        _assembled_again(
            memo,
            owners[key],
            key,
            pods,
            f,
            domains=domains,
            settings=settings,
            owner=_other_owner(ownership, key[0], pods),
        )
        for (key, pods), f in zip(in_order, found, strict=True)
    )
    if memo is not None:
        memo.end_scan()
    orders, patches, deferred = _bounded_patches(orders, settings.max_patches_per_scan)
    return CostPlan(
        orders=orders,
        excluded=tuple(
            Excluded(w, n, _exclusion(w)) for w, n in sorted(excluded.items(), key=lambda x: x[0])
        ),
        patches=patches,
        deferred_patches=deferred,
    )


def _other_owner(ownership: Ownership | None, namespace: str, pods: Sequence[Pod]) -> str | None:
    if ownership is None:
        return None
    found = ownership.owner_of(namespace, pods)
    return None if found == ownership.policy else found


def _active(pods: Iterable[Pod]) -> Iterable[Pod]:
    """The pods a ReplicaSet controller ranks: neither terminating nor finished."""
    return (p for p in pods if pod_counts(p))


def _bounded_patches(
    orders: Sequence[ReplicaSetOrder], cap: int
) -> tuple[tuple[ReplicaSetOrder, ...], tuple[PodCost, ...], int]:
    """Whole ReplicaSets while they fit under the cap; conflicts are never written. A first
    ReplicaSet larger than the cap is installed from its head over several scans (_staged):
    its order comes back with the costs that takes."""
    out: list[PodCost] = []
    placed: list[ReplicaSetOrder] = []
    deferred = 0
    for given in orders:
        order = given
        if order.state is OrderState.CHANGES:
            room = cap - len(out)
            changed = order.changed
            if len(changed) <= room:
                out.extend(changed)
            elif not out and room > 0:
                order = _staged(order)
                changed = order.changed
                out.extend(changed[:room])
                deferred += max(0, len(changed) - room)
            else:
                deferred += len(changed)
        placed.append(order)
    return tuple(placed), tuple(out), deferred


def _staged(order: ReplicaSetOrder) -> ReplicaSetOrder:
    """The order with the costs that install it from its head, a scan's worth at a time.

    Written partly, an order leaves the pods not yet written at their old costs, and the
    controller ranks the two together. So the new costs are laid out below every old cost: the
    longest head of the order whose costs already rise and sit below every later pod's (read 0
    without a cost) is kept, and the pods after it get the integers just above it (just below
    the lowest later cost when no head is kept), in order. Whatever part of them a scan writes
    from the head, the controller's first removals are then exactly the order's first ones, as
    many as are written; the next scan finds them kept and goes on. Costs may go negative (the
    annotation is an int32). Without room in the int32 range, the plain costs (rank + 1)."""
    pods = order.pods
    n = len(pods)
    read = [p.current if p.current is not None else 0 for p in pods]
    below = [INT32_MAX + 1] * (n + 1)  # below[i]: the lowest cost read from pod i on
    for i in range(n - 1, -1, -1):
        below[i] = min(read[i], below[i + 1])
    kept = 0
    for i, entry in enumerate(pods):
        if entry.current is None or (i and entry.current <= read[i - 1]):
            break
        if below[i + 1] - entry.current > n - i - 1:
            kept = i + 1  # pods 0..i in place, below the rest, with room for it between
    first = read[kept - 1] + 1 if kept else below[0] - n  # the rest ends below below[kept]
    if first < INT32_MIN:
        return order
    costs = [*read[:kept], *range(first, first + n - kept)]
    return replace(
        order, pods=tuple(replace(e, desired=c) for e, c in zip(pods, costs, strict=True))
    )

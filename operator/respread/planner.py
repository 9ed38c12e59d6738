"""Violations -> an ordered eviction plan, with predicted landings and what was not planned.

The planner simulates the scheduler. Each step evicts one pod that sits where the scheduler
would not place it again, and predicts where its replacement lands: a node where every spread
constraint of the replacement passes the Filter (with the evicted pod gone), and where node
affinity, taints, cordons and resources allow it, with the capacity of earlier steps reserved.
Among those nodes it prefers what the scheduler prefers: the fewest matching pods in the node's
domains, then the node name. A step is kept only if it reduces the workload's violating pods
and creates no violation in any other group whose counts it changes.

Victim order, per workload profile (most violating profile first):

1. the most crowded domain first: the pod's domain holds the most pods above the global
   minimum (taking from the fullest domain is what makes the number of moves minimal);
2. lowest priority first;
3. pods pinned by nodeSelector or required node affinity last;
4. the node holding the most pods of the workload first;
5. the youngest pod first; then namespace/name.

Protected pods (safety.py) and pods whose budget refuses any eviction are never chosen; another
pod is tried instead. Pass 1 plans what this run may do within the policy's caps, cooldown and
budgets; pass 2 goes on past them to find what later runs would do (Deferred) and so which
violations can be fixed by eviction at all.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from respread.analysis import Analysis, Group, Members, WorkloadRef, minimum_moves
from respread.budgets import BudgetLedger, BudgetVerdict
from respread.model import Node, Pod, PodSpec
from respread.placement import CapacityLedger, static_reasons
from respread.policy import RebalancePolicy
from respread.safety import pinned, protection
from respread.spread import CountTable, Profile, SpreadIndex, Verdict, check_constraint


class StepState(StrEnum):
    PLANNED = "Planned"
    DEFERRED = "Deferred"


class SkipKind(StrEnum):
    PROTECTED = "Protected"
    BLOCKED = "Blocked"  # a budget refuses the eviction
    NO_ROOM = "NoRoom"  # no node would take the replacement
    WOULD_VIOLATE = "WouldViolate"  # the move would break another group


@dataclass(frozen=True, slots=True)
class Move:
    pod: Pod
    workload: WorkloadRef
    from_node: str
    to_node: str
    from_domain: tuple[tuple[str, str], ...]
    to_domain: tuple[tuple[str, str], ...]
    reason: str
    state: StepState = StepState.PLANNED
    deferred_by: str = ""


@dataclass(frozen=True, slots=True)
class Skip:
    pod: Pod
    workload: WorkloadRef
    kind: SkipKind
    reason: str


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the plan does for one violated group."""

    group: Group
    violating_after_run: int  # after this run's planned moves
    violating_after_all: int  # after the deferred moves too
    message: str

    @property
    def fixable(self) -> bool:
        return self.violating_after_all == 0


@dataclass(frozen=True, slots=True)
class Plan:
    moves: tuple[Move, ...]
    deferred: tuple[Move, ...]
    skipped: tuple[Skip, ...]
    outcomes: tuple[Outcome, ...]
    budgets_used: Mapping[str, int] = field(default_factory=dict)

    @property
    def predicted_violations(self) -> int:
        return sum(1 for o in self.outcomes if o.violating_after_run)


class _NodeSets:
    """The cluster's nodes as bit sets: bit ``r`` is the node of rank ``r`` in name order.

    Where a replacement may land depends on a node only through its domain in each
    constraint's count table and, for the static filters (nodeSelector, required affinity,
    taints, cordon), through the pod's affinity and tolerations. Sets per domain and per
    (affinity, tolerations) let ``landing`` judge whole domains at once rather than each of
    thousands of nodes, and a set's lowest bit is its node of least name.
    """

    def __init__(self, nodes: tuple[Node, ...]) -> None:
        order = sorted(range(len(nodes)), key=lambda position: (nodes[position].name, position))
        self.by_rank = [nodes[position] for position in order]
        self.position = order  # rank -> index in state.nodes
        self.all = (1 << len(nodes)) - 1
        self._domains: dict[str, tuple[int, dict[str, int]]] = {}
        self._static: dict[tuple[object, ...], tuple[int, dict[str, int]]] = {}

    def domains(self, key: str) -> tuple[int, dict[str, int]]:
        """The nodes labelled ``key``, and the nodes of each of its values."""
        hit = self._domains.get(key)
        if hit is None:
            ranks: dict[str, list[int]] = defaultdict(list)
            for rank, node in enumerate(self.by_rank):
                value = node.labels.get(key)
                if value is not None:
                    ranks[value].append(rank)
            labelled = _bits(r for value_ranks in ranks.values() for r in value_ranks)
            hit = self._domains[key] = (labelled, {v: _bits(r) for v, r in ranks.items()})
        return hit

    def static(self, spec: PodSpec) -> tuple[int, dict[str, int]]:
        """The nodes ``static_reasons`` allows, and the others by their first reason's summary.

        ``static_reasons`` reads only the spec's affinity and tolerations, hence the cache key.
        """
        key = (spec.affinity, spec.tolerations)
        hit = self._static.get(key)
        if hit is None:
            allowed: list[int] = []
            refused: dict[str, list[int]] = defaultdict(list)
            for rank, node in enumerate(self.by_rank):
                reasons = static_reasons(spec, node)
                if reasons:
                    refused[reasons[0].split(" (")[0]].append(rank)
                else:
                    allowed.append(rank)
            hit = (_bits(allowed), {why: _bits(r) for why, r in refused.items()})
            self._static[key] = hit
        return hit

    @staticmethod
    def ranks(nodes: int) -> list[int]:
        """The ranks in a set, least first."""
        bits = bin(nodes)[:1:-1]
        return [rank for rank, bit in enumerate(bits) if bit == "1"]


def _bits(ranks: Iterable[int]) -> int:
    out = 0
    for rank in ranks:
        out |= 1 << rank
    return out


class _Simulation:
    """Mutable working state of one planning run: counts, positions, capacity, budgets, caps."""

    def __init__(self, analysis: Analysis, policy: RebalancePolicy) -> None:
        self.index: SpreadIndex = analysis.index
        self.policy = policy
        self.nodes: dict[str, Node] = self.index.nodes
        self.ledger = CapacityLedger(self.index.state.nodes, self.index.state.pods)
        self.node_sets = _NodeSets(self.index.state.nodes)
        self.budgets = BudgetLedger(self.index.state.budgets)
        # Working copies of every count table any analysed profile uses, shared like the originals.
        self._copies: dict[int, CountTable] = {}
        self.tables_of: dict[int, tuple[CountTable, ...]] = {}
        self.users: dict[int, list[Members]] = defaultdict(list)  # table id -> members using it
        self.by_namespace: dict[str, list[tuple[int, Profile, int, CountTable]]] = defaultdict(list)
        for m in analysis.members:
            tables = []
            for i, original in enumerate(self.index.tables(m.profile)):
                copy = self._copies.get(id(original))
                if copy is None:
                    copy = self._copies[id(original)] = original.copy()
                    self.by_namespace[m.profile.namespace].append((id(copy), m.profile, i, copy))
                tables.append(copy)
                if m not in self.users[id(copy)]:
                    self.users[id(copy)].append(m)
            self.tables_of[id(m)] = tuple(tables)
        self.positions: dict[int, dict[str, list[Pod]]] = {
            id(m): {n: list(p) for n, p in m.by_node.items()} for m in analysis.members
        }
        self.moved: set[int] = set()  # ids of pods already moved (their replacements stay put)
        self.skipped: dict[int, Skip] = {}
        self.per_node: Counter[str] = Counter()
        self.per_namespace: Counter[str] = Counter()
        self.per_workload: Counter[WorkloadRef] = Counter()
        self.planned = 0
        self.held: Mapping[WorkloadRef, str] = {}
        self._wanted: dict[int, list[int]] = {}
        self._selected: dict[int, tuple[bool, ...]] = {}
        # State stamps for the violators cache: every change to a table copy or to a member's
        # positions takes a fresh number from one clock, so a stamp names exactly one state
        # (and an undone trial move may put the old numbers back).
        self._clock = 0
        self._stamps: dict[int, int] = {}  # id(table copy) or id(members) -> state number
        self._violators: dict[tuple[int, int | None], tuple[tuple[int, ...], int]] = {}

    # ---- counts ------------------------------------------------------------------------

    def tables_counting(self, pod: Pod) -> list[tuple[int, CountTable]]:
        out = []
        for tid, profile, i, table in self.by_namespace.get(pod.namespace, ()):
            if self.index.counts_pod(profile.constraints[i].selector, pod.labels):
                out.append((tid, table))
        return out

    def shift(self, tables: list[tuple[int, CountTable]], node: str, delta: int) -> set[int]:
        changed = set()
        for tid, table in tables:
            domain = table.space.node_domain.get(node)
            if domain is not None:
                table.add(domain, delta)
                changed.add(tid)
                self._clock += 1
                self._stamps[tid] = self._clock
        return changed

    def _restore(self, saved: dict[int, int | None]) -> None:
        for key, stamp in saved.items():
            if stamp is None:
                self._stamps.pop(key, None)
            else:
                self._stamps[key] = stamp

    def _stamp(self, m: Members) -> tuple[int, ...]:
        stamps = self._stamps
        return (stamps.get(id(m), 0), *(stamps.get(id(t), 0) for t in self.tables_of[id(m)]))

    # ---- judging -----------------------------------------------------------------------

    def wanted(self, profile: Profile) -> list[int]:
        hit = self._wanted.get(id(profile))
        if hit is None:
            whens = self.policy.constraints.when_unsatisfiable
            hit = [i for i, c in enumerate(profile.constraints) if c.when in whens]
            self._wanted[id(profile)] = hit
        return hit

    def failing(
        self, m: Members, node_name: str, pods: list[Pod], only: list[int] | None = None
    ) -> tuple[int, bool] | None:
        """The first wanted constraint (or of ``only``) members on this node fail: its index,
        and whether they are counted in it; or None.

        ``check_constraint`` inlined: this runs for every node of every candidate workload
        after every step. ``verdict`` gives the reason of a failure.
        """
        profile = m.profile
        tables = self.tables_of[id(m)]
        labels = self.nodes[node_name].labels
        selected = self.selected(m, pods[0])
        for i in self.wanted(profile) if only is None else only:
            c = profile.constraints[i]
            table = tables[i]
            value = labels.get(c.key)
            if value is None:
                return i, False
            counted = selected[i] and node_name in table.space.node_domain
            match_num = table.counts.get(value, 0)
            gmin = table.global_min(c.min_domains)
            if counted:
                match_num -= 1
                if match_num < gmin and table.space.size >= c.min_domains:
                    gmin = match_num
            if match_num + profile.self_match[i] - gmin > c.max_skew:
                return i, counted
        return None

    def selected(self, m: Members, pod: Pod) -> tuple[bool, ...]:
        """Whether each constraint's selector counts the members (one answer for all of them:
        members share a profile, which fixes every label their selectors read)."""
        hit = self._selected.get(id(m))
        if hit is None:
            counts_pod = self.index.counts_pod
            hit = tuple(counts_pod(c.selector, pod.labels) for c in m.profile.constraints)
            self._selected[id(m)] = hit
        return hit

    def verdict(self, m: Members, node_name: str, failing: tuple[int, bool]) -> Verdict:
        index, counted = failing
        table = self.tables_of[id(m)][index]
        return check_constraint(m.profile, index, table, self.nodes[node_name], counted)

    def node_verdict(self, m: Members, node_name: str, pods: list[Pod]) -> Verdict | None:
        """The first failing wanted constraint for members on this node, or None."""
        failing = self.failing(m, node_name, pods)
        return None if failing is None else self.verdict(m, node_name, failing)

    def violators(self, m: Members, constraint: int | None = None) -> int:
        stamp = self._stamp(m)
        hit = self._violators.get((id(m), constraint))
        if hit is not None and hit[0] == stamp:
            return hit[1]
        total = self._count_violators(m, constraint)
        self._violators[(id(m), constraint)] = (stamp, total)
        return total

    def _count_violators(self, m: Members, constraint: int | None) -> int:
        total = 0
        only = None if constraint is None else [constraint]
        for node_name, pods in self.positions[id(m)].items():
            if not pods:
                continue
            if self.failing(m, node_name, pods, only) is not None:
                total += len(pods)
        return total

    # ---- choosing ----------------------------------------------------------------------

    def candidates(self, m: Members) -> list[tuple[Pod, tuple[int, bool]]]:
        profile = m.profile
        tables = self.tables_of[id(m)]
        found = []
        for node_name, pods in self.positions[id(m)].items():
            live = [p for p in pods if id(p) not in self.moved and id(p) not in self.skipped]
            if not live:
                continue
            verdict = self.failing(m, node_name, pods)
            if verdict is None:
                continue
            node = self.nodes[node_name]
            excess = 0
            for i in self.wanted(profile):
                c = profile.constraints[i]
                value = node.labels.get(c.key)
                if value is not None:
                    excess = max(excess, tables[i].get(value) - tables[i].global_min(c.min_domains))
            crowd = len(pods)
            for pod in live:
                found.append(
                    (
                        pod,
                        verdict,
                        (
                            -excess,
                            pod.priority,
                            pinned(pod),
                            -crowd,
                            -(pod.created or 0.0),
                            pod.namespace,
                            pod.name,
                        ),
                    )
                )
        found.sort(key=lambda item: item[2])
        return [(pod, verdict) for pod, verdict, _ in found]

    def deferral(
        self,
        pod: Pod,
        workload: WorkloadRef,
        now: float | None,
        history: Mapping[WorkloadRef, float],
    ) -> str:
        held = self.held.get(workload)
        if held:
            return held
        ev = self.policy.eviction
        last = history.get(workload)
        if now is not None and last is not None and now - last < ev.cooldown:
            return f"cooldown: {workload} had an eviction {int(now - last)}s ago"
        if ev.max_per_run is not None and self.planned >= ev.max_per_run:
            return f"maxPerRun {ev.max_per_run} reached"
        if ev.max_per_workload is not None and self.per_workload[workload] >= ev.max_per_workload:
            return f"maxPerWorkload {ev.max_per_workload} reached"
        if (
            ev.max_per_namespace is not None
            and self.per_namespace[pod.namespace] >= ev.max_per_namespace
        ):
            return f"maxPerNamespace {ev.max_per_namespace} reached"
        assert pod.node_name is not None
        if ev.max_per_node is not None and self.per_node[pod.node_name] >= ev.max_per_node:
            return f"maxPerNode {ev.max_per_node} reached on {pod.node_name}"
        check = self.budgets.check(pod)
        if check.verdict is BudgetVerdict.EXHAUSTED:
            return check.reason
        return ""

    def landing(self, m: Members, pod: Pod) -> tuple[Node | None, str]:
        """The node the replacement is predicted to land on (the victim already taken out).

        Of the nodes where every wanted constraint passes the Filter and, with requireFit, the
        static filters and resources do too: the fewest matching pods in the node's domains,
        then the least node name. Judged domain by domain on node sets (``_NodeSets``).
        """
        profile = m.profile
        tables = self.tables_of[id(m)]
        wanted = self.wanted(profile)
        require_fit = self.policy.eviction.require_fit
        sets = self.node_sets
        spread_ok = sets.all
        for i in wanted:
            spread_ok &= self._passing(profile, i, tables[i])
        refused: dict[str, int] = {"topology spread": sets.all & ~spread_ok}
        candidates = spread_ok
        if require_fit:
            allowed, static_refused = sets.static(pod.spec)
            candidates &= allowed
            for why, nodes in static_refused.items():
                refused[why] = refused.get(why, 0) | (nodes & spread_ok)
        levels = self._score_levels(profile, tables, wanted, candidates)
        for score in sorted(levels):
            nodes = levels[score]
            while nodes:
                lowest = nodes & -nodes
                nodes ^= lowest
                node = sets.by_rank[lowest.bit_length() - 1]
                fit = self.ledger.fit_reason(node.name, pod.spec.requests) if require_fit else None
                if not fit:
                    return node, ""
                why = "no room" if "full" in fit else "insufficient resources"
                refused[why] = refused.get(why, 0) | lowest
        return None, f"no node would take the replacement ({self._refusal(refused) or 'no nodes'})"

    def _passing(self, profile: Profile, index: int, table: CountTable) -> int:
        """The nodes where ``check_constraint`` passes the constraint (not counted), as a set."""
        c = profile.constraints[index]
        has_key, by_value = self.node_sets.domains(c.key)
        # check_constraint passes a node iff its domain's count is at most this
        self_match = 1 if profile.self_match[index] else 0
        limit = c.max_skew + table.global_min(c.min_domains) - self_match
        passing = has_key
        if limit < 0:  # not even an empty domain passes: only the listed ones at or below it
            listed = 0
            for domain, n in table.counts.items():
                if n <= limit:
                    listed |= by_value.get(domain, 0)
            passing &= listed
        for domain, n in table.counts.items():
            if n > limit:
                passing &= ~by_value.get(domain, 0)
        return passing

    def _score_levels(
        self, profile: Profile, tables: tuple[CountTable, ...], wanted: list[int], nodes: int
    ) -> dict[int, int]:
        """``nodes`` by score: the sum over the wanted constraints of the count of their domain."""
        levels = {0: nodes} if nodes else {}
        for i in wanted:
            counts = tables[i].counts
            by_value = self.node_sets.domains(profile.constraints[i].key)[1]
            scored: dict[int, int] = {}
            for score, level in levels.items():
                rest = level
                for domain, n in counts.items():
                    part = rest & by_value.get(domain, 0)
                    if part:
                        scored[score + n] = scored.get(score + n, 0) | part
                        rest ^= part
                if rest:
                    scored[score] = scored.get(score, 0) | rest
            levels = scored
        return levels

    def _refusal(self, refused: dict[str, int]) -> str:
        """Node counts by reason, most first; ties in the order the nodes are listed."""
        sets = self.node_sets
        counted = [(why, nodes.bit_count(), nodes) for why, nodes in refused.items() if nodes]
        ties = Counter(n for _, n, _ in counted)

        def order(item: tuple[str, int, int]) -> tuple[int, int]:
            _, n, nodes = item
            first = min(sets.position[r] for r in sets.ranks(nodes)) if ties[n] > 1 else 0
            return (-n, first)

        return ", ".join(f"{n} {why}" for why, n, _ in sorted(counted, key=order))

    def domains(self, profile: Profile, node: str) -> tuple[tuple[str, str], ...]:
        labels = self.nodes[node].labels
        keys = dict.fromkeys(c.key for c in profile.constraints)
        return tuple((k, labels.get(k, "")) for k in keys)

    # ---- one step ----------------------------------------------------------------------

    def try_move(self, m: Members, pod: Pod, failing: tuple[int, bool]) -> Move | Skip | None:
        """Simulate evicting ``pod``; keep the move if it helps, else undo it."""
        assert pod.node_name is not None
        source = pod.node_name
        verdict = self.verdict(m, source, failing)
        counting = self.tables_counting(pod)
        affected = {id(x): x for tid, _ in counting for x in self.users.get(tid, ())}
        affected[id(m)] = m
        before = {k: self.violators(x) for k, x in affected.items()}
        # an undone trial restores the state, and so the stamps of what it touched
        saved = {k: self._stamps.get(k) for k in (id(m), *(tid for tid, _ in counting))}

        self.shift(counting, source, -1)
        target, why = self.landing(m, pod)
        if target is None:
            self.shift(counting, source, +1)
            self._restore(saved)
            return Skip(pod, m.workload, SkipKind.NO_ROOM, why)
        self.shift(counting, target.name, +1)
        self._reposition(m, pod, source, target.name)
        after = {k: self.violators(x) for k, x in affected.items()}
        worse = [affected[k] for k in affected if k != id(m) and after[k] > before[k]]
        if worse or after[id(m)] >= before[id(m)]:
            self._reposition(m, pod, target.name, source)
            self.shift(counting, target.name, -1)
            self.shift(counting, source, +1)
            self._restore(saved)
            if worse:
                return Skip(
                    pod,
                    m.workload,
                    SkipKind.WOULD_VIOLATE,
                    f"the move would break the spread of {worse[0].workload}",
                )
            return None
        self.ledger.reserve(target.name, pod.spec.requests)
        self.moved.add(id(pod))
        return Move(
            pod,
            m.workload,
            source,
            target.name,
            self.domains(m.profile, source),
            self.domains(m.profile, target.name),
            verdict.reason,
        )

    def _reposition(self, m: Members, pod: Pod, source: str, target: str) -> None:
        positions = self.positions[id(m)]
        positions[source].remove(pod)
        positions.setdefault(target, []).append(pod)
        self._clock += 1
        self._stamps[id(m)] = self._clock

    def commit(self, move: Move) -> None:
        self.planned += 1
        self.per_node[move.from_node] += 1
        self.per_namespace[move.pod.namespace] += 1
        self.per_workload[move.workload] += 1
        self.budgets.consume(move.pod)


def _run(
    sim: _Simulation,
    order: list[Members],
    within_limits: bool,
    now: float | None,
    history: Mapping[WorkloadRef, float],
) -> list[Move]:
    moves: list[Move] = []
    for m in order:
        while True:
            progressed = False
            for pod, verdict in sim.candidates(m):
                reason = protection(pod, sim.policy, now)
                if reason:
                    sim.skipped[id(pod)] = Skip(pod, m.workload, SkipKind.PROTECTED, reason)
                    continue
                check = sim.budgets.check(pod)
                if check.verdict is BudgetVerdict.BLOCKED:
                    sim.skipped[id(pod)] = Skip(pod, m.workload, SkipKind.BLOCKED, check.reason)
                    continue
                deferral = sim.deferral(pod, m.workload, now, history)
                if within_limits and deferral:
                    continue
                result = sim.try_move(m, pod, verdict)
                if result is None:
                    continue
                if isinstance(result, Skip):
                    sim.skipped[id(pod)] = result
                    continue
                if within_limits:
                    sim.commit(result)
                    moves.append(result)
                else:
                    moves.append(
                        Move(
                            result.pod,
                            result.workload,
                            result.from_node,
                            result.to_node,
                            result.from_domain,
                            result.to_domain,
                            result.reason,
                            StepState.DEFERRED,
                            deferral or "planned after this run's moves take effect",
                        )
                    )
                progressed = True
                break
            if not progressed:
                break
    return moves


def plan(
    analysis: Analysis,
    policy: RebalancePolicy,
    now: float | None = None,
    history: Mapping[WorkloadRef, float] | None = None,
    held: Mapping[WorkloadRef, str] | None = None,
) -> Plan:
    """The eviction plan for one run. Pure: the caller supplies ``now``, ``history`` (the last
    eviction time per workload, for the cooldown) and ``held`` (workloads the operator holds
    back this run, with the reason: a replacement not Ready yet, a back-off)."""
    history = history or {}
    sim = _Simulation(analysis, policy)
    sim.held = held or {}
    violated = {id(g.members) for g in analysis.violations}
    order = sorted(
        (m for m in analysis.members if id(m) in violated),
        key=lambda m: (-sim.violators(m), m.workload),
    )
    planned = _run(sim, order, True, now, history)
    after_run = {
        (id(g.members), g.index): sim.violators(g.members, g.index) for g in analysis.violations
    }
    budgets_used = sim.budgets.used()
    deferred = _run(sim, order, False, now, history)

    outcomes = []
    skipped_by_members: dict[WorkloadRef, list[Skip]] = defaultdict(list)
    for skip in sim.skipped.values():
        skipped_by_members[skip.workload].append(skip)
    for g in analysis.violations:
        remaining = sim.violators(g.members, g.index)
        outcomes.append(
            Outcome(
                g,
                after_run[(id(g.members), g.index)],
                remaining,
                _message(g, remaining, skipped_by_members[g.workload]),
            )
        )
    skipped = sorted(sim.skipped.values(), key=lambda s: (s.pod.namespace, s.pod.name))
    return Plan(tuple(planned), tuple(deferred), tuple(skipped), tuple(outcomes), budgets_used)


def domains_needed(counts: list[int], max_skew: int, min_domains: int) -> tuple[int, int]:
    """How many empty domains must be added before moves can fix it, and the moves then."""
    extra = 1
    while True:
        moves = minimum_moves(counts + [0] * extra, max_skew, min_domains)
        if moves is not None:
            return extra, moves
        extra += 1


def _message(group: Group, remaining: int, skips: list[Skip]) -> str:
    c = group.constraint
    counts = [group.domain_count(d) for d in group.domains]
    if remaining == 0:
        return (
            f"{group.violating} pod(s) placed against {c.key} maxSkew {c.max_skew}; "
            f"fixable by eviction (at least {group.minimum_moves} move(s))"
        )
    if minimum_moves(counts, c.max_skew, c.min_domains) is None:
        extra, moves = domains_needed(counts, c.max_skew, c.min_domains)
        return (
            f"not fixable by eviction: {sum(counts)} pods at maxSkew {c.max_skew} over "
            f"{len(counts)} eligible {c.key} domain(s) (minDomains {c.min_domains}); needs "
            f"{extra} more eligible domain(s), then {moves} move(s) would fix it"
        )
    if skips:
        kinds = Counter(s.reason for s in skips)
        reason, n = kinds.most_common(1)[0]
        return f"not fixable by eviction now: {n} pod(s) that would have to move: {reason}"
    return f"not fixable by eviction now: {remaining} pod(s) still placed against {c.key}"

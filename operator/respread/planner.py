"""Violations -> an ordered eviction plan, with predicted landings and what was not planned.

The planner simulates the scheduler. Each step evicts one pod that sits where the scheduler
would not place it again, and predicts where its replacement lands: a node where every spread
constraint of the replacement passes the Filter (with the evicted pod gone), and where node
affinity, taints, cordons and resources allow it, with the capacity of earlier steps reserved.
Among those nodes it prefers what the scheduler prefers: the fewest matching pods in the node's
domains, then the node name. A step is kept only if it reduces the workload's violating pods,
and for every group whose counts or pods it changes: a group with no misplaced pod keeps none,
a violated group does not end with a larger skew unless that skew is within its maxSkew, and
another workload does not end with more misplaced pods. A workload whose steps stopped is tried
again once the counts they depend on have changed.

Victim order, per workload profile (most violating profile first):

1. pods on a node lacking one of the topology keys first (every fix moves them);
2. pods that break more of the workload's constraints first;
3. the most crowded domain first: the pod's domain holds the most pods above the global
   minimum (taking from the fullest domain is what makes the number of moves minimal);
4. lowest priority first;
5. pods pinned by nodeSelector or required node affinity last;
6. the node holding the most pods of the workload first;
7. the youngest pod first; then namespace/name.

Protected pods (safety.py) and pods whose budget refuses any eviction are never chosen; another
pod is tried instead. Pass 1 plans what this run may do within the policy's caps, cooldown and
budgets; pass 2 goes on past them to find what later runs would do (Deferred) and so which
violations can be fixed by eviction at all.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from respread.analysis import Analysis, Group, Members, WorkloadRef, minimum_moves
from respread.budgets import BudgetLedger, BudgetVerdict
from respread.kernel import CountTable, SpreadRule, Verdict
from respread.model import Labels, LabelSelector, Node, Pod
from respread.nodesets import NodeSets
from respread.placement import CapacityLedger
from respread.policy import RebalancePolicy
from respread.safety import pinned, protection
from respread.search import fewest_moves
from respread.selectors import narrowing
from respread.spread import Profile, SpreadIndex, rule


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
    method: str = "greedy"  # "exact": the fewest evictions, found by exhaustive search
    method_note: str = ""  # how the plan was found, one line

    @property
    def predicted_violations(self) -> int:
        return sum(1 for o in self.outcomes if o.violating_after_run)


@dataclass(frozen=True, slots=True)
class _Applied:
    """An eviction applied to the simulation, with what undoing it needs."""

    owner: Members
    pod: Pod
    target: Node
    counting: list[tuple[int, CountTable]]
    saved: dict[int, int | None]


@dataclass(slots=True)
class Trial:
    """A simulated eviction, applied, that ``keep`` turns into a Move or ``undo`` takes back."""

    members: Members  # the group it is for
    owner: Members  # the pod's own workload and profile
    pod: Pod
    target: Node
    counting: list[tuple[int, CountTable]]
    saved: dict[int, int | None]
    gain: int  # the fall in distance from balance of the groups it touches (when measured)
    reason: str


# One constraint as ``_Simulation.judge`` prepares it for the counts as they stand: index,
# topology key, counts, the eligible nodes' domains (empty when the members are not counted),
# global minimum, and the rule's ceilings for members not counted and counted.
_Rule = tuple[int, str, Mapping[str, int], Mapping[str, str], int, int, int]


# The same before the counts are read: the rule, its table, eligible nodes' domains (or none).
_RuleShape = tuple[SpreadRule, CountTable, Mapping[str, str]]

# A table of ``_Simulation.by_namespace``: its place there, id, selector, the table itself.
_TableEntry = tuple[int, int, LabelSelector | None, CountTable]


# How many pods of other workloads a step tries for a group their pods crowd.
FOREIGN_TRIALS = 8


class _Simulation:
    """Mutable working state of one planning run: counts, positions, capacity, budgets, caps."""

    def __init__(self, analysis: Analysis, policy: RebalancePolicy) -> None:
        self.index: SpreadIndex = analysis.index
        self.policy = policy
        self.nodes: dict[str, Node] = self.index.nodes
        self.node_labels: dict[str, Labels] = {name: n.labels for name, n in self.nodes.items()}
        self.ledger = CapacityLedger(self.index.state.nodes, self.index.state.pods)
        self.node_sets = NodeSets(self.index.state.nodes)
        self.budgets = BudgetLedger(self.index.state.budgets)
        # Working copies of every count table any analysed profile uses, shared like the originals.
        self._copies: dict[int, CountTable] = {}
        self.tables_of: dict[int, tuple[CountTable, ...]] = {}
        self.users: dict[int, list[Members]] = defaultdict(list)  # table id -> members using it
        self.by_namespace: dict[str, list[tuple[int, Profile, int, CountTable]]] = defaultdict(list)
        self.members_by_namespace: dict[str, list[Members]] = defaultdict(list)
        for m in analysis.members:
            tables = []
            for i, original in enumerate(self.index.tables(m.profile)):
                copy = self._copies.get(id(original))
                if copy is None:
                    copy = self._copies[id(original)] = original.copy()
                    self.by_namespace[m.profile.namespace].append((id(copy), m.profile, i, copy))
                tables.append(copy)
                users = self.users[id(copy)]
                if not users or users[-1] is not m:  # m's constraints may share a table
                    users.append(m)
            self.tables_of[id(m)] = tuple(tables)
            self.members_by_namespace[m.profile.namespace].append(m)
        # where members stand once one of theirs moved (copied then); the others stand as found
        self._moved_members: dict[int, dict[str, list[Pod]]] = {}
        self.moved: set[int] = set()  # ids of pods already moved (their replacements stay put)
        self.skipped: dict[int, Skip] = {}
        self._refused: dict[int, list[Pod]] = {}  # id(members) -> pods refused for the counts
        self.per_node: Counter[str] = Counter()
        self.per_namespace: Counter[str] = Counter()
        self.per_workload: Counter[WorkloadRef] = Counter()
        self.planned = 0
        self.held: Mapping[WorkloadRef, str] = {}
        self._wanted: dict[int, list[int]] = {}
        self._selected: dict[int, tuple[bool, ...]] = {}
        self._counting: dict[tuple[str, int], list[tuple[int, CountTable]]] = {}
        self._tables_by_label: dict[str, dict[tuple[str, str] | None, list[_TableEntry]]] = {}
        self._rules: dict[tuple[int, int | None], list[_RuleShape]] = {}
        self._counted_others: dict[int, dict[int, list[Members]]] = {}
        self._members_by_label: dict[str, dict[tuple[str, str], list[Members]]] = {}
        # State stamps for the violators cache: every change to a table copy or to a member's
        # positions takes a fresh number from one clock, so a stamp names exactly one state
        # (and an undone trial move may put the old numbers back).
        self._clock = 0
        self._stamps: dict[int, int] = {}  # id(table copy) or id(members) -> state number
        self._violators: dict[int, tuple[tuple[int, ...], tuple[int, Mapping[int, int]]]] = {}

    # ---- counts ------------------------------------------------------------------------

    def tables_counting(self, pod: Pod) -> list[tuple[int, CountTable]]:
        key = (pod.namespace, id(pod.labels))  # the pod keeps its (interned) labels alive
        hit = self._counting.get(key)
        if hit is None:
            counts_pod = self.index.counts_pod
            hit = self._counting[key] = [
                (tid, table)
                for _, tid, selector, table in self._could_count_pod(pod)
                if counts_pod(selector, pod.labels)
            ]
        return hit

    def _could_count_pod(self, pod: Pod) -> list[_TableEntry]:
        """The namespace's tables whose selector might count the pod, in ``by_namespace``
        order: those with an In requirement only where the pod holds one of its values."""
        index = self._tables_by_label.get(pod.namespace)
        if index is None:
            index = self._tables_by_label[pod.namespace] = defaultdict(list)
            for n, (tid, profile, i, table) in enumerate(self.by_namespace[pod.namespace]):
                selector = profile.constraints[i].selector
                req = narrowing(selector)
                for pair in [None] if req is None else [(req.key, v) for v in req.values]:
                    index[pair].append((n, tid, selector, table))
        found = {entry[0]: entry for entry in index.get(None, ())}
        for pair in pod.labels.items():
            for entry in index.get(pair, ()):
                found[entry[0]] = entry
        return [found[n] for n in sorted(found)]

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

    def refuse(self, m: Members, pod: Pod, skip: Skip) -> None:
        """Skip one of the members' pods; refusals for what the counts were (no room, another
        group) are remembered, to be tried again once the counts change."""
        self.skipped[id(pod)] = skip
        if skip.kind in (SkipKind.NO_ROOM, SkipKind.WOULD_VIOLATE):
            self._refused.setdefault(id(m), []).append(pod)

    def refused(self, m: Members) -> list[Pod]:
        """The members' pods refused for another group's sake, and not tried since."""
        skipped = self.skipped
        return [
            pod
            for pod in self._refused.get(id(m), ())
            if (skip := skipped.get(id(pod))) is not None and skip.kind is SkipKind.WOULD_VIOLATE
        ]

    def forget_refusals(self, m: Members) -> None:
        """Make the members' pods refused for what the counts were candidates again."""
        skipped = self.skipped
        for pod in self._refused.pop(id(m), ()):
            skip = skipped.get(id(pod))
            if skip is not None and skip.kind in (SkipKind.NO_ROOM, SkipKind.WOULD_VIOLATE):
                del skipped[id(pod)]

    def stamp(self, m: Members) -> tuple[int, ...]:
        return self._stamp(m)

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

    def judge(self, m: Members, only: int | None = None) -> list[_Rule]:
        """``check_constraint`` for the members, ready to run node by node over the counts as
        they stand now (a global minimum does not change while nodes are judged): this runs
        for every node of every candidate workload after every step."""
        rules = self._rules.get((id(m), only))
        if rules is None:
            profile = m.profile
            tables = self.tables_of[id(m)]
            selected = self.selected(m)
            rules = []
            for i in self.wanted(profile) if only is None else [only]:
                node_domain = tables[i].space.node_domain if selected[i] else {}
                rules.append((rule(profile, i), tables[i], node_domain))
            self._rules[(id(m), only)] = rules
        return [
            (
                r.index,
                r.key,
                table.counts,
                node_domain,
                table.global_min(r.min_domains),
                r.ceiling(table),
                r.ceiling(table, counted=True),
            )
            for r, table, node_domain in rules
        ]

    def selected(self, m: Members) -> tuple[bool, ...]:
        """Whether each constraint's selector counts the members (one answer for all of them:
        members share a profile, which fixes every label their selectors read)."""
        hit = self._selected.get(id(m))
        if hit is None:
            counts_pod, labels = self.index.counts_pod, m.labels
            hit = tuple(counts_pod(c.selector, labels) for c in m.profile.constraints)
            self._selected[id(m)] = hit
        return hit

    def verdict(self, m: Members, node_name: str, failing: tuple[int, bool]) -> Verdict:
        index, counted = failing
        table = self.tables_of[id(m)][index]
        value = self.node_labels[node_name].get(m.profile.constraints[index].key)
        return rule(m.profile, index).verdict(table, value, counted)

    def violators(self, m: Members, constraint: int | None = None) -> int:
        """The members' misplaced pods: under any wanted constraint, or under one."""
        total, each = self.tally(m)
        return total if constraint is None else each.get(constraint, 0)

    def tally(self, m: Members) -> tuple[int, Mapping[int, int]]:
        """The members' misplaced pods, and per wanted constraint those misplaced under it."""
        stamp = self._stamp(m)
        hit = self._violators.get(id(m))
        if hit is not None and hit[0] == stamp:
            return hit[1]
        found = self._count_violators(m)
        self._violators[id(m)] = (stamp, found)
        return found

    def _count_violators(self, m: Members) -> tuple[int, Mapping[int, int]]:
        total = 0
        each: dict[int, int] = {}
        judge = self.judge(m)
        node_labels = self.node_labels
        if len(judge) == 1:  # most workloads: one wanted constraint
            for node_name, pods in self.positions(m).items():
                if pods and _fails(judge, node_labels[node_name], node_name) is not None:
                    total += len(pods)
            return total, ({judge[0][0]: total} if total else {})
        for node_name, pods in self.positions(m).items():
            if pods and _fails(judge, node_labels[node_name], node_name) is not None:
                total += len(pods)
                for i in _failing(judge, node_labels[node_name], node_name):
                    each[i] = each.get(i, 0) + len(pods)
        return total, each

    # ---- choosing ----------------------------------------------------------------------

    def candidates(
        self, m: Members, refused_too: bool = False
    ) -> list[tuple[Pod, tuple[int, bool]]]:
        """The members' misplaced pods in victim order, less those moved or skipped (but for
        ``refused_too``, those refused only for what the counts were)."""
        found = []
        judge = self.judge(m)
        node_labels, moved, skipped = self.node_labels, self.moved, self.skipped
        for node_name, pods in self.positions(m).items():
            if not pods:
                continue
            labels = node_labels[node_name]
            verdict = _fails(judge, labels, node_name)
            if verdict is None:
                continue
            live = [
                p
                for p in pods
                if id(p) not in moved
                and (
                    (skip := skipped.get(id(p))) is None
                    or (refused_too and skip.kind in (SkipKind.NO_ROOM, SkipKind.WOULD_VIOLATE))
                )
            ]
            if not live:
                continue
            excess = 0
            keyless = False  # on a node without a key: every fix moves the pod
            for _, key, counts, _, gmin, _, _ in judge:
                value = labels.get(key)
                if value is None:
                    keyless = True
                else:
                    excess = max(excess, counts.get(value, 0) - gmin)
            broken = 1 if len(judge) == 1 else len(_failing(judge, labels, node_name))
            crowd = len(pods)
            for pod in live:
                found.append(
                    (
                        pod,
                        verdict,
                        (
                            not keyless,
                            -broken,
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
        """The nodes where the Filter passes the constraint (not counted), as a set."""
        judge = rule(profile, index)
        has_key, by_value = self.node_sets.domains(judge.key)
        limit = judge.ceiling(table)
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

    def trial(
        self, m: Members, owner: Members, pod: Pod, reason: str, measure: bool = False
    ) -> Trial | Skip | None:
        """Evict ``pod`` (one of ``owner``'s) for the sake of ``m`` in the simulation, and land
        its replacement. Applied, as a Trial, when it reduces ``m``'s misplaced pods and makes
        no group worse; otherwise undone, with a Skip saying why, or None (it does not help).
        ``measure``: also say by how much it brings the touched groups closer to balance (the
        fall in their exact minimum moves), to compare it with other candidate moves."""
        assert pod.node_name is not None
        source = pod.node_name
        counting = self.tables_counting(pod)
        affected = {id(x): x for tid, _ in counting for x in self.users.get(tid, ())}
        affected[id(m)] = m
        affected[id(owner)] = owner
        before = {k: self.tally(x) for k, x in affected.items()}
        changing = {tid for tid, _ in counting}
        skews = self._skews(affected.values(), before, changing)
        distance = self.distance(affected.values()) if measure else 0
        # an undone trial restores the state, and so the stamps of what it touched
        saved = {k: self._stamps.get(k) for k in (id(owner), *changing)}

        self.shift(counting, source, -1)
        target, why = self.landing(owner, pod)
        if target is None:
            self.shift(counting, source, +1)
            self._restore(saved)
            return Skip(pod, owner.workload, SkipKind.NO_ROOM, why)
        self.shift(counting, target.name, +1)
        self._reposition(owner, pod, source, target.name)
        after = {k: self.tally(x) for k, x in affected.items()}
        harm = self._harm(m, affected, before, after, skews)
        if harm or after[id(m)][0] >= before[id(m)][0]:
            self._reposition(owner, pod, target.name, source)
            self.shift(counting, target.name, -1)
            self.shift(counting, source, +1)
            self._restore(saved)
            if harm:
                return Skip(pod, owner.workload, SkipKind.WOULD_VIOLATE, harm)
            return None
        gain = distance - self.distance(affected.values()) if measure else 0
        return Trial(m, owner, pod, target, counting, saved, gain, reason)

    def _skews(
        self,
        members: Iterable[Members],
        tallies: Mapping[int, tuple[int, Mapping[int, int]]],
        changing: set[int],
    ) -> dict[tuple[int, int], int]:
        """The skew of each violated group whose counts the move changes, before it."""
        out = {}
        for x in members:
            tables = self.tables_of[id(x)]
            for i in tallies[id(x)][1]:
                table = tables[i]
                if id(table) in changing:
                    out[(id(x), i)] = table.skew(x.profile.constraints[i].min_domains)
        return out

    def _harm(
        self,
        m: Members,
        affected: Mapping[int, Members],
        before: Mapping[int, tuple[int, Mapping[int, int]]],
        after: Mapping[int, tuple[int, Mapping[int, int]]],
        skews: Mapping[tuple[int, int], int],
    ) -> str:
        """Why the move may not be kept, or "": no group within its maxSkew (no misplaced pod)
        leaves it, no violated group ends with a larger skew unless within maxSkew, and no
        other workload ends with more misplaced pods."""
        for k, x in affected.items():
            was, now = before[k][1], after[k][1]
            for i in now:
                c = x.profile.constraints[i]
                if not was.get(i):
                    return f"the move would break the {c.key} spread of {x.workload}"
                old = skews.get((k, i))
                if old is not None:
                    new = self.tables_of[k][i].skew(c.min_domains)
                    if new > old and new > c.max_skew:
                        return (
                            f"the move would raise the {c.key} skew of {x.workload} "
                            f"from {old} to {new}"
                        )
            if k != id(m) and after[k][0] > before[k][0]:
                return f"the move would break the spread of {x.workload}"
        return ""

    def distance(self, members: Iterable[Members]) -> int:
        """How far these groups are from balance: the sum of their exact minimum moves (the
        misplaced pods, for a group moves alone cannot fix)."""
        total = 0
        for x in members:
            profile = x.profile
            for i in self.wanted(profile):
                c = profile.constraints[i]
                table = self.tables_of[id(x)][i]
                counts = [table.get(d) for d in table.space.domain_nodes]
                moves = minimum_moves(counts, c.max_skew, c.min_domains)
                total += self.violators(x, i) if moves is None else moves
        return total

    def undo(self, trial: Trial) -> None:
        pod, target = trial.pod, trial.target.name
        assert pod.node_name is not None
        self._reposition(trial.owner, pod, target, pod.node_name)
        self.shift(trial.counting, target, -1)
        self.shift(trial.counting, pod.node_name, +1)
        self._restore(trial.saved)

    def apply_move(self, owner: Members, pod: Pod) -> _Applied | None:
        """Evict the pod and land its replacement where predicted, whatever that does to the
        groups (None, and nothing changed, when no node would take it); ``undo_move`` takes
        it back exactly."""
        source = pod.node_name
        assert source is not None
        counting = self.tables_counting(pod)
        saved = {k: self._stamps.get(k) for k in (id(owner), *(tid for tid, _ in counting))}
        self.shift(counting, source, -1)
        target, _ = self.landing(owner, pod)
        if target is None:
            self.shift(counting, source, +1)
            self._restore(saved)
            return None
        self.shift(counting, target.name, +1)
        self._reposition(owner, pod, source, target.name)
        self.ledger.reserve(target.name, pod.spec.requests)
        return _Applied(owner, pod, target, counting, saved)

    def undo_move(self, applied: _Applied) -> None:
        owner, pod, target = applied.owner, applied.pod, applied.target.name
        assert pod.node_name is not None
        self.ledger.release(target, pod.spec.requests)
        self._reposition(owner, pod, target, pod.node_name)
        self.shift(applied.counting, target, -1)
        self.shift(applied.counting, pod.node_name, +1)
        self._restore(applied.saved)

    def keep_applied(self, applied: _Applied, reason: str) -> Move:
        """The Move of an applied eviction (its room is already reserved)."""
        pod, owner = applied.pod, applied.owner
        assert pod.node_name is not None
        self.moved.add(id(pod))
        self.skipped.pop(id(pod), None)
        return Move(
            pod,
            owner.workload,
            pod.node_name,
            applied.target.name,
            self.domains(owner.profile, pod.node_name),
            self.domains(owner.profile, applied.target.name),
            reason,
        )

    def affected(self, owner: Members, pod: Pod) -> dict[int, Members]:
        """The members whose counts or positions moving the pod changes."""
        found = {id(x): x for tid, _ in self.tables_counting(pod) for x in self.users.get(tid, ())}
        found[id(owner)] = owner
        return found

    def uncommit(self, move: Move) -> None:
        self.planned -= 1
        self.per_node[move.from_node] -= 1
        self.per_namespace[move.pod.namespace] -= 1
        self.per_workload[move.workload] -= 1
        self.budgets.give_back(move.pod)

    def force(self, owner: Members, pod: Pod, reason: str) -> Move:
        """Make the move whatever it does to the groups (a move of a sequence found by
        search, judged as a whole), landing the replacement where predicted."""
        assert pod.node_name is not None
        source = pod.node_name
        counting = self.tables_counting(pod)
        self.shift(counting, source, -1)
        target, why = self.landing(owner, pod)
        assert target is not None, why  # the search landed it in this very state
        self.shift(counting, target.name, +1)
        self._reposition(owner, pod, source, target.name)
        trial = Trial(owner, owner, pod, target, counting, {}, 0, reason)
        return self.keep(trial)

    def keep(self, trial: Trial) -> Move:
        pod, owner, target = trial.pod, trial.owner, trial.target
        assert pod.node_name is not None
        self.ledger.reserve(target.name, pod.spec.requests)
        self.moved.add(id(pod))
        return Move(
            pod,
            owner.workload,
            pod.node_name,
            target.name,
            self.domains(owner.profile, pod.node_name),
            self.domains(owner.profile, target.name),
            trial.reason,
        )

    def counted_others(self, m: Members) -> dict[int, list[Members]]:
        """Per wanted constraint of ``m``, the other workloads' members its selector counts
        (judged by one pod of each, ``Members.labels``: a pod judged wrongly is only a trial
        that fails)."""
        hit = self._counted_others.get(id(m))
        if hit is None:
            hit = {}
            for i in self.wanted(m.profile):
                selector = m.profile.constraints[i].selector
                others = [
                    x
                    for x in self._could_count(m.profile.namespace, selector)
                    if x is not m
                    and x.workload != m.workload
                    and self.index.counts_pod(selector, x.labels)
                ]
                if others:
                    hit[i] = others
            self._counted_others[id(m)] = hit
        return hit

    def _could_count(self, namespace: str, selector: LabelSelector | None) -> list[Members]:
        """The namespace's members a selector might count: with an In requirement, only those
        whose labels hold one of its values (then checked), else all of them."""
        members = self.members_by_namespace.get(namespace, [])
        req = narrowing(selector)
        if req is None:
            return members
        by_pair = self._members_by_label.get(namespace)
        if by_pair is None:
            by_pair = self._members_by_label[namespace] = defaultdict(list)
            for x in members:
                for pair in x.labels.items():
                    by_pair[pair].append(x)
        found = {id(x): x for value in req.values for x in by_pair.get((req.key, value), ())}
        return list(found.values())

    def foreign(self, m: Members) -> list[tuple[Members, Pod, str]]:
        """Other workloads' pods that one of ``m``'s failing constraints counts, in the domains
        where ``m``'s pods fail it: moving one of those relieves ``m`` as well, sometimes more
        (it may fix its own workload too) and sometimes as the only way."""
        counted = self.counted_others(m)
        if not counted:
            return []
        tables = self.tables_of[id(m)]
        crowded: dict[int, set[str]] = {}
        judge = self.judge(m)
        for node_name, pods in self.positions(m).items():
            failing = _fails(judge, self.node_labels[node_name], node_name) if pods else None
            if failing is None:
                continue
            c = m.profile.constraints[failing[0]]
            value = self.nodes[node_name].labels.get(c.key)
            if value is not None:  # a node without the key: only moving the pod itself helps
                crowded.setdefault(failing[0], set()).add(value)
        found: list[tuple[tuple[object, ...], Members, Pod, str]] = []
        for i, domains in crowded.items():
            c = m.profile.constraints[i]
            node_domain = tables[i].space.node_domain
            for x in counted.get(i, ()):
                for node_name, pods in self.positions(x).items():
                    domain = node_domain.get(node_name)
                    if domain not in domains or not pods:
                        continue
                    reason = (
                        f"counted by the {c.key} spread of {m.workload}: "
                        f"{c.key} {domain} holds {tables[i].get(domain)} of its pods"
                    )
                    for pod in pods:
                        if id(pod) not in self.moved and id(pod) not in self.skipped:
                            key = (pod.priority, pinned(pod), -(pod.created or 0.0), pod.name)
                            found.append((key, x, pod, reason))
        found.sort(key=lambda item: item[0])
        return [(x, pod, reason) for _, x, pod, reason in found[:FOREIGN_TRIALS]]

    def positions(self, m: Members) -> Mapping[str, Sequence[Pod]]:
        """The members' pods by node, as moves so far left them."""
        return self._moved_members.get(id(m)) or m.by_node

    def _reposition(self, m: Members, pod: Pod, source: str, target: str) -> None:
        positions = self._moved_members.get(id(m))
        if positions is None:
            positions = {n: list(p) for n, p in m.by_node.items()}
            self._moved_members[id(m)] = positions
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


def _fails(judge: list[_Rule], labels: Labels, node_name: str) -> tuple[int, bool] | None:
    """The first rule members on this node fail (the rule's ceilings), and whether they are
    counted in it; or None."""
    for i, key, counts, node_domain, _, ceiling, ceiling_counted in judge:
        value = labels.get(key)
        if value is None:
            return i, False
        if node_name in node_domain:
            if counts.get(value, 0) > ceiling_counted:
                return i, True
        elif counts.get(value, 0) > ceiling:
            return i, False
    return None


def _failing(judge: list[_Rule], labels: Labels, node_name: str) -> list[int]:
    """Every rule members on this node fail (``_fails`` stops at the first)."""
    out = []
    for i, key, counts, node_domain, _, ceiling, ceiling_counted in judge:
        value = labels.get(key)
        if value is None or counts.get(value, 0) > (
            ceiling_counted if node_name in node_domain else ceiling
        ):
            out.append(i)
    return out


def _eligible(
    sim: _Simulation,
    pod: Pod,
    *,
    workload: WorkloadRef,
    within_limits: bool,
    now: float | None,
    history: Mapping[WorkloadRef, float],
    record: bool,
) -> tuple[bool, str]:
    """Whether the pod may be tried this pass, and what would defer its eviction. ``record``
    keeps protected and budget-blocked pods among the skipped (a group's own pods)."""
    reason = protection(pod, sim.policy, now)
    if reason:
        if record:
            sim.skipped[id(pod)] = Skip(pod, workload, SkipKind.PROTECTED, reason)
        return False, ""
    check = sim.budgets.check(pod)
    if check.verdict is BudgetVerdict.BLOCKED:
        if record:
            sim.skipped[id(pod)] = Skip(pod, workload, SkipKind.BLOCKED, check.reason)
        return False, ""
    deferral = sim.deferral(pod, workload, now, history)
    return not (within_limits and deferral), deferral


def _step(
    sim: _Simulation,
    m: Members,
    within_limits: bool,
    now: float | None,
    history: Mapping[WorkloadRef, float],
) -> tuple[Move, str] | None:
    """The next eviction for ``m``, and what defers it; None when no eviction helps.

    The first of ``m``'s own misplaced pods (most crowded first) whose move helps. Where
    ``m``'s selectors also count other workloads' pods in its crowded domains, moving one of
    those may help more (it may fix its own workload too) or be the only way: then every
    candidate, ``m``'s own first, is tried and the one that brings the groups it touches closest
    to balance wins (the earliest on ties).
    """
    foreign = sim.foreign(m)
    measure = bool(foreign)
    best: tuple[int, Members, Pod, str, str] | None = None  # measured: the best move so far
    for pod, failing in sim.candidates(m):
        ok, deferral = _eligible(
            sim,
            pod,
            workload=m.workload,
            within_limits=within_limits,
            now=now,
            history=history,
            record=True,
        )
        if not ok:
            continue
        assert pod.node_name is not None
        reason = sim.verdict(m, pod.node_name, failing).reason
        trial = sim.trial(m, m, pod, reason, measure=measure)
        if trial is None:
            continue
        if isinstance(trial, Skip):
            sim.refuse(m, pod, trial)
            continue
        if not measure:
            return sim.keep(trial), deferral
        sim.undo(trial)
        if best is None or trial.gain > best[0]:
            best = (trial.gain, m, pod, reason, deferral)
    for owner, pod, reason in foreign:
        ok, deferral = _eligible(
            sim,
            pod,
            workload=owner.workload,
            within_limits=within_limits,
            now=now,
            history=history,
            record=False,
        )
        if not ok:
            continue
        trial = sim.trial(m, owner, pod, reason, measure=True)
        if isinstance(trial, Trial):
            sim.undo(trial)
            if best is None or trial.gain > best[0]:
                best = (trial.gain, owner, pod, reason, deferral)
    if best is None:
        return None
    _, owner, pod, reason, deferral = best
    trial = sim.trial(m, owner, pod, reason, measure=True)
    assert isinstance(trial, Trial)  # the state it was judged in, restored exactly
    return sim.keep(trial), deferral


def _compound(
    sim: _Simulation,
    m: Members,
    within_limits: bool,
    now: float | None,
    history: Mapping[WorkloadRef, float],
) -> list[tuple[Move, str]]:
    """Two moves judged as one step, when no single move helps ``m``: one of ``m``'s pods
    whose move was refused for breaking another workload's spread, then one of that
    workload's pods that mends it (a fix that needs a second workload to follow). Kept when
    the pair, as a whole, keeps the step's rule; [] when no pair does."""
    refused = sim.refused(m)
    judge = sim.judge(m)
    for pod in refused[:FOREIGN_TRIALS]:
        assert pod.node_name is not None
        failing = _fails(judge, sim.node_labels[pod.node_name], pod.node_name)
        ok, deferral = _eligible(
            sim,
            pod,
            workload=m.workload,
            within_limits=within_limits,
            now=now,
            history=history,
            record=False,
        )
        if failing is None or not ok:
            continue
        reason = sim.verdict(m, pod.node_name, failing).reason
        first = sim.apply_move(m, pod)
        if first is None:
            continue
        followers = [
            (x, follower)
            for x in sim.affected(m, pod).values()
            if x is not m and sim.violators(x)
            for follower, _ in sim.candidates(x, refused_too=True)[:FOREIGN_TRIALS]
        ]
        sim.undo_move(first)
        for x, follower in followers:
            pair = _pair(
                sim,
                m,
                lead=(pod, reason, deferral),
                x=x,
                follower=follower,
                within_limits=within_limits,
                now=now,
                history=history,
            )
            if pair:
                return pair
    return []


def _pair(
    sim: _Simulation,
    m: Members,
    *,
    lead: tuple[Pod, str, str],
    x: Members,
    follower: Pod,
    within_limits: bool,
    now: float | None,
    history: Mapping[WorkloadRef, float],
) -> list[tuple[Move, str]]:
    pod, reason, deferral = lead
    ok, follower_deferral = _eligible(
        sim,
        follower,
        workload=x.workload,
        within_limits=within_limits,
        now=now,
        history=history,
        record=False,
    )
    if not ok:
        return []
    affected = sim.affected(m, pod) | sim.affected(x, follower)
    affected[id(m)] = m
    before = {k: sim.tally(y) for k, y in affected.items()}
    changing = {tid for tid, _ in sim.tables_counting(pod)} | {
        tid for tid, _ in sim.tables_counting(follower)
    }
    skews = sim._skews(affected.values(), before, changing)
    first = sim.apply_move(m, pod)
    if first is None:
        return []
    second = sim.apply_move(x, follower)
    if second is not None:
        after = {k: sim.tally(y) for k, y in affected.items()}
        if not sim._harm(m, affected, before, after, skews) and after[id(m)][0] < before[id(m)][0]:
            lead_move = sim.keep_applied(first, reason)
            follow_reason = (
                f"follows {pod.name}: its move would otherwise break the spread of {x.workload}"
            )
            follow_move = sim.keep_applied(second, follow_reason)
            if within_limits:  # both this run, or neither
                sim.commit(lead_move)
                follower_deferral = sim.deferral(follower, x.workload, now, history)
                sim.uncommit(lead_move)
                if follower_deferral:
                    sim.moved.discard(id(pod))
                    sim.moved.discard(id(follower))
                    sim.undo_move(second)
                    sim.undo_move(first)
                    return []
            return [(lead_move, deferral), (follow_move, follower_deferral)]
        sim.undo_move(second)
    sim.undo_move(first)
    return []


def _run(
    sim: _Simulation,
    order: list[Members],
    within_limits: bool,
    now: float | None,
    history: Mapping[WorkloadRef, float],
) -> list[Move]:
    """Steps for each member in turn until none helps; a member is tried again once the counts
    its steps depend on have changed (its own tables or positions, or, when a move was refused
    for what it would do to another group, any kept move)."""
    moves: list[Move] = []
    failed: dict[int, tuple[tuple[int, ...], int]] = {}  # id(m) -> its stamp and moves then
    progress = True
    while progress:
        progress = False
        for m in order:
            last = failed.get(id(m))
            if last is not None:
                stamp, kept = last
                if stamp == sim.stamp(m) and (kept == len(moves) or not sim.refused(m)):
                    continue
                sim.forget_refusals(m)
            while True:
                step = _step(sim, m, within_limits, now, history)
                steps = (
                    [step] if step is not None else _compound(sim, m, within_limits, now, history)
                )
                if not steps:
                    break
                progress = True
                sim.forget_refusals(m)  # the counts its refused pods were judged by changed
                for move, deferral in steps:
                    if within_limits:
                        sim.commit(move)
                        moves.append(move)
                    else:
                        moves.append(
                            replace(
                                move,
                                state=StepState.DEFERRED,
                                deferred_by=deferral
                                or "planned after this run's moves take effect",
                            )
                        )
            failed[id(m)] = (sim.stamp(m), len(moves))
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
    back this run, with the reason: a replacement not Ready yet, a back-off).

    The greedy planner plans every problem. Where the violated workloads, and the workloads
    their selectors count, hold at most ``EXACT_MOVABLE`` movable pods, an exhaustive search
    looks for fewer evictions that leave every group balanced; its plan is used when it is
    smaller than the greedy one, or balances what the greedy one does not."""
    history = history or {}
    held = held or {}
    greedy = _greedy_plan(analysis, policy, now, history, held)
    violations = analysis.violations
    if not violations:
        return greedy
    if sum(g.members.count for g in violations) > 4 * EXACT_MOVABLE:  # before a copy
        return replace(
            greedy,
            method_note=f"greedy (more than {EXACT_MOVABLE} movable pods: no exhaustive search)",
        )
    sim = _Simulation(analysis, policy)
    sim.held = held
    problem = _movable(sim, _violated_order(sim, analysis), now)
    if problem is None:
        return replace(
            greedy,
            method_note=f"greedy (more than {EXACT_MOVABLE} movable pods: no exhaustive search)",
        )
    movable, pool = problem
    greedy_moves = len(greedy.moves) + len(greedy.deferred)
    balanced = all(o.fixable for o in greedy.outcomes)
    limit = greedy_moves - 1 if balanced else len(movable)
    space = _ExactSpace(sim, movable, pool)
    budget = min(EXACT_BUDGET, EXACT_WORK // max(1, len(sim.nodes)))
    found = fewest_moves(space, limit, budget)
    if found.moves is None:
        if not found.complete:
            note = f"greedy (the exhaustive search gave up after {found.applied} trial moves)"
        elif balanced:
            note = (
                f"greedy; an exhaustive search over {len(movable)} movable pods found "
                f"no plan with fewer than {greedy_moves} eviction(s)"
            )
        else:
            note = (
                f"greedy; an exhaustive search over {len(movable)} movable pods found no plan "
                f"that balances every group within {limit} eviction(s)"
            )
        return replace(greedy, method_note=note)
    return _sequence_plan(
        analysis,
        policy,
        now=now,
        history=history,
        held=held,
        sequence=[movable[i] for i in found.moves],
        note=f"exact: the fewest evictions that balance every group ({len(found.moves)}), by "
        f"exhaustive search over {len(movable)} movable pods",
    )


def _violated_order(sim: _Simulation, analysis: Analysis) -> list[Members]:
    violated = {id(g.members) for g in analysis.violations}
    return sorted(
        (m for m in analysis.members if id(m) in violated),
        key=lambda m: (-sim.violators(m), m.workload),
    )


def _greedy_plan(
    analysis: Analysis,
    policy: RebalancePolicy,
    now: float | None,
    history: Mapping[WorkloadRef, float],
    held: Mapping[WorkloadRef, str],
) -> Plan:
    sim = _Simulation(analysis, policy)
    sim.held = held
    order = _violated_order(sim, analysis)
    planned = _run(sim, order, True, now, history)
    after_run = {
        (id(g.members), g.index): sim.violators(g.members, g.index) for g in analysis.violations
    }
    budgets_used = sim.budgets.used()
    deferred = _run(sim, order, False, now, history)
    return _finish(
        analysis,
        sim,
        planned=planned,
        deferred=deferred,
        after_run=after_run,
        budgets_used=budgets_used,
        method="greedy",
    )


def _finish(
    analysis: Analysis,
    sim: _Simulation,
    *,
    planned: list[Move],
    deferred: list[Move],
    after_run: Mapping[tuple[int, int], int],
    budgets_used: Mapping[str, int],
    method: str,
    note: str = "",
) -> Plan:
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
    return Plan(
        tuple(planned),
        tuple(deferred),
        tuple(skipped),
        tuple(outcomes),
        budgets_used,
        method,
        note,
    )


# The exhaustive search: at most this many movable pods, and this many simulated moves, fewer
# on large clusters (a predicted landing costs time in proportion to the nodes).
EXACT_MOVABLE = 14
EXACT_BUDGET = 20_000
EXACT_WORK = 2_000_000  # simulated moves times nodes: about a second at most


def _movable(
    sim: _Simulation, order: list[Members], now: float | None
) -> tuple[list[tuple[Members, Pod]], list[Members]] | None:
    """The pods an exhaustive search may move, misplaced pods first: those of the violated
    workloads, of the workloads their selectors count and of those whose selectors count
    them, and so on; neither protected nor blocked by a budget. None when there are more than
    ``EXACT_MOVABLE`` (other pods change no count that matters: an evicted pod holds its
    resources until it is gone)."""
    pool: dict[int, Members] = {id(m): m for m in order}
    work = list(order)
    while work:  # closed under both relations: a move there may touch a group here
        m = work.pop()
        related = [x for others in sim.counted_others(m).values() for x in others]
        first = next(p for pods in m.by_node.values() for p in pods)
        related += [x for tid, _ in sim.tables_counting(first) for x in sim.users.get(tid, ())]
        for x in related:
            if id(x) not in pool:
                pool[id(x)] = x
                work.append(x)
        if sum(x.count for x in pool.values()) > 4 * EXACT_MOVABLE:
            return None
    misplaced: list[tuple[Members, Pod]] = []
    rest: list[tuple[Members, Pod]] = []
    for x in sorted(pool.values(), key=lambda x: x.workload):
        judge = sim.judge(x)
        for node_name, pods in x.by_node.items():
            bad = _fails(judge, sim.node_labels[node_name], node_name) is not None
            for pod in pods:
                if protection(pod, sim.policy, now):
                    continue
                if sim.budgets.check(pod).verdict is BudgetVerdict.BLOCKED:
                    continue
                (misplaced if bad else rest).append((x, pod))
    found = misplaced + rest
    return (found, list(pool.values())) if len(found) <= EXACT_MOVABLE else None


class _ExactSpace:
    """The simulation as a search space (search.Space): moving a pod evicts it and lands its
    replacement where the planner predicts; the goal is every touched group balanced."""

    def __init__(
        self, sim: _Simulation, movable: list[tuple[Members, Pod]], pool: list[Members]
    ) -> None:
        self.sim = sim
        self.movable = movable
        watched: dict[int, Members] = {id(x): x for x in pool}
        for owner, pod in movable:
            watched[id(owner)] = owner
            for tid, _ in sim.tables_counting(pod):
                for x in sim.users.get(tid, ()):
                    watched.setdefault(id(x), x)
        self.watched = list(watched.values())
        self.moved = [False] * len(movable)
        self.stack: list[tuple[int, _Applied]] = []

    def items(self) -> list[int]:
        return [i for i, gone in enumerate(self.moved) if not gone]

    def apply(self, item: int) -> bool:
        owner, pod = self.movable[item]
        applied = self.sim.apply_move(owner, pod)
        if applied is None:
            return False
        self.moved[item] = True
        self.stack.append((item, applied))
        return True

    def undo(self) -> None:
        item, applied = self.stack.pop()
        self.sim.undo_move(applied)
        self.moved[item] = False

    def done(self) -> bool:
        return all(self.sim.violators(x) == 0 for x in self.watched)

    def lower_bound(self) -> int | None:
        """The most moves any one violated constraint needs on its own (at least one)."""
        sim = self.sim
        bound = 0
        for x in self.watched:
            for i in sim.tally(x)[1]:
                c = x.profile.constraints[i]
                table = sim.tables_of[id(x)][i]
                counts = [table.get(d) for d in table.space.domain_nodes]
                moves = minimum_moves(counts, c.max_skew, c.min_domains)
                bound = max(bound, moves or 1)
        return bound

    def key(self) -> frozenset[tuple[int, str]]:
        return frozenset((item, applied.target.name) for item, applied in self.stack)


def _sequence_plan(
    analysis: Analysis,
    policy: RebalancePolicy,
    *,
    now: float | None,
    history: Mapping[WorkloadRef, float],
    held: Mapping[WorkloadRef, str],
    sequence: list[tuple[Members, Pod]],
    note: str,
) -> Plan:
    """A plan that makes these moves in this order: this run's until the first that a cap,
    cooldown or budget defers, later runs' from there on."""
    sim = _Simulation(analysis, policy)
    sim.held = held
    order = _violated_order(sim, analysis)
    for m in order:  # the violated workloads' misplaced pods that may not move
        for pod, _ in sim.candidates(m):
            _eligible(
                sim,
                pod,
                workload=m.workload,
                within_limits=False,
                now=now,
                history=history,
                record=True,
            )
    planned: list[Move] = []
    deferred: list[Move] = []
    after_run: dict[tuple[int, int], int] | None = None
    budgets_used: Mapping[str, int] = {}
    for owner, pod in sequence:
        assert pod.node_name is not None
        deferral = "" if deferred else sim.deferral(pod, owner.workload, now, history)
        if (deferred or deferral) and after_run is None:
            after_run = _violators_now(sim, analysis)
            budgets_used = sim.budgets.used()
        failing = _fails(sim.judge(owner), sim.node_labels[pod.node_name], pod.node_name)
        if failing is not None:
            reason = sim.verdict(owner, pod.node_name, failing).reason
        else:
            reason = "counted by a violated group's spread: moving it lets that group be balanced"
        move = sim.force(owner, pod, reason)
        if after_run is None:
            sim.commit(move)
            planned.append(move)
        else:
            deferred.append(
                replace(
                    move,
                    state=StepState.DEFERRED,
                    deferred_by=deferral or "planned after this run's moves take effect",
                )
            )
    if after_run is None:
        after_run = _violators_now(sim, analysis)
        budgets_used = sim.budgets.used()
    return _finish(
        analysis,
        sim,
        planned=planned,
        deferred=deferred,
        after_run=after_run,
        budgets_used=budgets_used,
        method="exact",
        note=note,
    )


def _violators_now(sim: _Simulation, analysis: Analysis) -> dict[tuple[int, int], int]:
    return {
        (id(g.members), g.index): sim.violators(g.members, g.index) for g in analysis.violations
    }


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

"""The planner's simulated counts: working copies of the count tables and of where the
members' pods stand, changed move by move and undone exactly, and who is misplaced in them.

Every judgement goes through the Filter kernel (``SpreadRule`` on ``CountTable``), prepared
once per group and read against the counts as they stand. State stamps name each state of a
table copy or of a group's positions, so the misplaced-pods tally is recomputed only for the
groups a move changed, and an undone move puts the old stamps back.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from respread.analysis.groups import Analysis, Members, minimum_moves
from respread.core.kernel import Ceilings, CountTable, SpreadRule, Verdict
from respread.core.model import Labels, LabelSelector, Node, Pod, When
from respread.core.selectors import narrowing
from respread.scheduling.spread import Profile, SpreadIndex

# One constraint as ``SimCounts.judge`` prepares it for the counts as they stand: index,
# topology key, the rule's ceilings, and the eligible nodes' domains (empty when the members
# are not counted).
Rule = tuple[int, str, Ceilings, Mapping[str, str]]

# The same before the counts are read: the rule, its table, eligible nodes' domains (or none).
_RuleShape = tuple[SpreadRule, CountTable, Mapping[str, str]]

# A table of ``SimCounts.by_namespace``: its place there, id, selector, the table itself.
_TableEntry = tuple[int, int, LabelSelector | None, CountTable]

# The stamps a change touched, as they were: what undoing it puts back.
Saved = dict[int, int | None]

# Members misplaced on one node: the node, its pods of the members, and the first rule they
# fail there with whether they are counted in it.
Misplaced = tuple[str, Sequence[Pod], tuple[int, bool]]


def fails(judge: list[Rule], labels: Labels, node_name: str) -> tuple[int, bool] | None:
    """The first rule members on this node fail (the rule's ceilings), and whether they are
    counted in it; or None."""
    for i, key, ceilings, node_domain in judge:
        counted = node_name in node_domain  # never a node without the key
        if ceilings.fails(labels.get(key), counted):
            return i, counted
    return None


def failing(judge: list[Rule], labels: Labels, node_name: str) -> list[int]:
    """Every rule members on this node fail (``fails`` stops at the first)."""
    return [
        i
        for i, key, ceilings, node_domain in judge
        if ceilings.fails(labels.get(key), node_name in node_domain)
    ]


class SimCounts:
    """Count tables and positions of one planning run, with undo."""

    def __init__(self, analysis: Analysis, whens: Iterable[When]) -> None:
        self.index: SpreadIndex = analysis.index
        self.whens = frozenset(whens)
        self.nodes: dict[str, Node] = self.index.nodes
        self.node_labels: dict[str, Labels] = {name: n.labels for name, n in self.nodes.items()}
        # Working copies of every count table any analysed profile uses, shared like the originals.
        self._copies: dict[int, CountTable] = {}
        self.tables_of: dict[int, tuple[CountTable, ...]] = {}
        self.users: dict[int, list[Members]] = defaultdict(list)  # table id -> members using it
        self.by_namespace: dict[str, list[tuple[int, Profile, int, CountTable]]] = defaultdict(list)
        self.members_by_namespace: dict[str, list[Members]] = defaultdict(list)
        for m in analysis.members:
            self.register(m)
            self.members_by_namespace[m.profile.namespace].append(m)
        # where members stand once one of theirs moved (copied then); the others stand as found
        self._moved_members: dict[int, dict[str, list[Pod]]] = {}
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
        self._misplaced: dict[int, tuple[tuple[int, ...], list[Misplaced]]] = {}

    def register(self, m: Members) -> None:
        """Give ``m`` working copies of its profile's tables (shared where the originals are)."""
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

    # ---- changing the counts -----------------------------------------------------------

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
        """``delta`` pods on ``node`` in each of ``tables`` that holds the node."""
        changed = set()
        for tid, table in tables:
            domain = table.space.node_domain.get(node)
            if domain is not None:
                table.add(domain, delta)
                changed.add(tid)
                self._clock += 1
                self._stamps[tid] = self._clock
        return changed

    def save(self, keys: Iterable[int]) -> Saved:
        """The stamps of these tables or members as they are, for ``restore``."""
        return {k: self._stamps.get(k) for k in keys}

    def restore(self, saved: Saved) -> None:
        for key, stamp in saved.items():
            if stamp is None:
                self._stamps.pop(key, None)
            else:
                self._stamps[key] = stamp

    def stamp(self, m: Members) -> tuple[int, ...]:
        stamps = self._stamps
        return (stamps.get(id(m), 0), *(stamps.get(id(t), 0) for t in self.tables_of[id(m)]))

    def positions(self, m: Members) -> Mapping[str, Sequence[Pod]]:
        """The members' pods by node, as moves so far left them."""
        return self._moved_members.get(id(m)) or m.by_node

    def reposition(self, m: Members, pod: Pod, source: str, target: str) -> None:
        positions = self._moved_members.get(id(m))
        if positions is None:
            positions = {n: list(p) for n, p in m.by_node.items()}
            self._moved_members[id(m)] = positions
        positions[source].remove(pod)
        positions.setdefault(target, []).append(pod)
        self._clock += 1
        self._stamps[id(m)] = self._clock

    # ---- judging -----------------------------------------------------------------------

    def wanted(self, profile: Profile) -> list[int]:
        hit = self._wanted.get(id(profile))
        if hit is None:
            whens = self.whens
            hit = [i for i, c in enumerate(profile.constraints) if c.when in whens]
            self._wanted[id(profile)] = hit
        return hit

    def judge(self, m: Members, only: int | None = None) -> list[Rule]:
        """The members' rules, ready to run node by node over the counts as they stand now (a
        global minimum does not change while nodes are judged): this runs for every node of
        every candidate workload after every step."""
        rules = self._rules.get((id(m), only))
        if rules is None:
            profile = m.profile
            tables = self.tables_of[id(m)]
            selected = self.selected(m)
            rules = []
            for i in self.wanted(profile) if only is None else [only]:
                node_domain = tables[i].space.node_domain if selected[i] else {}
                rules.append((self.index.rules(profile)[i], tables[i], node_domain))
            self._rules[(id(m), only)] = rules
        return [
            (r.constraint, r.key, r.ceilings(table), node_domain) for r, table, node_domain in rules
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
        return self.index.rules(m.profile)[index].verdict(table, value, counted)

    def violators(self, m: Members, constraint: int | None = None) -> int:
        """The members' misplaced pods: under any wanted constraint, or under one."""
        total, each = self.tally(m)
        return total if constraint is None else each.get(constraint, 0)

    def tally(self, m: Members) -> tuple[int, Mapping[int, int]]:
        """The members' misplaced pods, and per wanted constraint those misplaced under it."""
        stamp = self.stamp(m)
        hit = self._violators.get(id(m))
        if hit is not None and hit[0] == stamp:
            return hit[1]
        found = self._count_violators(m)
        self._violators[id(m)] = (stamp, found)
        return found

    def _count_violators(self, m: Members) -> tuple[int, Mapping[int, int]]:
        found = self.misplaced(m)
        total = sum(len(pods) for _, pods, _ in found)
        if not found or len(self.wanted(m.profile)) == 1:
            return total, ({found[0][2][0]: total} if total else {})
        each: dict[int, int] = {}
        judge = self.judge(m)
        node_labels = self.node_labels
        for node_name, pods, _ in found:
            for i in failing(judge, node_labels[node_name], node_name):
                each[i] = each.get(i, 0) + len(pods)
        return total, each

    def misplaced(self, m: Members) -> list[Misplaced]:
        """The nodes where members sit that the scheduler would not place there again, with
        the first rule each fails; for the state as it stands (kept until it changes)."""
        stamp = self.stamp(m)
        hit = self._misplaced.get(id(m))
        if hit is not None and hit[0] == stamp:
            return hit[1]
        judge = self.judge(m)
        node_labels = self.node_labels
        found = []
        for node_name, pods in self.positions(m).items():
            if pods:
                first = fails(judge, node_labels[node_name], node_name)
                if first is not None:
                    found.append((node_name, pods, first))
        self._misplaced[id(m)] = (stamp, found)
        return found

    def skews(
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

    # ---- who counts whom ---------------------------------------------------------------

    def affected(self, owner: Members, pod: Pod) -> dict[int, Members]:
        """The members whose counts or positions moving the pod changes."""
        found = {id(x): x for tid, _ in self.tables_counting(pod) for x in self.users.get(tid, ())}
        found[id(owner)] = owner
        return found

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

    def domains(self, profile: Profile, node: str) -> tuple[tuple[str, str], ...]:
        """The node's value of each of the profile's topology keys ("" where it has none)."""
        labels = self.node_labels[node]
        keys = dict.fromkeys(c.key for c in profile.constraints)
        return tuple((k, labels.get(k, "")) for k in keys)

"""The eviction planner's tallies on the what-if working counts (analysis/whatif.py): every
analysed group judged under the policy's wanted constraints at once (who is misplaced, by
which rule, how far each group is from balance, who counts whom), each kept until the state
it was found in changes (the working counts' stamps say when).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from respread.analysis.groups import Analysis, Members, minimum_moves
from respread.analysis.whatif import WorkingCounts
from respread.core.kernel import Ceilings, CountTable, SpreadRule, Verdict
from respread.core.model import Labels, LabelSelector, Pod, When
from respread.core.selectors import narrowing
from respread.scheduling.spread import Profile

# One constraint as ``SimCounts.judge`` prepares it for the counts as they stand: index,
# topology key, the rule's ceilings, and the eligible nodes' domains (empty when the members
# are not counted).
Rule = tuple[int, str, Ceilings, Mapping[str, str]]

# The same before the counts are read: the rule, its table, eligible nodes' domains (or none).
_RuleShape = tuple[SpreadRule, CountTable, Mapping[str, str]]

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


class SimCounts(WorkingCounts):
    """The working counts with every analysed group judged under the wanted constraints: who
    is misplaced, by which rule, and how far each group is from balance (the eviction
    planner's measures), each kept until the state it was found in changes."""

    def __init__(self, analysis: Analysis, whens: Iterable[When]) -> None:
        super().__init__(analysis)
        self.whens = frozenset(whens)
        for namespace in self.members_by_namespace:
            self.namespace_tables(namespace)
        self._wanted: dict[int, list[int]] = {}
        self._selected: dict[Members, tuple[bool, ...]] = {}
        self._rules: dict[tuple[Members, int | None], list[_RuleShape]] = {}
        # judge's last answer for each, with its tables' stamps then (kept until they change)
        self._judged: dict[tuple[Members, int | None], tuple[list[int], list[Rule]]] = {}
        self._counted_others: dict[Members, dict[int, list[Members]]] = {}
        self._members_by_label: dict[str, dict[tuple[str, str], list[Members]]] = {}
        self._violators: dict[Members, tuple[tuple[int, ...], tuple[int, Mapping[int, int]]]] = {}
        self._misplaced: dict[Members, tuple[tuple[int, ...], list[Misplaced]]] = {}

    def stamp(self, m: Members) -> tuple[int, ...]:
        """The state of the members' positions and tables."""
        stamps, moved = self._stamps, self._moved.get(m)
        known = self._profile_tables.get(id(m.profile))  # tables(), inlined: asked every step
        tables = known[1] if known is not None else self.tables(m.profile)
        if len(tables) == 1:  # most profiles have one constraint
            return (0 if moved is None else moved.stamp, stamps.get(tables[0], 0))
        return (0 if moved is None else moved.stamp, *[stamps.get(t, 0) for t in tables])

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
        every candidate workload after every step; the same list until their tables change,
        not to be changed."""
        rules = self._rules.get((m, only))
        if rules is None:
            profile = m.profile
            tables = self.tables(profile)
            selected = self.selected(m)
            rules = []
            for i in self.wanted(profile) if only is None else [only]:
                node_domain = tables[i].space.node_domain if selected[i] else {}
                rules.append((self.index.rules(profile)[i], tables[i], node_domain))
            self._rules[(m, only)] = rules
        stamps = self._stamps
        state = [stamps.get(table, 0) for _, table, _ in rules]
        hit = self._judged.get((m, only))
        if hit is not None and hit[0] == state:  # the same counts: the same ceilings
            return hit[1]
        judged = [
            (r.constraint, r.key, r.ceilings(table), node_domain) for r, table, node_domain in rules
        ]
        self._judged[(m, only)] = (state, judged)
        return judged

    def selected(self, m: Members) -> tuple[bool, ...]:
        """Whether each constraint's selector counts the members (one answer for all of them:
        members share a profile, which fixes every label their selectors read)."""
        hit = self._selected.get(m)
        if hit is None:
            counts_pod, labels = self.index.counts_pod, m.labels
            hit = tuple(counts_pod(c.selector, labels) for c in m.profile.constraints)
            self._selected[m] = hit
        return hit

    def verdict(self, m: Members, node_name: str, failing: tuple[int, bool]) -> Verdict:
        index, counted = failing
        table = self.tables(m.profile)[index]
        value = self.node_labels[node_name].get(m.profile.constraints[index].key)
        return self.index.rules(m.profile)[index].verdict(table, value, counted)

    def violators(self, m: Members, constraint: int | None = None) -> int:
        """The members' misplaced pods: under any wanted constraint, or under one."""
        total, each = self.tally(m)
        return total if constraint is None else each.get(constraint, 0)

    def tally(self, m: Members) -> tuple[int, Mapping[int, int]]:
        """The members' misplaced pods, and per wanted constraint those misplaced under it."""
        stamp = self.stamp(m)
        hit = self._violators.get(m)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        found = self._count_violators(m)
        self._violators[m] = (stamp, found)
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
        hit = self._misplaced.get(m)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        positions = self.positions(m)
        left = [node for node, pods in positions.items() if pods]
        first: dict[str, tuple[int, bool]] = {}  # node -> the first rule its members fail
        for i, key, ceilings, node_domain in self.judge(m):
            for node in ceilings.rejections(left, self.node_labels, key, node_domain):
                first[node] = (i, node in node_domain)
            if first:
                left = [node for node in left if node not in first]
        found = [(node, positions[node], first[node]) for node in positions if node in first]
        self._misplaced[m] = (stamp, found)
        return found

    def skews(
        self,
        members: Iterable[Members],
        tallies: Mapping[Members, tuple[int, Mapping[int, int]]],
        changing: Iterable[CountTable],
    ) -> dict[tuple[Members, int], int]:
        """The skew of each violated group whose counts the move changes, before it."""
        changed = set(changing)
        out = {}
        for x in members:
            tables = self.tables(x.profile)
            for i in tallies[x][1]:
                table = tables[i]
                if table in changed:
                    out[(x, i)] = table.skew(x.profile.constraints[i].min_domains)
        return out

    def distance(self, members: Iterable[Members]) -> int:
        """How far these groups are from balance: the sum of their exact minimum moves (the
        misplaced pods, for a group moves alone cannot fix)."""
        total = 0
        for x in members:
            profile = x.profile
            for i in self.wanted(profile):
                c = profile.constraints[i]
                table = self.tables(profile)[i]
                counts = [table.get(d) for d in table.space.domain_nodes]
                moves = minimum_moves(counts, c.max_skew, c.min_domains)
                total += self.violators(x, i) if moves is None else moves
        return total

    # ---- who counts whom ---------------------------------------------------------------

    def affected(self, owner: Members, pod: Pod) -> dict[Members, None]:
        """The members whose counts or positions moving the pod changes (an ordered set)."""
        found = dict.fromkeys(x for t in self.tables_counting(pod) for x in self.users(t))
        found[owner] = None
        return found

    def counted_others(self, m: Members) -> dict[int, list[Members]]:
        """Per wanted constraint of ``m``, the other workloads' members its selector counts
        (judged by one pod of each, ``Members.labels``: a pod judged wrongly is only a trial
        that fails)."""
        hit = self._counted_others.get(m)
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
            self._counted_others[m] = hit
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
        return list(
            dict.fromkeys(x for value in req.values for x in by_pair.get((req.key, value), ()))
        )

    def domains(self, profile: Profile, node: str) -> tuple[tuple[str, str], ...]:
        """The node's value of each of the profile's topology keys ("" where it has none)."""
        labels = self.node_labels[node]
        keys = dict.fromkeys(c.key for c in profile.constraints)
        return tuple((k, labels.get(k, "")) for k in keys)

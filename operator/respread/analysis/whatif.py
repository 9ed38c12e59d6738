"""The what-if simulation every remedy plans on: working copies of the analysed count tables
and of where groups' pods stand, changed a pod at a time and undone exactly, and the misplaced
pods judged on them with the Filter kernel (``SpreadRule`` and its ``Ceilings``).

``WorkingCounts`` is the state. A table is copied when first used (shared where the originals
are), a group's positions when one of its pods first moves. Every change goes into a journal
that ``undo`` replays backwards to any ``mark``, and takes a fresh stamp from one clock, so a
stamp names exactly one state of a table or of a group's positions: a cache keyed by stamps is
never stale, and an undone change puts the old stamps back. On it:

- ``GroupCheck``: one group (members, one constraint), its pods tallied by node class and the
  misplaced among them judged class by class (the deletion-cost order's checks, a surge's
  workload);
- ``Crowding``: how far above their global minimum a node's domains are;
- and, in analysis/tally.py, ``SimCounts``: every analysed group judged under the policy's
  wanted constraints at once, the tallies the eviction planner compares its moves by.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from respread.analysis.groups import Analysis, Members
from respread.core.kernel import Ceilings, CountTable, SpreadRule
from respread.core.model import Labels, LabelSelector, Node, Pod
from respread.core.selectors import narrowing
from respread.scheduling.spread import Profile, SpreadIndex

# A table of a namespace, as ``WorkingCounts.tables_counting`` looks it up: its place among
# the namespace's tables, its selector, the working copy.
_TableEntry = tuple[int, LabelSelector | None, CountTable]

# The journal, undone last first. A count changed: (table, domain, delta, the table's stamp
# before, None when it had none). A group's positions changed: (positions, node, where the pod
# was taken from, the pod; or for a pod put there _LISTED / _NEW_NODE and None, their stamp
# before).
_Change = tuple[CountTable, str, int, int | None] | tuple["_Positions", str, int, Pod | None, int]
_LISTED: Final = -1  # a pod put on a node already listed
_NEW_NODE: Final = -2  # a pod put on a node not listed before


def _domains_of(tables: Iterable[CountTable], node: str) -> list[tuple[CountTable, str]]:
    """The tables holding ``node``, each with its domain there."""
    return [
        (table, domain)
        for table in tables
        if (domain := table.space.node_domain.get(node)) is not None
    ]


class _Positions:
    """A group's pods by node once one of them moved (copied then, a node's pods when they
    first change), and their stamp."""

    __slots__ = ("by_node", "changing", "members", "stamp")

    def __init__(self, members: Members) -> None:
        self.members = members  # held: its id keys the entry
        self.by_node: dict[str, Sequence[Pod]] = dict(members.by_node)
        self.changing: dict[str, list[Pod]] = {}  # the pods of the nodes that changed
        self.stamp = 0

    def pods(self, node: str) -> list[Pod]:
        """The node's pods, to change (a new list for a node that had none)."""
        pods = self.changing.get(node)
        if pods is None:
            pods = self.changing[node] = list(self.by_node.get(node, ()))
            self.by_node[node] = pods
        return pods

    def drop(self, node: str) -> None:
        """Forget the node (a pod put there undone, where none was before)."""
        del self.by_node[node]
        del self.changing[node]


class WorkingCounts:
    """Working copies of the count tables and of the groups' positions for one planning run,
    changed a pod at a time and undone exactly."""

    def __init__(self, analysis: Analysis) -> None:
        self.analysis = analysis
        self.index: SpreadIndex = analysis.index
        self.nodes: dict[str, Node] = self.index.nodes
        self.node_labels: dict[str, Labels] = self.index.node_labels
        self.members_by_namespace: dict[str, list[Members]] = defaultdict(list)
        for m in analysis.members:
            self.members_by_namespace[m.profile.namespace].append(m)
        self._copies: dict[CountTable, CountTable] = {}  # original -> working copy
        self._profile_tables: dict[int, tuple[Profile, tuple[CountTable, ...]]] = {}
        self._stamps: dict[CountTable, int] = {}  # working copy -> stamp
        self._moved: dict[Members, _Positions] = {}  # positions once changed
        self._checks: dict[Members, list[GroupCheck]] = {}  # the checks of each
        self._table_checks: dict[CountTable, list[GroupCheck]] = {}  # working copy -> checks
        self._journal: list[_Change] = []
        self._clock = 0
        # namespace -> its tables in first-use order over its members, and each one's users
        self._namespace_tables: dict[str, list[tuple[LabelSelector | None, CountTable]]] = {}
        self._users: dict[CountTable, list[Members]] = {}  # working copy -> members using it
        self._registered: dict[str, set[Members]] = {}  # namespace -> members registered
        self._tables_by_label: dict[str, dict[tuple[str, str] | None, list[_TableEntry]]] = {}
        self._counting: dict[tuple[str, int], list[CountTable]] = {}
        self._places: dict[tuple[str, int, str], list[tuple[CountTable, str]]] = {}

    # ---- tables ------------------------------------------------------------------------

    def table(self, original: CountTable) -> CountTable:
        """The working copy of one of the index's tables."""
        copy = self._copies.get(original)
        if copy is None:
            copy = self._copies[original] = original.copy()
        return copy

    def tables(self, profile: Profile) -> tuple[CountTable, ...]:
        """The working copies of a profile's tables (one per constraint, shared like the
        originals)."""
        hit = self._profile_tables.get(id(profile))  # the entry holds the profile
        if hit is None:
            tables = tuple(self.table(t) for t in self.index.tables(profile))
            hit = self._profile_tables[id(profile)] = (profile, tables)
        return hit[1]

    def register(self, m: Members) -> None:
        """Count ``m``'s tables among its namespace's, and ``m`` among their users (the
        analysed members are registered when their namespace is first asked about)."""
        namespace = m.profile.namespace
        self._namespace(namespace)
        if m in self._registered[namespace]:
            return
        self._registered[namespace].add(m)
        entries = self._namespace_tables[namespace]
        for i, table in enumerate(self.tables(m.profile)):
            users = self._users.get(table)
            if users is None:
                users = self._users[table] = []
                entries.append((m.profile.constraints[i].selector, table))
                if self._tables_by_label.pop(namespace, None) is not None:  # indexed again
                    self._counting = {k: v for k, v in self._counting.items() if k[0] != namespace}
                    self._places = {k: v for k, v in self._places.items() if k[0] != namespace}
            if not users or users[-1] is not m:  # m's constraints may share a table
                users.append(m)

    def _namespace(self, namespace: str) -> None:
        if namespace not in self._registered:
            self._registered[namespace] = set()
            self._namespace_tables[namespace] = []
            for m in self.members_by_namespace.get(namespace, ()):
                self.register(m)

    def users(self, table: CountTable) -> Sequence[Members]:
        """The registered members whose profiles use this working table."""
        return self._users.get(table, ())

    def namespace_tables(self, namespace: str) -> list[tuple[LabelSelector | None, CountTable]]:
        """The namespace's working tables, each with its selector, in first-use order."""
        self._namespace(namespace)
        return self._namespace_tables[namespace]

    def tables_counting(self, pod: Pod) -> list[CountTable]:
        """The namespace's working tables whose selector counts the pod (wherever it stands)."""
        key = (pod.namespace, id(pod.labels))  # the pod keeps its (interned) labels alive
        hit = self._counting.get(key)
        if hit is None:
            counts_pod = self.index.counts_pod
            hit = self._counting[key] = [
                table
                for _, selector, table in self._could_count_pod(pod)
                if counts_pod(selector, pod.labels)
            ]
        return hit

    def _could_count_pod(self, pod: Pod) -> list[_TableEntry]:
        """The namespace's tables whose selector might count the pod, in first-use order:
        those with an In requirement only where the pod holds one of its values."""
        index = self._tables_by_label.get(pod.namespace)
        if index is None:
            tables = self.namespace_tables(pod.namespace)  # registering them first
            index = self._tables_by_label[pod.namespace] = defaultdict(list)
            for n, (selector, table) in enumerate(tables):
                req = narrowing(selector)
                for pair in [None] if req is None else [(req.key, v) for v in req.values]:
                    index[pair].append((n, selector, table))
        found = {entry[0]: entry for entry in index.get(None, ())}
        for pair in pod.labels.items():
            for entry in index.get(pair, ()):
                found[entry[0]] = entry
        return [found[n] for n in sorted(found)]

    # ---- positions ---------------------------------------------------------------------

    def positions(self, m: Members) -> Mapping[str, Sequence[Pod]]:
        """The members' pods by node, as the changes so far left them."""
        moved = self._moved.get(m)
        return m.by_node if moved is None else moved.by_node

    # ---- changes -----------------------------------------------------------------------

    def shift(self, tables: Iterable[CountTable], node: str, delta: int) -> None:
        """``delta`` pods on ``node`` in each of ``tables`` that holds the node."""
        self._count(_domains_of(tables, node), delta)

    def _count(self, places: Iterable[tuple[CountTable, str]], delta: int) -> None:
        """``delta`` pods in each (table, domain)."""
        stamps, journal, checks = self._stamps, self._journal, self._table_checks
        clock = self._clock
        for table, domain in places:
            table.add(domain, delta)
            journal.append((table, domain, delta, stamps.get(table)))
            clock += 1
            stamps[table] = clock
            for check in checks.get(table, ()):
                check.value = None
        self._clock = clock

    def _counted_at(self, pod: Pod, node: str) -> list[tuple[CountTable, str]]:
        """The tables counting ``pod`` on ``node``, each with the node's domain."""
        key = (pod.namespace, id(pod.labels), node)  # the pod keeps its labels alive
        hit = self._places.get(key)
        if hit is None:
            hit = self._places[key] = _domains_of(self.tables_counting(pod), node)
        return hit

    def take(self, m: Members, pod: Pod, node: str) -> None:
        """Take ``pod`` from the members' positions on ``node`` (the counts are ``shift``'s)."""
        moved = self._moved.get(m) or self._positions_of(m)
        pods = moved.changing.get(node) or moved.pods(node)
        at = pods.index(pod)
        del pods[at]
        self._changed(m, node, -1)
        self._journal.append((moved, node, at, pod, moved.stamp))
        self._clock += 1
        moved.stamp = self._clock

    def put(self, m: Members, pod: Pod, node: str) -> None:
        """Put ``pod`` in the members' positions on ``node``."""
        moved = self._moved.get(m) or self._positions_of(m)
        listed = node in moved.by_node
        moved.pods(node).append(pod)
        self._changed(m, node, +1)
        self._journal.append((moved, node, _LISTED if listed else _NEW_NODE, None, moved.stamp))
        self._clock += 1
        moved.stamp = self._clock

    def relocate(self, m: Members, pod: Pod, source: str, target: str) -> None:
        """Move one of the members' pods from ``source`` to ``target`` in their positions."""
        self.take(m, pod, source)
        self.put(m, pod, target)

    def remove_pod(self, pod: Pod, node: str, holder: Members | None = None) -> None:
        """``pod`` leaves ``node``: one fewer in every table counting it there, and out of its
        ``holder``'s positions."""
        places = self._places.get((pod.namespace, id(pod.labels), node))
        self._count(self._counted_at(pod, node) if places is None else places, -1)
        if holder is not None:
            self.take(holder, pod, node)

    def add_pod(self, pod: Pod, node: str, holder: Members | None = None) -> None:
        """``pod`` arrives on ``node``: one more in every table counting it there, and in its
        ``holder``'s positions."""
        self._count(self._counted_at(pod, node), +1)
        if holder is not None:
            self.put(holder, pod, node)

    def _positions_of(self, m: Members) -> _Positions:
        moved = self._moved.get(m)
        if moved is None:  # stamped 0 until changed: a change undone to 0 drops the copy
            moved = self._moved[m] = _Positions(m)
        return moved

    def _changed(self, m: Members, node: str, delta: int) -> None:
        """``delta`` of the members' pods more on ``node``: their checks' tallies follow."""
        for check in self._checks.get(m, ()):
            cls = check.class_of.get(node) or check.classify(node)
            check.by_class[cls] = check.by_class.get(cls, 0) + delta
            check.value = None

    def mark(self) -> int:
        """The state as it is now, for ``undo``."""
        return len(self._journal)

    def undo(self, mark: int) -> None:
        """Take back every change since ``mark``, last first, stamps included."""
        journal = self._journal
        while len(journal) > mark:
            change = journal.pop()
            if len(change) == 4:
                table, domain, delta, stamp = change
                table.add(domain, -delta)
                if stamp is None:
                    del self._stamps[table]
                else:
                    self._stamps[table] = stamp
                for check in self._table_checks.get(table, ()):
                    check.value = None
            else:
                self._unmove(*change)

    def _unmove(self, moved: _Positions, node: str, at: int, pod: Pod | None, stamp: int) -> None:
        """Undo a ``take`` (``pod`` back at ``at``) or a ``put``."""
        if pod is not None:
            moved.pods(node).insert(at, pod)
            self._changed(moved.members, node, +1)
        else:
            if at == _LISTED:
                moved.pods(node).pop()
            else:
                moved.drop(node)
            self._changed(moved.members, node, -1)
        moved.stamp = stamp
        if not stamp:  # the positions were copied by the change undone: the members' again
            del self._moved[moved.members]

    def forget(self) -> None:
        """Drop what was learnt about particular pods and groups (where a pod's labels count
        on a node, the groups' checks), with every change undone: a caller that simulates many
        independent changes in turn, such as one ReplicaSet's scale-in after another, then
        holds what one of them needs rather than what all of them did (checks are made again
        from the positions, which are the analysed ones again)."""
        if self._journal:
            raise ValueError("WorkingCounts.forget with changes not undone")
        self._places.clear()
        self._checks.clear()
        self._table_checks.clear()

    # ---- stamps ------------------------------------------------------------------------

    def table_stamp(self, table: CountTable) -> int:
        return self._stamps.get(table, 0)

    def positions_stamp(self, m: Members) -> int:
        moved = self._moved.get(m)
        return 0 if moved is None else moved.stamp

    # ---- reading -----------------------------------------------------------------------

    def check(self, m: Members, constraint: int) -> GroupCheck:
        """The group of ``m`` under one constraint, judged on these counts (one per group)."""
        checks = self._checks.setdefault(m, [])
        for found in checks:
            if found.constraint == constraint:
                return found
        made = GroupCheck(self, m, constraint)
        checks.append(made)
        self._table_checks.setdefault(made.table, []).append(made)
        return made

    def crowding(self, groups: Iterable[tuple[Members, int]]) -> Crowding:
        """How crowded a node's domains are for these groups (members, constraint)."""
        return Crowding(self, groups)


class Crowding:
    """How far above its global minimum a node's domain is, summed over some groups (members,
    constraint) whose constraint counts the node; what each node reads is found once."""

    __slots__ = ("_by_node", "_groups")

    def __init__(self, counts: WorkingCounts, groups: Iterable[tuple[Members, int]]) -> None:
        self._groups = [
            (counts.tables(m.profile)[i], m.profile.constraints[i].min_domains) for m, i in groups
        ]
        self._by_node: dict[str, list[tuple[CountTable, str, int, int]]] = {}

    def at(self, node: str) -> int:
        entries = self._by_node.get(node)
        if entries is None:
            entries = self._entries(node)
        total = 0
        for table, domain, min_domains, _ in entries:
            total += table.counts.get(domain, 0) - table.global_min(min_domains)
        return total

    def each(self, nodes: Iterable[str]) -> list[int]:
        """``at`` of each node, in one state of the counts: each group's global minimum is
        found once, not once per node."""
        lows = [table.global_min(min_domains) for table, min_domains in self._groups]
        out = []
        for node in nodes:
            entries = self._by_node.get(node)
            if entries is None:
                entries = self._entries(node)
            total = 0
            for table, domain, _, group in entries:
                total += table.counts.get(domain, 0) - lows[group]
            out.append(total)
        return out

    def _entries(self, node: str) -> list[tuple[CountTable, str, int, int]]:
        """The groups whose constraint counts ``node``: table, the node's domain, minDomains
        and the group's place in ``_groups``."""
        entries = self._by_node[node] = [
            (table, domain, min_domains, group)
            for group, (table, min_domains) in enumerate(self._groups)
            if (domain := table.space.node_domain.get(node)) is not None
        ]
        return entries


class GroupCheck:
    """One group, members and one of their constraints, on the working counts: its pods
    tallied by node class (the nodes the Filter cannot tell apart for the constraint: the same
    value of its key, and the members there in the counts or not), and the misplaced among
    them, judged class by class. The working counts keep ``by_class`` as the members' pods
    move, and clear ``value``, the last count, when they change the table or the positions."""

    __slots__ = (
        "_counted",
        "_eligible",
        "_labels",
        "by_class",
        "class_of",
        "constraint",
        "counts",
        "members",
        "rule",
        "table",
        "value",
    )

    def __init__(self, counts: WorkingCounts, m: Members, constraint: int) -> None:
        index = counts.index
        self.counts = counts
        self.members = m
        self.constraint = constraint
        self.rule: SpreadRule = index.rules(m.profile)[constraint]
        self.table = counts.tables(m.profile)[constraint]
        selector = m.profile.constraints[constraint].selector
        self._counted = bool(m.by_node) and index.counts_pod(selector, m.labels)
        self._eligible = self.table.space.node_domain
        self._labels = counts.node_labels
        self.class_of: dict[str, tuple[str | None, bool]] = {}  # node -> its class
        self.by_class: dict[tuple[str | None, bool], int] = {}
        self.value: int | None = None
        for node, pods in counts.positions(m).items():
            cls = self.classify(node)
            self.by_class[cls] = self.by_class.get(cls, 0) + len(pods)

    def classify(self, node: str) -> tuple[str | None, bool]:
        """The node's class: its value of the key (None: it has none), and whether the
        members there are in the counts."""
        cls = self.class_of[node] = (
            self._labels[node].get(self.rule.key),
            self._counted and node in self._eligible,
        )
        return cls

    def misplaced(self) -> int:
        """The members the scheduler would not place where they stand, under this constraint
        (analysis.violating_nodes' judgement, summed)."""
        value = self.value
        if value is None:
            value = self.value = Ceilings(self.rule, self.table).misplaced(self.by_class)
        return value

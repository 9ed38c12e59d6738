"""A surged Deployment on the what-if working counts (analysis/whatif.py): its new pods added
where they land and its victims removed, each change undone exactly, and what the surge reads
of the state so changed: the Deployment's misplaced pods under its hard constraints, how
crowded a node's domains are, which nodes are interchangeable. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from respread.analysis.groups import Analysis, Members, WorkloadRef
from respread.analysis.whatif import WorkingCounts
from respread.core.kernel import CountTable
from respread.core.model import Pod
from respread.remedies.surge.others import OthersJudge
from respread.scheduling.spread import Profile, SpreadIndex

Domains = tuple[tuple[str, str], ...]  # (topology key, value) over the hard constraints


def members_of(analysis: Analysis, workload: WorkloadRef) -> Members | None:
    """The workload's largest group of members (a Deployment not rolling out has one)."""
    found = [m for m in analysis.members if m.workload == workload]
    return max(found, key=lambda m: m.count) if found else None


def hard_domains(index: SpreadIndex, profile: Profile, node: str) -> Domains:
    """The node's value of each of the profile's hard topology keys (those it has)."""
    labels = index.nodes[node].labels if node in index.nodes else {}
    keys = dict.fromkeys(c.key for c in profile.constraints if c.hard)
    return tuple((k, labels[k]) for k in keys if k in labels)


class SurgedWorkload:
    """One Deployment's members on working counts, changed pod by pod and undone to a mark."""

    def __init__(self, analysis: Analysis, members: Members) -> None:
        self.counts = counts = WorkingCounts(analysis)
        self.members = members
        profile = members.profile
        self.hard = [i for i, c in enumerate(profile.constraints) if c.hard]
        self.tables: tuple[CountTable, ...] = counts.tables(profile)
        self._crowding = counts.crowding((members, i) for i in self.hard).at
        self._checks = [counts.check(members, i) for i in self.hard]
        self._distinct = list(dict.fromkeys(self.tables))

    def positions(self) -> Mapping[str, Sequence[Pod]]:
        """The Deployment's pods by node, as the changes so far left them."""
        return self.counts.positions(self.members)

    def add(self, pod: Pod, node: str) -> None:
        self.counts.add_pod(pod, node, self.members)

    def remove(self, pod: Pod) -> None:
        assert pod.node_name is not None
        self.counts.remove_pod(pod, pod.node_name, self.members)

    def mark(self) -> int:
        return self.counts.mark()

    def undo(self, mark: int) -> None:
        self.counts.undo(mark)

    def misplaced(self) -> int:
        """The Deployment's pods the scheduler would not place where they stand, summed over
        its hard constraints (a pod misplaced under two counts twice)."""
        return sum(check.misplaced() for check in self._checks)

    def crowding(self, node: str) -> int:
        """How far above their global minimum the node's domains are, over the hard
        constraints."""
        return self._crowding(node)

    def node_class(self, node: str, judge: OthersJudge | None) -> tuple[object, ...]:
        """What removing a pod from ``node`` changes: its domain in each of the workload's
        tables and in each other group's judged (nodes of one class are interchangeable)."""
        judged = judge.groups if judge is not None else ()
        tables = [*self._distinct, *(b.table for b in judged)]
        return (self.domains(node), *(t.space.node_domain.get(node) for t in tables))

    def domains(self, node: str) -> Domains:
        return hard_domains(self.counts.index, self.members.profile, node)

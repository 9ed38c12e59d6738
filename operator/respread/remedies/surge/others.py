"""A surge must not make another workload's spread worse (issue 14).

Other workloads' hard constraints may count the surged Deployment's pods (a selector matching
its labels, in its namespace). A surge moves them: its new pods land in some domains and its
victims leave theirs. Judged on the net change from before the surge, per group the analysis
knows (the same rule remedies/cost/order.py applies to scale-ins):

- a group balanced before must stay balanced (no member the scheduler would not place where it
  is, analysis.violating_nodes) and within its maxSkew (or its skew before, if above);
- a violated group's skew must not rise.

When planning, the analysis is of the state before the surge: the new pods are ``added`` (the
predicted landings). At Marking it is of the n + k state: the new pods have ``arrived``, and
the state before the surge is the analysis's counts without them. Either way the victims are
``removed``. The intermediate n + k state is not judged: it lasts until the scale-back, and
removes no pod of the other workload. The changes are made on working counts (analysis/whatif.py)
and undone. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from respread.analysis.groups import Analysis, Group, WorkloadRef, violating_nodes
from respread.analysis.whatif import WorkingCounts
from respread.core.kernel import CountTable
from respread.core.model import Labels


def _counting(analysis: Analysis, workload: WorkloadRef, labels: Labels) -> Iterable[Group]:
    """Other workloads' hard constraint groups whose selector counts the workload's pods."""
    index = analysis.index
    for g in analysis.groups:
        if g.workload == workload or not g.constraint.hard:
            continue
        if g.members.profile.namespace != workload.namespace:
            continue
        if index.counts_pod(g.constraint.selector, labels):
            yield g


@dataclass(frozen=True, slots=True)
class _Baseline:
    group: Group
    table: CountTable  # the group's working table (the surge's new pods added)
    skew: int  # before the surge
    violating: bool  # before the surge


class OthersJudge:
    """Other workloads' groups counting a surged Deployment's pods, as they were before the
    surge: ``harm`` judges a set of victims against that, on working counts (analysis/whatif.py)
    holding the surge's new pods, each judgement undone."""

    def __init__(
        self, analysis: Analysis, counts: WorkingCounts, groups: Sequence[_Baseline]
    ) -> None:
        self.analysis = analysis
        self.counts = counts
        self.groups = tuple(groups)
        self._tables = _distinct(b.table for b in groups)

    def harm(self, removed: Iterable[str]) -> str | None:
        """Why removing one of the Deployment's pods from each of the ``removed`` nodes (after
        the surge's new pods) would make another workload's group worse than before the surge;
        None when it would not."""
        mark = self.counts.mark()
        _shift(self.counts, self._tables, removed, -1)
        try:
            return next(filter(None, (self._worse(b) for b in self.groups)), None)
        finally:
            self.counts.undo(mark)

    def _worse(self, b: _Baseline) -> str | None:
        g, c = b.group, b.group.constraint
        skew = b.table.skew(c.min_domains)
        what = f"{g.workload}'s constraint on {c.key} (maxSkew {c.max_skew})"
        if not b.violating and (_violated(self.counts, g) or skew > max(c.max_skew, b.skew)):
            return f"it would take {what} from balanced (skew {b.skew}) to skew {skew}"
        if b.violating and skew > b.skew:
            return f"it would raise the skew of {what}, violated, from {b.skew} to {skew}"
        return None


def _distinct(tables: Iterable[CountTable]) -> list[CountTable]:
    return list(dict.fromkeys(tables))  # a table is equal only to itself


def _shift(
    counts: WorkingCounts, tables: list[CountTable], nodes: Iterable[str], delta: int
) -> None:
    """One of the Deployment's pods more (or fewer) on each of the ``nodes``, in ``tables``
    (each once: groups may share one)."""
    for node in nodes:
        counts.shift(tables, node, delta)


def _violated(counts: WorkingCounts, g: Group) -> bool:
    """Whether a member of ``g`` sits where the scheduler would not place it, on the counts."""
    tables = counts.tables(g.members.profile)
    return bool(violating_nodes(counts.index, g.members, tables, g.index))


def judge_others(
    analysis: Analysis,
    workload: WorkloadRef,
    labels: Labels,
    added: Iterable[str] = (),
    arrived: Iterable[str] = (),
) -> OthersJudge:
    """The judge of a surge of ``workload``: its new pods predicted on the ``added`` nodes (the
    analysis is of the state before the surge), or already on the ``arrived`` ones (the
    analysis is of the n + k state). One entry per pod."""
    added, arrived = tuple(added), tuple(arrived)
    counts = WorkingCounts(analysis)
    groups = list(_counting(analysis, workload, labels))
    tables = [counts.tables(g.members.profile)[g.index] for g in groups]
    distinct = _distinct(tables)
    mark = counts.mark()
    _shift(counts, distinct, arrived, -1)  # before the surge: without the new pods
    before = [
        (t.skew(g.constraint.min_domains), _violated(counts, g))
        if any(n in t.space.node_domain for n in arrived)
        else (g.skew, bool(g.violating))
        for g, t in zip(groups, tables, strict=True)
    ]
    counts.undo(mark)
    _shift(counts, distinct, added, +1)  # the surge's new pods, as the victims will find them
    baselines = [
        _Baseline(g, t, skew, violating)
        for g, t, (skew, violating) in zip(groups, tables, before, strict=True)
    ]
    return OthersJudge(analysis, counts, baselines)


def harm_to_others(
    analysis: Analysis,
    workload: WorkloadRef,
    labels: Labels,
    added: Iterable[str],
    removed: Iterable[str],
) -> str | None:
    """Why adding pods on the ``added`` nodes and removing them from the ``removed`` nodes (one
    per entry) would make another workload's group worse; None when it would not."""
    return judge_others(analysis, workload, labels, added=added).harm(removed)

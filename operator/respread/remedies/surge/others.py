"""A surge must not make another workload's spread worse (issue 14).

Other workloads' hard constraints may count the surged Deployment's pods (a selector matching
its labels, in its namespace). A surge moves them: its new pods land in some domains and its
victims leave theirs. Judged on the net change from before the surge, per group the analysis
knows (the same rule deletion_cost.py applies to scale-ins):

- a group balanced before must stay balanced (no member the scheduler would not place where it
  is, analysis.violating_nodes) and within its maxSkew (or its skew before, if above);
- a violated group's skew must not rise.

When planning, the analysis is of the state before the surge: the new pods are ``added`` (the
predicted landings). At Marking it is of the n + k state: the new pods have ``arrived``, and
the state before the surge is the analysis's counts without them. Either way the victims are
``removed``. The intermediate n + k state is not judged: it lasts until the scale-back, and
removes no pod of the other workload. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from respread.analysis.groups import Analysis, Group, WorkloadRef, violating_nodes
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


def _shifted(table: CountTable, changes: Iterable[tuple[str, int]]) -> CountTable | None:
    """A copy of ``table`` with one pod added (+1) or removed (-1) per (node, delta); None when
    no node is in its domains (the table is unchanged)."""
    out: CountTable | None = None
    for node, delta in changes:
        domain = table.space.node_domain.get(node)
        if domain is not None:
            out = out or table.copy()
            out.add(domain, delta)
    return out


@dataclass(frozen=True, slots=True)
class _Baseline:
    group: Group
    tables: tuple[CountTable, ...]  # the group's profile's tables, with the surge's pods added
    skew: int  # before the surge
    violating: bool  # before the surge


@dataclass(frozen=True, slots=True)
class OthersJudge:
    """Other workloads' groups counting a surged Deployment's pods, as they were before the
    surge: ``harm`` judges a set of victims against that."""

    analysis: Analysis
    groups: tuple[_Baseline, ...]

    def harm(self, removed: Iterable[str]) -> str | None:
        """Why removing one of the Deployment's pods from each of the ``removed`` nodes (after
        the surge's new pods) would make another workload's group worse than before the surge;
        None when it would not."""
        removed = tuple(removed)
        index = self.analysis.index
        for b in self.groups:
            g, c = b.group, b.group.constraint
            current = b.tables[g.index]
            table = _shifted(current, ((n, -1) for n in removed)) or current
            after = tuple(table if i == g.index else t for i, t in enumerate(b.tables))
            skew = table.skew(c.min_domains)
            bad = violating_nodes(index, g.members, after, g.index)
            what = f"{g.workload}'s constraint on {c.key} (maxSkew {c.max_skew})"
            if not b.violating and (bad or skew > max(c.max_skew, b.skew)):
                return f"it would take {what} from balanced (skew {b.skew}) to skew {skew}"
            if b.violating and skew > b.skew:
                return f"it would raise the skew of {what}, violated, from {b.skew} to {skew}"
        return None


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
    index = analysis.index
    out = []
    for g in _counting(analysis, workload, labels):
        tables = index.tables(g.members.profile)
        now = tables[g.index]
        before_table = _shifted(now, ((n, -1) for n in arrived))
        if before_table is None:
            skew, violating = g.skew, bool(g.violating)
        else:
            before = tuple(before_table if i == g.index else t for i, t in enumerate(tables))
            skew = before_table.skew(g.constraint.min_domains)
            violating = bool(violating_nodes(index, g.members, before, g.index))
        surged = _shifted(now, ((n, +1) for n in added)) or now
        with_surge = tuple(surged if i == g.index else t for i, t in enumerate(tables))
        out.append(_Baseline(g, with_surge, skew, violating))
    return OthersJudge(analysis, tuple(out))


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

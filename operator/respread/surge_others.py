"""A surge must not make another workload's spread worse (issue 14).

Other workloads' hard constraints may count the surged Deployment's pods (a selector matching
its labels, in its namespace). A surge moves them: its new pods land in the predicted domains
and its victims leave theirs. Judged on the net change, per group the analysis knows (the same
rule deletion_cost.py applies to scale-ins):

- a group balanced now must stay balanced (no member the scheduler would not place where it
  is, analysis.violating_nodes) and within its maxSkew (or its skew now, if above);
- a violated group's skew must not rise.

The intermediate n + k state (the new pods Ready, the victims not yet removed) is not judged: it
lasts until the scale-back, and removes no pod of the other workload. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable

from respread.analysis import Analysis, Group, WorkloadRef, violating_nodes
from respread.model import Labels


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


def harm_to_others(
    analysis: Analysis,
    workload: WorkloadRef,
    labels: Labels,
    added: Iterable[str],
    removed: Iterable[str],
) -> str | None:
    """Why adding pods on the ``added`` nodes and removing them from the ``removed`` nodes (one
    per entry) would make another workload's group worse; None when it would not."""
    added, removed = tuple(added), tuple(removed)
    index = analysis.index
    for g in _counting(analysis, workload, labels):
        c = g.constraint
        tables = index.tables(g.members.profile)
        table = tables[g.index].copy()
        space = table.space.node_domain
        changed = False
        for nodes, delta in ((added, 1), (removed, -1)):
            for node in nodes:
                domain = space.get(node)
                if domain is not None:
                    table.add(domain, delta)
                    changed = True
        if not changed:
            continue
        after = tuple(table if i == g.index else t for i, t in enumerate(tables))
        skew = table.max_count() - table.global_min(c.min_domains) if g.domains else 0
        bad = violating_nodes(index, g.members, after, g.index)
        what = f"{g.workload}'s constraint on {c.key} (maxSkew {c.max_skew})"
        if not g.violating and (bad or skew > max(c.max_skew, g.skew)):
            return f"it would take {what} from balanced (skew {g.skew}) to skew {skew}"
        if g.violating and skew > g.skew:
            return f"it would raise the skew of {what}, violated, from {g.skew} to {skew}"
    return None

"""Whether the eviction plan of one analysis is the plan of another: what the planner reads.

The planner reads, of the cluster:

- the groups of the namespaces that hold a violated group (it moves only their pods, its own or
  those another workload's selector counts, which are in the same namespace, and judges a move
  by the groups of the moved pod's namespace), their pods, and those namespaces' budgets;
- the nodes, and the room every node's pods leave (the landing predictor's ledger: each bound,
  unfinished pod's node and requests, whatever its namespace).

Beside these it reads the policy, the clock, the eviction history and the holds, which the
caller compares (pipeline.AnalysisMemo). So a plan made from ``before`` is the plan of
``after`` when every namespace that changed between them holds no violated group in either,
leaves every node's pods as they were in number and requests, and the violated namespaces'
budgets are equal: a change to a balanced namespace's labels, owners or services, a budget
elsewhere, or anything the analysis does not read. A node changed, and nothing is the same
(``unchanged_namespaces``).
"""

from __future__ import annotations

from collections import Counter

from respread.analysis.groups import Analysis, NamespaceInputs, unchanged_namespaces
from respread.core.model import DisruptionBudget, Resources


def plan_unchanged(before: Analysis, after: Analysis) -> bool:
    """Whether ``before``'s eviction plan is ``after``'s (under an equal policy, clock, history
    and holds)."""
    if after is before:
        return True
    same = unchanged_namespaces(before, after)
    if not same:
        return False
    violated = {g.workload.namespace for g in (*before.violations, *after.violations)}
    changed = (before.inputs.keys() | after.inputs.keys()) - same
    if changed & violated:
        return False
    if any(_room(before.inputs.get(n)) != _room(after.inputs.get(n)) for n in changed):
        return False
    return _budgets(before, violated) == _budgets(after, violated)


def _room(inputs: NamespaceInputs | None) -> Counter[tuple[str, Resources]]:
    """What the namespace's pods take of the nodes' room: the bound, unfinished pods per node
    and requests (scheduling/placement.py's CapacityLedger; the nodes are the same)."""
    if inputs is None:
        return Counter()
    return Counter(
        (p.node_name, p.spec.requests)
        for p in inputs.pods
        if p.node_name is not None and not p.finished
    )


def _budgets(analysis: Analysis, namespaces: set[str]) -> list[DisruptionBudget]:
    return [b for b in analysis.index.state.budgets if b.namespace in namespaces]

"""What a scan could not see, and what its policy selects: an incomplete input or a policy that
selects nothing is never reported as an all-clear.

- A live pod bound to a node the state does not hold is left out of every count (the scheduler
  has no domain for it). Its own workload's groups, and every group whose selector would count
  it, are *incomplete*: their counts may be short of what the cluster holds.
- The policy's selection (namespaces included, excluded, by label) may select no pod at all,
  most often through a misspelt namespace. That is said, with the reason, rather than reported
  as "no violations".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from respread.analysis.groups import Analysis, Group, WorkloadRef, namespace_selected, workload_of
from respread.core.model import Namespace, Pod
from respread.core.selectors import selector_matches
from respread.inputs.policy import RebalancePolicy

GroupKey = tuple[WorkloadRef, str]  # a workload and a topology key


@dataclass(frozen=True, slots=True)
class Coverage:
    """What the scan saw of the cluster and of the policy's scope."""

    pods_on_unknown_nodes: tuple[Pod, ...] = ()  # live, selected pods on nodes the state lacks
    incomplete: frozenset[GroupKey] = frozenset()  # groups counted without some of those pods
    pods_selected: int = 0  # pods in the namespaces the policy selects (not finished)
    evictable_by_selector: int | None = None  # of those, the podSelector's (None: no selector)
    missing_namespaces: tuple[str, ...] = ()  # included by name, held by neither object nor pod
    nothing_selected: str = ""  # why the policy selects no pod ("" when it selects some)

    @property
    def unknown_nodes(self) -> tuple[str, ...]:
        return tuple(sorted({p.node_name for p in self.pods_on_unknown_nodes if p.node_name}))

    def touches(self, group: Group) -> bool:
        return (group.workload, group.constraint.key) in self.incomplete


def _counts(pod: Pod) -> bool:
    return not (pod.terminating or pod.finished)


def pods_on_unknown_nodes(analysis: Analysis) -> tuple[Pod, ...]:
    """Live pods bound to a node the state does not hold, by namespace and name."""
    nodes = analysis.index.nodes
    lost = [p for p in analysis.index.state.pods if p.node_name and p.node_name not in nodes]
    return tuple(sorted((p for p in lost if _counts(p)), key=lambda p: (p.namespace, p.name)))


def incomplete_groups(analysis: Analysis, lost: Iterable[Pod]) -> frozenset[GroupKey]:
    """The groups a pod of ``lost`` belongs to, or that would count it."""
    index = analysis.index
    shapes: dict[tuple[str, int], Pod] = {}  # one pod per namespace and labels
    owners: set[WorkloadRef] = set()
    for pod in lost:
        shapes.setdefault((pod.namespace, id(pod.labels)), pod)
        owners.add(workload_of(pod, index))
    out: set[GroupKey] = set()
    for g in analysis.groups:
        key = (g.workload, g.constraint.key)
        if key in out:
            continue
        if g.workload in owners or any(
            p.namespace == g.workload.namespace
            and index.counts_pod(g.constraint.selector, p.labels)
            for p in shapes.values()
        ):
            out.add(key)
    return frozenset(out)


def _namespaces(analysis: Analysis) -> dict[str, Namespace | None]:
    """Every namespace the state holds, as an object or only through its pods."""
    state = analysis.index.state
    known: dict[str, Namespace | None] = {p.namespace: None for p in state.pods}
    known.update((n.name, n) for n in state.namespaces)
    return known


def _why_nothing(policy: RebalancePolicy, known: Mapping[str, object], selected: list[str]) -> str:
    sel = policy.selection
    if sel.include_namespaces and not any(n in known for n in sel.include_namespaces):
        names = ", ".join(sorted(sel.include_namespaces))
        return f"the namespace(s) selected by name ({names}) do not exist"
    if not selected and sel.namespace_selector is not None:
        return "spec.selector.namespaceSelector matches no namespace"
    if not selected:
        return "every namespace is excluded (spec.selector.namespaces)"
    return f"the selected namespace(s) ({', '.join(selected[:3])}) hold no pod"


def coverage_of(analysis: Analysis, policy: RebalancePolicy) -> Coverage:
    """What the scan saw: the selected pods on nodes it lacks, the groups they leave
    incomplete, and how many pods the policy selects (and why none, when none)."""
    known = _namespaces(analysis)
    objects = {n: ns for n, ns in known.items() if ns is not None}
    selected = sorted(n for n in known if namespace_selected(n, policy, objects))
    chosen = set(selected)
    # A spread constraint counts its own namespace's pods only: a pod outside the selection
    # is no part of any group this policy looks at.
    lost = tuple(p for p in pods_on_unknown_nodes(analysis) if p.namespace in chosen)
    pods = [p for p in analysis.index.state.pods if p.namespace in chosen and _counts(p)]
    pod_selector = policy.selection.pod_selector
    evictable = None
    if pod_selector is not None:
        evictable = sum(1 for p in pods if selector_matches(pod_selector, p.labels))
    missing = tuple(sorted(n for n in policy.selection.include_namespaces if n not in known))
    return Coverage(
        pods_on_unknown_nodes=lost,
        incomplete=incomplete_groups(analysis, lost) if lost else frozenset(),
        pods_selected=len(pods),
        evictable_by_selector=evictable,
        missing_namespaces=missing,
        nothing_selected="" if pods else _why_nothing(policy, known, selected),
    )

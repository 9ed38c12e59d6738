"""Evidence of a rollout in progress: a Deployment with more than one ReplicaSet holding pods.

While a Deployment rolls out, its old ReplicaSet shrinks and its new one grows. Whatever skew
its groups show then (one group, or one per ReplicaSet when the constraint's matchLabelKeys
holds pod-template-hash) comes from the rollout, not from a scale-in: the Deployment's replicas
may never have changed, though each ReplicaSet's group has fewer pods than the previous scan
saw. The same evidence, read the same way, as analysis/causes.py's `_rolling_out` on the
causes-from-objects branch (h10-truth, b57fc89).
"""

from __future__ import annotations

import threading
import weakref
from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from respread.analysis.groups import Analysis, Group, WorkloadRef
from respread.core.model import Workload
from respread.scheduling.spread import SpreadIndex

NAMED = 3  # ReplicaSets a message names before "and N more"


@dataclass(frozen=True, slots=True)
class RolloutFacts:
    """What one analysis holds about rollouts, indexed once for all its groups."""

    pods: Mapping[WorkloadRef, int]  # each workload's pods, over all its groups
    live: Mapping[WorkloadRef, Counter[str]]  # each workload's pods per ReplicaSet
    replica_sets: Mapping[tuple[str, str], tuple[Workload, ...]]  # (ns, Deployment) -> its own

    @classmethod
    def of(cls, analysis: Analysis) -> RolloutFacts:
        pods: Counter[WorkloadRef] = Counter()
        live: dict[WorkloadRef, Counter[str]] = defaultdict(Counter)
        for m in analysis.members:
            pods[m.workload] += m.count
            for on_node in m.by_node.values():
                for p in on_node:
                    if p.owner is not None and p.owner.kind == "ReplicaSet":
                        live[m.workload][p.owner.name] += 1
        sets: dict[tuple[str, str], list[Workload]] = defaultdict(list)
        for w in analysis.index.state.workloads:
            if w.kind == "ReplicaSet" and w.owner is not None and w.owner.kind == "Deployment":
                sets[(w.namespace, w.owner.name)].append(w)
        return cls(
            dict(pods),
            dict(live),
            {k: tuple(sorted(v, key=lambda w: w.name)) for k, v in sets.items()},
        )


class _Facts:
    """The facts of each analysis asked about (a report asks once per violation), held as long
    as the analysis's SpreadIndex lives and no longer: never the reason a state stays alive."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: weakref.WeakKeyDictionary[SpreadIndex, tuple[object, RolloutFacts]] = (
            weakref.WeakKeyDictionary()
        )

    def of(self, analysis: Analysis) -> RolloutFacts:
        with self._lock:
            held = self._held.get(analysis.index)
        if held is not None and held[0] is analysis.members:
            return held[1]
        facts = RolloutFacts.of(analysis)
        with self._lock:
            self._held[analysis.index] = (analysis.members, facts)
        return facts


_facts = _Facts()


def pods_per_workload(analysis: Analysis) -> Mapping[WorkloadRef, int]:
    """Each workload's pods over all its groups (a rollout's ReplicaSets are several)."""
    return _facts.of(analysis).pods


def _named(names: list[str]) -> str:
    shown = ", ".join(names[:NAMED])
    return shown + (f" and {len(names) - NAMED} more" if len(names) > NAMED else "")


def rolling_out(group: Group, analysis: Analysis) -> str | None:
    """Why the group's workload is rolling out, if it is: its pods come from several
    ReplicaSets, or several ReplicaSets of the Deployment hold pods (live in this analysis, or
    asked for in their spec)."""
    owners = sorted(
        {
            p.owner.name
            for pods in group.members.by_node.values()
            for p in pods
            if p.owner is not None and p.owner.kind == "ReplicaSet"
        }
    )
    if len(owners) > 1:
        return f"pods come from {len(owners)} ReplicaSets ({_named(owners)})"
    w = group.workload
    if w.kind != "Deployment":
        return None
    facts = _facts.of(analysis)
    live = facts.live.get(w, Counter())
    sets = facts.replica_sets.get((w.namespace, w.name), ())
    active = set(live) | {rs.name for rs in sets if rs.replicas}
    if len(active) < 2:
        return None
    revisions = {rs.name: rs.revision for rs in sets}
    shown = [
        f"{n} ({f'revision {revisions[n]}, ' if revisions.get(n) else ''}{live[n]} pods)"
        for n in sorted(active)
    ]
    return f"{w} is rolling out: ReplicaSets {_named(shown)} hold pods"

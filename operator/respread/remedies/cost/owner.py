"""Which RebalancePolicy orders a ReplicaSet's pod-deletion-costs when several select its pods.

Two policies that write costs (Enforce, the remedy on, not being deleted) and select the same
namespace would otherwise both order its ReplicaSets, each overwriting the other's costs every
scan when their settings differ. Each scan decides, from its snapshot alone, one owner per
ReplicaSet; every operator's scan decides the same, without talking to the others:

- the candidates are the policy scanning and every other policy that writes costs, selects the
  ReplicaSet's namespace and orders its pods by its own settings (the pods' spread constraints,
  else the policy's ``defaultConstraints``, have a hard one and one it analyses: a policy that
  would not order them never keeps another policy from ordering them);
- of the candidates that a pod of the ReplicaSet names (``respread.io/deletion-cost-policy``),
  the first by name owns it: a policy keeps what it wrote while it exists and covers the pods;
- when no pod names a candidate (nobody's yet, or named by a policy deleted, switched off or no
  longer covering the namespace), the first candidate by name owns it.

Taking costs back (cost_release.py) hands a ReplicaSet's pods over by the same rule, the
releasing policy left out. Per ReplicaSet, not per pod: one order, written by one policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from respread.analysis.groups import namespace_selected
from respread.core.annotations import COST_POLICY
from respread.core.model import Namespace, Pod, When
from respread.inputs.policy import Mode, RebalancePolicy

OVERLAP_EXAMPLES: Final = 10  # overlapping ReplicaSets named in the status, at most


def writes_costs(policy: RebalancePolicy) -> bool:
    """The policy writes pod-deletion-cost annotations (Enforce, with the remedy enabled)."""
    return policy.mode is Mode.ENFORCE and policy.remediation.deletion_cost.enabled


def orders(policy: RebalancePolicy, pod: Pod) -> bool:
    """The policy's analysis gives the pod's workload a hard constraint (the pod's own
    constraints, or without any the policy's defaultConstraints, as spread.py reads them)."""
    constraints = pod.spec.constraints or policy.constraints.default_constraints
    analysed = policy.constraints.when_unsatisfiable
    return any(c.when is When.DO_NOT_SCHEDULE for c in constraints) and any(
        c.when in analysed for c in constraints
    )


def owner(candidates: Iterable[str], named: Iterable[str | None]) -> str | None:
    """Of the candidates, the first by name that a pod names; else the first by name; None
    without candidates."""
    pool = set(candidates)
    claimed = [n for n in named if n is not None and n in pool]
    if claimed:
        return min(claimed)
    return min(pool, default=None)


def replica_set_key(pod: Pod) -> tuple[str, str, str]:
    """The pods ordered together: a ReplicaSet's (a pod of no ReplicaSet stands alone)."""
    if pod.owner is not None and pod.owner.kind == "ReplicaSet":
        return (pod.namespace, "ReplicaSet", pod.owner.name)
    return (pod.namespace, "Pod", pod.name)


@dataclass(frozen=True, slots=True)
class Ownership:
    """The policies a scan sees: which one owns each ReplicaSet's costs."""

    policy: str  # the policy scanning (a candidate wherever it orders pods)
    writers: tuple[RebalancePolicy, ...]  # the other policies that write costs, by name
    namespaces: Mapping[str, Namespace]
    # filled on first use per namespace: a cache of covering(), which reads only the fields above
    _covering: dict[str, tuple[RebalancePolicy, ...]] = field(default_factory=dict, compare=False)

    @classmethod
    def of(
        cls,
        policy: str,
        others: Sequence[RebalancePolicy],
        namespaces: Mapping[str, Namespace],
    ) -> Ownership:
        writers = tuple(
            sorted((p for p in others if p.name != policy and writes_costs(p)), key=_name)
        )
        return cls(policy, writers, namespaces)

    def covering(self, namespace: str) -> tuple[RebalancePolicy, ...]:
        """The other policies that write costs and select the namespace, by name."""
        found = self._covering.get(namespace)
        if found is None:
            found = self._covering[namespace] = tuple(
                p for p in self.writers if namespace_selected(namespace, p, self.namespaces)
            )
        return found

    def _candidates(self, namespace: str, pods: Sequence[Pod]) -> list[str]:
        """The other policies that write costs here and would order these pods."""
        covering = self.covering(namespace)
        if not covering or not pods:
            return []
        return [p.name for p in covering if orders(p, pods[0])]

    def owner_of(self, namespace: str, pods: Sequence[Pod]) -> str:
        """The policy that orders these pods (one ReplicaSet's) where this policy orders them."""
        others = self._candidates(namespace, pods)
        if not others:
            return self.policy
        found = owner((self.policy, *others), (p.annotations.get(COST_POLICY) for p in pods))
        assert found is not None
        return found

    def next_owner(self, namespace: str, pods: Sequence[Pod]) -> str | None:
        """The policy that keeps these pods' costs when this one lets them go (None: none)."""
        others = self._candidates(namespace, pods)
        if not others:
            return None
        return owner(others, (p.annotations.get(COST_POLICY) for p in pods))


def _name(policy: RebalancePolicy) -> str:
    return policy.name

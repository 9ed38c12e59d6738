"""The part of the cluster state that advancing a policy's surges reads (runtime/surges.py's
follower, every few seconds while one is in flight).

``advance`` reads an annotated Deployment, its ReplicaSets and pods, and the spread of every
workload in its namespace: a topology spread constraint counts only pods of its own namespace,
so the other workloads whose selectors count the Deployment's pods are there too. Nodes (the
domains) are kept whole. Analysing just those namespaces gives the same operations, with the
same actions, as analysing the whole cluster, at a cost proportional to them. Pure.
"""

from __future__ import annotations

from dataclasses import replace

from respread.core.model import ClusterState
from respread.remedies.surge.operation import Phase, operation_of


def surging_namespaces(state: ClusterState, policy: str) -> frozenset[str]:
    """The namespaces of the Deployments carrying an operation of ``policy`` in flight."""
    out = set()
    for w in state.workloads:
        if w.kind != "Deployment":
            continue
        op = operation_of(w)
        if op is not None and op.policy == policy and op.phase is not Phase.ROLLED_BACK:
            out.add(w.namespace)
    return frozenset(out)


def scoped(state: ClusterState, namespaces: frozenset[str]) -> ClusterState:
    """The state restricted to ``namespaces`` (namespaced objects only: nodes and namespaces
    are kept)."""
    return replace(
        state,
        pods=tuple(p for p in state.pods if p.namespace in namespaces),
        workloads=tuple(w for w in state.workloads if w.namespace in namespaces),
        budgets=tuple(b for b in state.budgets if b.namespace in namespaces),
        services=tuple(s for s in state.services if s.namespace in namespaces),
        autoscalers=tuple(a for a in state.autoscalers if a.namespace in namespaces),
    )


def follower_state(state: ClusterState, policy: str) -> ClusterState:
    """What a follower round of ``policy`` analyses."""
    return scoped(state, surging_namespaces(state, policy))

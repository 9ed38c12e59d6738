"""A policy narrowed to one namespace: `respread plan -n NAMESPACE` (and `kubectl respread plan
-n`), which looks at that namespace's workloads only.

Narrowing loses nothing the scheduler counts: a topology spread constraint counts only the pods
of its own pod's namespace. The policy's own namespace choice is replaced, not intersected: the
command asks about the namespace by name, even one the policy leaves out (kube-system by default).
"""

from __future__ import annotations

from dataclasses import replace

from respread.inputs.policy import RebalancePolicy


def within_namespace(policy: RebalancePolicy, namespace: str | None) -> RebalancePolicy:
    """``policy`` with only ``namespace`` in scope; unchanged when ``namespace`` is None."""
    if namespace is None:
        return policy
    selection = replace(
        policy.selection,
        include_namespaces=frozenset({namespace}),
        exclude_namespaces=frozenset(),
        namespace_selector=None,
    )
    return replace(policy, selection=selection)

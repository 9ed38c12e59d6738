"""Could a pod land on a node: the filters respread models besides PodTopologySpread.

NodeAffinity (nodeSelector and required node affinity), TaintToleration (NoSchedule and
NoExecute), NodeUnschedulable, and NodeResourcesFit against what the node's pods request plus
what the plan has already reserved there. Pod affinity, ports and volumes are not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from respread.model import UNSCHEDULABLE_TAINT, Node, Pod, PodSpec, Resources
from respread.selectors import affinity_matches, tolerates, untolerated_taint


def static_reasons(spec: PodSpec, node: Node) -> list[str]:
    """Why the pod can never land on the node, whatever the node's load (empty: it can)."""
    reasons = []
    if not affinity_matches(spec.affinity, node):
        reasons.append("node does not match the pod's nodeSelector or required node affinity")
    taint = untolerated_taint(spec.tolerations, node.taints)
    if taint is not None:
        reasons.append(f"untolerated taint {taint.key}={taint.value}:{taint.effect.value}")
    if node.unschedulable and not any(tolerates(t, UNSCHEDULABLE_TAINT) for t in spec.tolerations):
        reasons.append("node is cordoned (spec.unschedulable)")
    return reasons


@dataclass(frozen=True, slots=True)
class Usage:
    requested: Resources
    pods: int


class CapacityLedger:
    """What each node's pods request, plus the reservations of planned replacements.

    A node with no reported allocatable is not resource-modelled: everything fits. Pods that
    are terminating still hold their resources, as they do in the scheduler's cache, so an
    eviction frees nothing before its pod is gone.
    """

    def __init__(self, nodes: Iterable[Node], pods: Iterable[Pod]) -> None:
        self._nodes = {n.name: n for n in nodes}
        requested: dict[str, Resources] = {}
        counts: dict[str, int] = {}
        for pod in pods:
            if pod.node_name is None or pod.finished or pod.node_name not in self._nodes:
                continue
            requested[pod.node_name] = requested.get(pod.node_name, Resources()) + pod.spec.requests
            counts[pod.node_name] = counts.get(pod.node_name, 0) + 1
        self._usage = {
            name: Usage(requested.get(name, Resources()), counts.get(name, 0))
            for name in self._nodes
        }

    def usage(self, node: str) -> Usage:
        return self._usage[node]

    def free(self, node: str) -> Resources | None:
        alloc = self._nodes[node].allocatable
        return None if alloc is None else alloc - self._usage[node].requested

    def fit_reason(self, node: str, requests: Resources) -> str | None:
        """None when a pod requesting ``requests`` fits on the node now, else why not."""
        n = self._nodes[node]
        use = self._usage[node]
        if n.max_pods is not None and use.pods + 1 > n.max_pods:
            return f"node is full ({use.pods} of {n.max_pods} pods)"
        if n.allocatable is None:
            return None
        free = n.allocatable - use.requested
        if not requests.fits_in(free):
            return f"insufficient resources (free cpu {free.cpu}m, memory {free.memory})"
        return None

    def reserve(self, node: str, requests: Resources) -> None:
        use = self._usage[node]
        self._usage[node] = Usage(use.requested + requests, use.pods + 1)

    def copy(self) -> CapacityLedger:
        clone = CapacityLedger.__new__(CapacityLedger)
        clone._nodes = self._nodes
        clone._usage = dict(self._usage)
        return clone

"""Could a pod land on a node: the filters respread models besides PodTopologySpread.

NodeAffinity (nodeSelector and required node affinity), TaintToleration (NoSchedule and
NoExecute), NodeUnschedulable, VolumeBinding's node affinity of bound PersistentVolumes,
and NodeResourcesFit against what the node's pods request plus
what the plan has already reserved there. Pod affinity, ports and the rest of volume binding
are not modelled.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from respread.core.model import UNSCHEDULABLE_TAINT, Node, Pod, PodSpec, Resources
from respread.core.selectors import affinity_matches, tolerates, untolerated_taint
from respread.inputs.volumes import refusing_volume


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


def volume_reason(pod: Pod, node: Node) -> str | None:
    """Why the pod's volumes keep it (and its replacement) off the node (None: they do not)."""
    pin = refusing_volume(pod, node)
    if pin is None:
        return None
    return (
        f"pinned by volume: PersistentVolume {pin.volume} (claim {pin.claim}) "
        "does not admit the node"
    )


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
        # Usage is summed when a node is first asked about: a plan looks at few nodes.
        self._pending: dict[str, list[Resources]] = {}
        for pod in pods:
            node = pod.node_name
            if node is None or pod.finished or node not in self._nodes:
                continue
            requests = self._pending.get(node)
            if requests is None:
                self._pending[node] = [pod.spec.requests]
            else:
                requests.append(pod.spec.requests)
        self._usage: dict[str, Usage] = {}

    def usage(self, node: str) -> Usage:
        use = self._usage.get(node)
        if use is None:
            if node not in self._nodes:
                raise KeyError(node)
            requests = self._pending.get(node, ())
            total = Resources()
            for r in requests:
                total = total + r
            use = self._usage[node] = Usage(total, len(requests))
        return use

    def full(self, node: str) -> bool:
        """Whether the node holds as many pods as it may: no pod fits, whatever it requests
        (``fit_reason``'s first refusal)."""
        n = self._nodes[node]
        if n.max_pods is None:
            return False
        use = self._usage.get(node)
        pods = len(self._pending.get(node, ())) if use is None else use.pods
        return pods + 1 > n.max_pods

    def free(self, node: str) -> Resources | None:
        alloc = self._nodes[node].allocatable
        return None if alloc is None else alloc - self.usage(node).requested

    def fit_reason(self, node: str, requests: Resources) -> str | None:
        """None when a pod requesting ``requests`` fits on the node now, else why not."""
        n = self._nodes[node]
        use = self.usage(node)
        if n.max_pods is not None and use.pods + 1 > n.max_pods:
            return f"node is full ({use.pods} of {n.max_pods} pods)"
        if n.allocatable is None:
            return None
        free = n.allocatable - use.requested
        if not requests.fits_in(free):
            return f"insufficient resources (free cpu {free.cpu}m, memory {free.memory})"
        return None

    def reserve(self, node: str, requests: Resources) -> None:
        use = self.usage(node)
        self._usage[node] = Usage(use.requested + requests, use.pods + 1)

    def release(self, node: str, requests: Resources) -> None:
        """Take back a ``reserve`` (a simulated move undone)."""
        use = self.usage(node)
        self._usage[node] = Usage(use.requested - requests, use.pods - 1)

    def copy(self) -> CapacityLedger:
        clone = CapacityLedger.__new__(CapacityLedger)
        clone._nodes = self._nodes
        clone._pending = self._pending
        clone._usage = dict(self._usage)
        return clone

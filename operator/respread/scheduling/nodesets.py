"""The cluster's nodes as bit sets, for judging where a replacement may land domain by domain.

Bit ``r`` of a set is the node of rank ``r`` in name order, so a set's lowest bit is its node of
least name. Sets per topology domain and per (affinity, tolerations) let the planner judge whole
domains at once rather than each of thousands of nodes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from respread.core.model import Node, Pod, PodSpec, VolumePin
from respread.inputs.volumes import refusing_volume
from respread.scheduling.placement import static_reasons


class NodeSets:
    """The cluster's nodes as bit sets: bit ``r`` is the node of rank ``r`` in name order.

    Where a replacement may land depends on a node only through its domain in each
    constraint's count table and, for the static filters (nodeSelector, required affinity,
    taints, cordon), through the pod's affinity and tolerations. Sets per domain and per
    (affinity, tolerations) let the planner's ``landing`` judge whole domains at once rather
    than each of thousands of nodes, and a set's lowest bit is its node of least name.
    """

    def __init__(self, nodes: tuple[Node, ...]) -> None:
        order = sorted(range(len(nodes)), key=lambda position: (nodes[position].name, position))
        self.by_rank = [nodes[position] for position in order]
        self.position = order  # rank -> index in state.nodes
        self.all = (1 << len(nodes)) - 1
        self._domains: dict[str, tuple[int, dict[str, int]]] = {}
        self._static: dict[tuple[object, ...], tuple[int, dict[str, int]]] = {}
        self._volumes: dict[tuple[VolumePin, ...], int] = {}

    def domains(self, key: str) -> tuple[int, dict[str, int]]:
        """The nodes labelled ``key``, and the nodes of each of its values."""
        hit = self._domains.get(key)
        if hit is None:
            ranks: dict[str, list[int]] = defaultdict(list)
            for rank, node in enumerate(self.by_rank):
                value = node.labels.get(key)
                if value is not None:
                    ranks[value].append(rank)
            labelled = bits(r for value_ranks in ranks.values() for r in value_ranks)
            hit = self._domains[key] = (labelled, {v: bits(r) for v, r in ranks.items()})
        return hit

    def static(self, spec: PodSpec) -> tuple[int, dict[str, int]]:
        """The nodes ``static_reasons`` allows, and the others by their first reason's summary.

        ``static_reasons`` reads only the spec's affinity and tolerations, hence the cache key.
        """
        key = (spec.affinity, spec.tolerations)
        hit = self._static.get(key)
        if hit is None:
            allowed: list[int] = []
            refused: dict[str, list[int]] = defaultdict(list)
            for rank, node in enumerate(self.by_rank):
                reasons = static_reasons(spec, node)
                if reasons:
                    refused[reasons[0].split(" (")[0]].append(rank)
                else:
                    allowed.append(rank)
            hit = (bits(allowed), {why: bits(r) for why, r in refused.items()})
            self._static[key] = hit
        return hit

    def volumes(self, pod: Pod) -> int:
        """The nodes every one of the pod's bound volumes admits (all nodes: it has none)."""
        if not pod.volume_pins:
            return self.all
        hit = self._volumes.get(pod.volume_pins)
        if hit is None:
            hit = self._volumes[pod.volume_pins] = bits(
                rank for rank, node in enumerate(self.by_rank) if refusing_volume(pod, node) is None
            )
        return hit

    @staticmethod
    def ranks(nodes: int) -> list[int]:
        """The ranks in a set, least first."""
        bits = bin(nodes)[:1:-1]
        return [rank for rank, bit in enumerate(bits) if bit == "1"]


def bits(ranks: Iterable[int]) -> int:
    out = 0
    for rank in ranks:
        out |= 1 << rank
    return out

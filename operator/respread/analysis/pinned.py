"""Pods pinned to their domain by a volume: counted like any pod, but never moved across it.

A pod whose bound PersistentVolumes admit only nodes of one value of a topology key (a zonal
disk: one zone) can only be replaced within that domain: the landing predictor refuses other
nodes (scheduling/landing.py), so no plan moves it across, and a violation that needs it to
move says so (report/build.py).
"""

from __future__ import annotations

from respread.analysis.groups import Group
from respread.inputs.volumes import refusing_volume
from respread.scheduling.spread import SpreadIndex


def pinned_members(index: SpreadIndex, group: Group, misplaced: frozenset[str]) -> tuple[int, int]:
    """(members pinned to their domain of the group's key by a volume, of them on ``misplaced``
    nodes)."""
    key = group.constraint.key
    cache: dict[object, bool] = {}
    total = bad = 0
    for node_name, pods in group.members.by_node.items():
        for pod in pods:
            if not pod.volume_pins:
                continue
            hit = cache.get(pod.volume_pins)
            if hit is None:
                values = {
                    n.labels.get(key) for n in index.state.nodes if refusing_volume(pod, n) is None
                }
                hit = cache[pod.volume_pins] = len(values) <= 1
            if hit:
                total += 1
                bad += node_name in misplaced
    return total, bad

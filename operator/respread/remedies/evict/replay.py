"""Applying a plan to a cluster state: what the cluster looks like once it has happened.

Each evicted pod is gone and its replacement (a copy of it, named ``<name>-r``) is bound where
the plan predicted. Used to check a plan against a fresh analysis of its own outcome.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from respread.core.model import ClusterState, Pod
from respread.remedies.evict.planner import Move


def apply_moves(state: ClusterState, moves: Iterable[Move]) -> ClusterState:
    by_pod: dict[tuple[str, str], Move] = {(m.pod.namespace, m.pod.name): m for m in moves}
    pods: list[Pod] = []
    for pod in state.pods:
        move = by_pod.get((pod.namespace, pod.name))
        if move is None:
            pods.append(pod)
        else:
            pods.append(replace(pod, name=f"{pod.name}-r", node_name=move.to_node, created=None))
    return replace(state, pods=tuple(pods))

"""The scheduler's word on unbound pods, from FailedScheduling Events (snapshot kind `Event`).

A pod's own PodScheduled=False condition is the first evidence of why it waits; where a snapshot
has none (a pod listed before the scheduler wrote it, or trimmed), the latest FailedScheduling
Event about the pod stands in. The operator does not watch Events: it reads the condition.
"""

from __future__ import annotations

from dataclasses import replace

from respread.core.model import ClusterState, SchedulingEvent


def with_evidence(state: ClusterState) -> ClusterState:
    """``state`` with each unbound pod lacking a PodScheduled=False condition given the message
    of its latest FailedScheduling Event (the same state when there is none to give)."""
    if not state.scheduling_events:
        return state
    latest: dict[tuple[str, str], SchedulingEvent] = {}
    for e in state.scheduling_events:
        known = latest.get((e.namespace, e.pod))
        if known is None or (e.time or 0.0) >= (known.time or 0.0):
            latest[(e.namespace, e.pod)] = e
    pods = list(state.pods)
    changed = False
    for position, pod in enumerate(pods):
        if pod.node_name is not None or pod.unschedulable is not None:
            continue
        event = latest.get((pod.namespace, pod.name))
        if event is not None:
            pods[position] = replace(pod, unschedulable=f"FailedScheduling: {event.message}")
            changed = True
    return replace(state, pods=tuple(pods)) if changed else state

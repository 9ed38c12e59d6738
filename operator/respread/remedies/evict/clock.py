"""What the eviction planner reads of the clock, and from when it reads nothing new.

The planner (planner.py) reads ``now`` in two places only. The minimum pod age
(scheduling/safety.py): a pod younger than minPodAge is protected, and the message counts its
seconds. The cooldown (evictor.EvictionGate.deferral): a workload evicted from less than a
cooldown ago waits, and the message counts those seconds too. Once no pod is younger than
minPodAge and no workload is in its cooldown, both read the same at every later instant (a pod
only grows older, an eviction only recedes), so from such an instant on the same analysis,
policy, history and holds give the same plan. `settled` says whether ``now`` is one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from respread.analysis.groups import WorkloadRef
from respread.core.model import Pod
from respread.inputs.policy import RebalancePolicy


def settled(
    pods: Iterable[Pod],
    policy: RebalancePolicy,
    now: float,
    history: Mapping[WorkloadRef, float],
) -> bool:
    """Whether the plan made at ``now`` is the plan at every later instant: no pod younger than
    minPodAge, no workload of ``history`` (the last eviction time per workload) in its
    cooldown. The comparisons are the planner's own, so a float rounding cannot tell them
    apart."""
    min_age = policy.eviction.min_pod_age
    if min_age > 0 and any(p.created is not None and now - p.created < min_age for p in pods):
        return False
    cooldown = policy.eviction.cooldown
    return not any(now - last < cooldown for last in history.values())

"""What a policy's earlier evictions hold back: cooldown, loop protection, pacing.

The history is a value: each scan reviews it (``reviewed``) and returns the next one; the
operator adds the evictions it made (``recorded``). Kept per workload:

- the time of its last eviction (the planner's cooldown runs from there);
- per topology key, the skew an eviction should have reduced, reviewed once the cooldown has
  passed: a workload whose skew did not go down is backed off for ``cooldown * 2**level``, the
  level rising with each eviction that did not help (at most BACKOFF_LIMIT), and forgotten once
  the group is balanced;
- the back-off level and when the back-off ends.

In Enforce, a workload is held back while it is backed off, or while one of its pods is not
Ready yet (pacing: a replacement must be Ready before the next eviction).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from respread.analysis.groups import Analysis, Group, WorkloadRef, workload_of
from respread.core.model import ClusterState

BACKOFF_LIMIT = 6  # at most 2**6 cooldowns
PACING = "waiting for a replacement to become Ready"


@dataclass(frozen=True, slots=True)
class EvictionHistory:
    """A policy's evictions per workload (never changed: the methods return a new history)."""

    last_eviction: Mapping[WorkloadRef, float] = field(default_factory=dict)
    skew_at_eviction: Mapping[tuple[WorkloadRef, str], int] = field(default_factory=dict)
    backoff_level: Mapping[WorkloadRef, int] = field(default_factory=dict)
    backoff_until: Mapping[WorkloadRef, float] = field(default_factory=dict)

    def workloads(self) -> list[WorkloadRef]:
        """Every workload the history knows something about, in order."""
        refs = (
            set(self.last_eviction)
            | {w for w, _ in self.skew_at_eviction}
            | set(self.backoff_level)
            | set(self.backoff_until)
        )
        return sorted(refs)

    def recorded(self, workload: WorkloadRef, key: str, skew: int, now: float) -> EvictionHistory:
        """With an eviction from ``workload`` at ``now``, whose group on ``key`` had ``skew``."""
        return EvictionHistory(
            {**self.last_eviction, workload: now},
            {**self.skew_at_eviction, (workload, key): skew},
            self.backoff_level,
            self.backoff_until,
        )

    def reviewed(self, analysis: Analysis, now: float, cooldown: float) -> EvictionHistory:
        """Loop protection: each eviction whose cooldown has passed is judged by its group's
        skew now; a workload whose eviction did not reduce its skew is backed off."""
        current = _worst_groups(analysis)
        pending = dict(self.skew_at_eviction)
        level = dict(self.backoff_level)
        until = dict(self.backoff_until)
        for (workload, key), before in self.skew_at_eviction.items():
            group = current.get((workload, key))
            if group is None or not group.violating:
                del pending[(workload, key)]
                level.pop(workload, None)
                continue
            if now - self.last_eviction.get(workload, now) < cooldown:
                continue  # give the replacement time to land
            del pending[(workload, key)]
            if group.skew >= before:
                level[workload] = min(level.get(workload, 0) + 1, BACKOFF_LIMIT)
                until[workload] = now + cooldown * (2 ** level[workload])
        return EvictionHistory(self.last_eviction, pending, level, until)

    def held(self, now: float, unready: Iterable[WorkloadRef]) -> dict[WorkloadRef, str]:
        """The workloads held back this scan, with the reason: a pod not Ready yet, a back-off."""
        out = dict.fromkeys(unready, PACING)
        for workload, until in self.backoff_until.items():
            if until > now:
                out[workload] = (
                    f"backed off until {int(until - now)}s from now: its last "
                    "eviction did not reduce its skew"
                )
        return out


def unready_workloads(state: ClusterState, analysis: Analysis) -> set[WorkloadRef]:
    """Workloads with a pod not Ready yet (pacing: a replacement must be Ready first)."""
    out = set()
    for pod in state.pods:
        if pod.owner is None or pod.terminating or pod.finished:
            continue
        if pod.node_name is None or not pod.ready:
            out.add(workload_of(pod, analysis.index))
    return out


def _worst_groups(analysis: Analysis) -> dict[tuple[WorkloadRef, str], Group]:
    """Per workload and topology key, its most skewed group (violating first): during a
    rollout matchLabelKeys makes two groups of one workload on one key, and an eviction is
    judged by the worse of them, not by whichever came last."""
    worst: dict[tuple[WorkloadRef, str], Group] = {}
    for group in analysis.groups:
        ref = (group.workload, group.constraint.key)
        seen = worst.get(ref)
        if seen is None or (bool(group.violating), group.skew) > (bool(seen.violating), seen.skew):
            worst[ref] = group
    return worst

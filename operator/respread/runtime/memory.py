"""What the operator remembers between scans of one policy.

The last eviction per workload (cooldown), the workloads whose evictions did not reduce their
skew (loop protection, with an exponential back-off), the previous scan's view (causes), and
the cause each ongoing violation was first given; and the deletion-cost orders of the last scan
(respread.remedies.cost.memo), which only spare the next scan work.

Each scan writes what a successor needs into the policy's status (the violations with their
cause and `since`, and `status.cooldowns`); an operator that starts, or is elected leader,
seeds its memory from there (`PolicyMemory.from_status`), so a restart or a failover neither
forgets why a workload is skewed nor evicts again from a workload in cooldown or back-off.
Only the previous scan's view of the cluster (the evidence for new causes) starts afresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from respread.analysis.causes import Cause, PreviousScan
from respread.analysis.groups import Analysis, WorkloadRef
from respread.remedies.cost.memo import CostMemo
from respread.report.model import Report, ViolationKey, WorkloadHistory
from respread.report.stored import remembered

BACKOFF_LIMIT = 6  # at most 2**6 cooldowns


@dataclass
class PolicyMemory:
    last_eviction: dict[WorkloadRef, float] = field(default_factory=dict)
    skew_at_eviction: dict[tuple[WorkloadRef, str], int] = field(default_factory=dict)
    backoff_until: dict[WorkloadRef, float] = field(default_factory=dict)
    backoff_level: dict[WorkloadRef, int] = field(default_factory=dict)
    previous: PreviousScan | None = None
    previous_status: Mapping[str, Any] | None = None
    last_scan: float | None = None
    causes: dict[ViolationKey, tuple[Cause, str]] = field(default_factory=dict)
    # exact: never changes a plan
    cost_memo: CostMemo = field(default_factory=CostMemo, compare=False, repr=False)

    @classmethod
    def from_status(cls, status: Mapping[str, Any] | None) -> PolicyMemory:
        """The memory a policy's status holds (empty for a policy never scanned)."""
        memory = cls()
        if not status:
            return memory
        memory.previous_status = dict(status)  # `since`, transitions, Events already posted
        known = remembered(status)
        memory.causes = dict(known.causes)
        for w in known.workloads:
            ref = WorkloadRef(w.namespace, w.kind, w.name)
            if w.last_eviction is not None:
                memory.last_eviction[ref] = w.last_eviction
            for key, skew in w.reviews:
                memory.skew_at_eviction[(ref, key)] = skew
            if w.backoff_level:
                memory.backoff_level[ref] = w.backoff_level
            if w.backoff_until is not None:
                memory.backoff_until[ref] = w.backoff_until
        return memory

    def histories(self) -> list[WorkloadHistory]:
        """Every workload this memory knows something about (for `status.cooldowns`)."""
        refs = (
            set(self.last_eviction)
            | {w for w, _ in self.skew_at_eviction}
            | set(self.backoff_level)
            | set(self.backoff_until)
        )
        return [
            WorkloadHistory(
                ref.namespace,
                ref.kind,
                ref.name,
                last_eviction=self.last_eviction.get(ref),
                reviews=tuple(
                    sorted(
                        (key, skew) for (w, key), skew in self.skew_at_eviction.items() if w == ref
                    )
                ),
                backoff_level=self.backoff_level.get(ref, 0),
                backoff_until=self.backoff_until.get(ref),
            )
            for ref in sorted(refs)
        ]

    def record_eviction(self, workload: WorkloadRef, key: str, skew: int, now: float) -> None:
        self.last_eviction[workload] = now
        self.skew_at_eviction[(workload, key)] = skew

    def review(self, analysis: Analysis, now: float, cooldown: float) -> None:
        """Loop protection: a workload whose eviction did not reduce its skew is backed off."""
        current = {(g.workload, g.constraint.key): g for g in analysis.groups}
        for (workload, key), before in list(self.skew_at_eviction.items()):
            group = current.get((workload, key))
            if group is None or not group.violating:
                self.skew_at_eviction.pop((workload, key))
                self.backoff_level.pop(workload, None)
                continue
            if now - self.last_eviction.get(workload, now) < cooldown:
                continue  # give the replacement time to land
            self.skew_at_eviction.pop((workload, key))
            if group.skew >= before:
                level = min(self.backoff_level.get(workload, 0) + 1, BACKOFF_LIMIT)
                self.backoff_level[workload] = level
                self.backoff_until[workload] = now + cooldown * (2**level)

    def held(self, now: float, unready: Iterable[WorkloadRef]) -> dict[WorkloadRef, str]:
        out = {w: "waiting for a replacement to become Ready" for w in unready}
        for workload, until in self.backoff_until.items():
            if until > now:
                out[workload] = (
                    f"backed off until {int(until - now)}s from now: its last "
                    "eviction did not reduce its skew"
                )
        return out

    def remember(self, analysis: Analysis) -> None:
        index = analysis.index
        self.previous = PreviousScan(
            nodes=frozenset(index.nodes),
            node_domains={n.name: dict(n.labels) for n in index.state.nodes},
            members={m.workload: m.count for m in analysis.members},
        )

    def carry_causes(self, report: Report) -> Report:
        """The report with each ongoing violation keeping the cause it was first given.

        Causes are read from what changed since the previous scan, so the scan after the one
        that saw a node leave or the replicas drop has no evidence left and would say Unknown.
        Like ``since``, the cause belongs to the violation: it stays until the violation is
        gone, and is only refined when it was Unknown.
        """
        kept: dict[ViolationKey, tuple[Cause, str]] = {}
        violations = []
        for found in report.violations:
            before = self.causes.get(found.key)
            v = found
            if before is not None and before[0] is not Cause.UNKNOWN:
                v = replace(found, cause=before[0], cause_message=before[1])
            kept[v.key] = (v.cause, v.cause_message)
            violations.append(v)
        self.causes = kept
        return replace(report, violations=tuple(violations))

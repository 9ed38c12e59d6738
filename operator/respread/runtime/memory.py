"""What the operator remembers between scans of one policy.

The scan's own memory (respread.pipeline.Memory: the eviction history for cooldown and loop
protection, the previous scan's view for causes, the cause each ongoing violation was first
given) is a value the pipeline returns; the operator only stores it, adds the evictions it made,
and keeps beside it the status it last wrote, when it last scanned, the deletion-cost orders
of the last scan (respread.remedies.cost.memo) and its analysis (respread.pipeline.AnalysisMemo),
which only spare the next scan work.

Each scan writes what a successor needs into the policy's status (the violations with their
cause and `since`, and `status.cooldowns`); an operator that starts, or is elected leader,
seeds its memory from there (`PolicyMemory.from_status`), so a restart or a failover neither
forgets why a workload is skewed nor evicts again from a workload in cooldown or back-off.
Only the previous scan's view of the cluster (the evidence for new causes) starts afresh.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from respread.analysis.groups import WorkloadRef
from respread.pipeline import AnalysisMemo, Memory, SharedAnalyses
from respread.remedies.cost.memo import CostMemo
from respread.report.model import WorkloadHistory


@dataclass
class PolicyMemory:
    scan: Memory = field(default_factory=lambda: Memory(holds=True))
    previous_status: Mapping[str, Any] | None = None
    last_scan: float | None = None
    # exact caches: never change a plan
    cost_memo: CostMemo = field(default_factory=CostMemo, compare=False, repr=False)
    analyses: AnalysisMemo = field(default_factory=AnalysisMemo, compare=False, repr=False)

    @classmethod
    def from_status(
        cls, status: Mapping[str, Any] | None, shared: SharedAnalyses | None = None
    ) -> PolicyMemory:
        """The memory a policy's status holds (empty for a policy never scanned); ``shared``:
        the analyses the operator's policies share (pipeline.SharedAnalyses)."""
        analyses = AnalysisMemo(shared)
        if not status:
            return cls(analyses=analyses)
        # `since`, transitions, Events already posted come from the status last written
        return cls(Memory.from_status(status), previous_status=dict(status), analyses=analyses)

    def histories(self) -> list[WorkloadHistory]:
        """Every workload this memory knows something about (for `status.cooldowns`)."""
        return self.scan.histories()

    def record_eviction(self, workload: WorkloadRef, key: str, skew: int, now: float) -> None:
        self.scan = self.scan.recorded(workload, key, skew, now)

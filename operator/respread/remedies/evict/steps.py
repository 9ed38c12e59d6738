"""A plan's steps: the evictions it makes or defers, and the pods it leaves alone and why."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from respread.analysis.groups import WorkloadRef
from respread.core.model import Pod


class StepState(StrEnum):
    PLANNED = "Planned"
    DEFERRED = "Deferred"


class SkipKind(StrEnum):
    PROTECTED = "Protected"
    BLOCKED = "Blocked"  # a budget refuses the eviction
    NO_ROOM = "NoRoom"  # no node would take the replacement
    WOULD_VIOLATE = "WouldViolate"  # the move would break another group

    @property
    def for_the_counts(self) -> bool:
        """Refused for what the counts were: worth trying again once they change."""
        return self in (SkipKind.NO_ROOM, SkipKind.WOULD_VIOLATE)


class Verdict(StrEnum):
    """One verdict per violated group, which the plan, the remedies and the summary share."""

    FIXABLE = "Fixable"  # this run's evictions and later runs' leave no pod misplaced
    WAITING = "Waiting"  # eviction fixes it once holds lift (minPodAge, budgets' unhealthy pods)
    PARTLY_FIXABLE = "PartlyFixable"  # eviction leaves fewer pods misplaced, not none
    NOT_FIXABLE = "NotFixable"  # eviction changes nothing of it


@dataclass(frozen=True, slots=True)
class Move:
    pod: Pod
    workload: WorkloadRef
    from_node: str
    to_node: str
    from_domain: tuple[tuple[str, str], ...]
    to_domain: tuple[tuple[str, str], ...]
    reason: str
    state: StepState = StepState.PLANNED
    deferred_by: str = ""


@dataclass(frozen=True, slots=True)
class Skip:
    pod: Pod
    workload: WorkloadRef
    kind: SkipKind
    reason: str

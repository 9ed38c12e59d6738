"""The ReplicaSet controller's ranking of the pods a scale-in deletes, as far as respread needs
it: the tiers before the cost, and the pod-deletion-cost annotation read as the controller reads
it."""

from __future__ import annotations

import re
from enum import IntEnum
from typing import Final

from respread.core.annotations import DELETION_COST
from respread.core.model import Phase, Pod

INT32_MIN: Final = -(2**31)
INT32_MAX: Final = 2**31 - 1


class Tier(IntEnum):
    """The ReplicaSet controller's ranking before the cost: lower tiers are deleted first."""

    UNASSIGNED = 0
    PENDING = 1
    UNKNOWN = 2
    NOT_READY = 3
    READY = 4


def tier(pod: Pod) -> Tier:
    if pod.node_name is None:
        return Tier.UNASSIGNED
    if pod.phase is Phase.PENDING:
        return Tier.PENDING
    if pod.phase is Phase.UNKNOWN:
        return Tier.UNKNOWN
    return Tier.READY if pod.ready else Tier.NOT_READY


def current_cost(pod: Pod) -> int | None:
    """The pod's pod-deletion-cost; None when absent or unreadable (the controller reads 0)."""
    return parse_cost(pod.annotations.get(DELETION_COST))


# What the API server and the ReplicaSet controller accept (GetDeletionCostFromPodAnnotations):
# ASCII digits, no sign but a leading '-', no leading zero, no space; Python's int() takes more.
_COST = re.compile(r"-[0-9]+|0|[1-9][0-9]*", re.ASCII)


def parse_cost(raw: str | None) -> int | None:
    """A pod-deletion-cost annotation's value (an int32); None when absent or unreadable (the
    controller reads 0 for both)."""
    if raw is None or _COST.fullmatch(raw) is None:
        return None
    value = int(raw, 10)
    return value if INT32_MIN <= value <= INT32_MAX else None

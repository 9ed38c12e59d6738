"""The annotations respread reads and writes on pods and Deployments, the field manager it
writes them with, and what taking a written cost back does."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

DELETION_COST: Final = "controller.kubernetes.io/pod-deletion-cost"
# Written with each cost respread writes (remedies/cost/release.py): the policy, and the value.
COST_POLICY: Final = "respread.io/deletion-cost-policy"
COST_WRITTEN: Final = "respread.io/deletion-cost-written"
# A Deployment's surge operation (remedies/surge/plan.py), and its opt-out.
SURGE_STATE: Final = "respread.io/surge-operation"
SURGE_OPT: Final = "respread.io/surge"
FIELD_MANAGER: Final = "respread"  # the field manager respread writes costs and replicas with


class ReleaseAction(StrEnum):
    """How a cost respread wrote is taken back."""

    REMOVE = "Remove"  # the cost and respread's companion annotations
    HAND_OVER = "HandOver"  # the cost kept, now under another policy
    UNTAG = "Untag"  # another manager's cost now: only respread's companions removed

"""A surge's state, kept in an annotation on its Deployment (core.annotations.SURGE_STATE,
JSON), written in the same patch as each replica change with a resourceVersion precondition:
a restarted operator (or a new leader) resumes the operation from there. Pure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from respread.core.annotations import SURGE_STATE
from respread.core.model import Workload


class Phase(StrEnum):
    SURGING = "Surging"  # replicas raised to n + k; waiting for the new pods to be Ready
    MARKING = "Marking"  # victims chosen (recorded), their costs being written
    DRAINING = "Draining"  # replicas back to n; waiting for the controller to delete the victims
    ROLLING_BACK = "RollingBack"  # the new pods were not Ready in time: back to n
    ROLLED_BACK = "RolledBack"  # over; kept so that the Deployment is not surged again at once


@dataclass(frozen=True, slots=True)
class Operation:
    """The state of one surge, as kept in the Deployment's annotation."""

    policy: str
    original: int
    target: int
    started: float
    deadline: float
    phase: Phase = Phase.SURGING
    victims: tuple[str, ...] = ()  # pod uids, lowest cost first (Marking and later)
    reason: str = ""

    def to_json(self) -> str:
        return json.dumps(
            {
                "policy": self.policy,
                "originalReplicas": self.original,
                "targetReplicas": self.target,
                "started": self.started,
                "deadline": self.deadline,
                "phase": self.phase.value,
                "victims": list(self.victims),
                "reason": self.reason,
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def parse(cls, raw: str | None) -> Operation | None:
        """The operation in an annotation's value; None when absent or unreadable."""
        if not raw:
            return None
        try:
            data = json.loads(raw)
            if not isinstance(data, dict):
                return None
            victims = data.get("victims") or []
            original, target = data["originalReplicas"], data["targetReplicas"]
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (original, target)):
                return None
            return cls(
                policy=str(data["policy"]),
                original=original,
                target=target,
                started=float(data["started"]),
                deadline=float(data["deadline"]),
                phase=Phase(data["phase"]),
                victims=tuple(str(v) for v in victims) if isinstance(victims, list) else (),
                reason=str(data.get("reason") or ""),
            )
        except (ValueError, KeyError, TypeError):
            return None


def operation_of(deployment: Workload) -> Operation | None:
    return Operation.parse(deployment.markers.get(SURGE_STATE))

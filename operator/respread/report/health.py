"""What a policy's status says about the operator's own health: whether its scan could trust the
watch cache (`CacheStale`), and whether it finished within its deadline (`ScanStalled`); and the
Events told when either turns.

Both conditions appear the first time they are True, and stay afterwards, False once a scan
is fine again, so that `kubectl get` shows when the last trouble ended. A scan that met either
does not succeed: its ScanSucceeded is False, with the same reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from respread.report import stored
from respread.report.model import Condition, ConditionStatus, ConditionType

CACHE_STALE = ConditionType.CACHE_STALE
SCAN_STALLED = ConditionType.SCAN_STALLED


@dataclass(frozen=True, slots=True)
class Verdict:
    """What stopped a scan, if anything: a cache not known to be current (why), a deadline
    passed (what was left undone)."""

    stale: str = ""
    stalled: str = ""

    @property
    def failed(self) -> str:
        """ScanSucceeded's reason when the scan did not succeed ("" when it did)."""
        return "DeadlineExceeded" if self.stalled else CACHE_STALE if self.stale else ""


HEALTHY = Verdict()


def _had(previous: Mapping[str, Any] | None, kind: ConditionType) -> bool:
    return kind in stored.conditions(previous)


def _was_true(previous: Mapping[str, Any] | None, kind: ConditionType) -> bool:
    c = stored.conditions(previous).get(kind)
    return c is not None and c.status is ConditionStatus.TRUE


def health_conditions(verdict: Verdict, previous: Mapping[str, Any] | None) -> list[Condition]:
    """CacheStale and ScanStalled: True when this scan met them, False afterwards (absent while
    a policy never met them)."""
    out = []
    if verdict.stale:
        out.append(Condition(CACHE_STALE, True, "NotShownCurrent", verdict.stale))
    elif _had(previous, CACHE_STALE):
        out.append(
            Condition(CACHE_STALE, False, "Current", "the scan acted on a current watch cache")
        )
    if verdict.stalled:
        out.append(Condition(SCAN_STALLED, True, "DeadlineExceeded", verdict.stalled))
    elif _had(previous, SCAN_STALLED):
        done = "the scan finished within its deadline"
        out.append(Condition(SCAN_STALLED, False, "WithinDeadline", done))
    return out


def with_health(conditions: Sequence[Condition], verdict: Verdict) -> list[Condition]:
    """A completed scan's conditions, ScanSucceeded False when the verdict says it failed."""
    if not verdict.failed:
        return list(conditions)
    message = verdict.stalled or verdict.stale
    return [
        Condition(ConditionType.SCAN_SUCCEEDED, False, verdict.failed, message)
        if c.type is ConditionType.SCAN_SUCCEEDED
        else c
        for c in conditions
    ]


def health_events(
    verdict: Verdict, previous: Mapping[str, Any] | None
) -> list[tuple[str, bool, str]]:
    """(reason, warning, message) for each condition that turns: CacheStale and ScanStalled
    when they start, CacheCurrent and ScanWithinDeadline when they end."""
    out: list[tuple[str, bool, str]] = []
    stale_before = _was_true(previous, CACHE_STALE)
    if verdict.stale and not stale_before:
        out.append((CACHE_STALE, True, f"not acting: {verdict.stale}"))
    elif stale_before and not verdict.stale:
        out.append(("CacheCurrent", False, "the watch cache is current again"))
    stalled_before = _was_true(previous, SCAN_STALLED)
    if verdict.stalled and not stalled_before:
        out.append((SCAN_STALLED, True, verdict.stalled))
    elif stalled_before and not verdict.stalled:
        out.append(("ScanWithinDeadline", False, "scans finish within their deadline again"))
    return out

"""The status as stored, read back (the inverse of report/contract.py for the status).

What the next scan needs from the last one's status: each condition's last transition, when
each violation was first seen; and what a restarted (or newly elected) operator remembers: the
causes of the ongoing violations and, in ``cooldowns``, the workloads respread evicted from
recently (cooldown, loop protection and back-off). The status is the operator's own, but anyone
with access to the status subresource may have edited it: malformed entries are left out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeGuard

from respread.analysis.causes import Cause
from respread.report.model import (
    ConditionStatus,
    ConditionType,
    StatusCondition,
    ViolationKey,
    WorkloadHistory,
    match_text,
)

Stored = Mapping[str, Any]  # a status as the API server returns it


def parse_time(value: object) -> float | None:
    """An RFC 3339 time as a Unix time; None if it is not one."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _items(value: object) -> Sequence[Any]:
    return value if isinstance(value, list) else ()


def _count(value: object) -> int:
    return value if _is_int(value) and value > 0 else 0


# ---- conditions and violations ------------------------------------------------------------


def _condition(c: object) -> StatusCondition | None:
    if not isinstance(c, Mapping) or _str(c.get("type")) is None:
        return None
    try:
        status = ConditionStatus(str(c.get("status")))
    except ValueError:
        return None
    generation = c.get("observedGeneration")
    return StatusCondition(
        type=str(c["type"]),
        status=status,
        reason=_str(c.get("reason")),
        message=_str(c.get("message")),
        last_transition_time=_str(c.get("lastTransitionTime")),
        observed_generation=generation if _is_int(generation) else None,
    )


def conditions(status: Stored | None) -> dict[str, StatusCondition]:
    """The conditions of a stored status, by type."""
    read = (_condition(c) for c in _items((status or {}).get("conditions")))
    return {c.type: c for c in read if c is not None}


def still_true(status: Stored | None, condition: str) -> bool:
    """Whether the stored status does not say ``condition`` is False (a status without it, or
    none, counts as True: nothing to tell a change from)."""
    c = conditions(status).get(condition)
    return c is None or c.status is not ConditionStatus.FALSE


def scanned_generation(status: Stored | None) -> int | None:
    """The policy generation the stored status's scan saw (None: not known)."""
    value = (status or {}).get("observedGeneration")
    return value if _is_int(value) else None


def evicted_total(status: Stored | None) -> int:
    """The evictions the stored status says the policy has made since it was created."""
    return _count((status or {}).get("evictedTotal"))


def scan_failing(status: Stored | None) -> bool:
    """Whether the stored status says the last scan failed."""
    c = conditions(status).get(ConditionType.SCAN_SUCCEEDED)
    return c is not None and c.status is ConditionStatus.FALSE


def holds_deletion_cost(status: Stored | None) -> bool:
    """Whether the stored status has a ``deletionCost`` (it is then kept, its counts zeroed)."""
    return "deletionCost" in (status or {})


def violation_key(v: object) -> ViolationKey | None:
    """The key of a violation in a stored status (None: not a violation)."""
    if not isinstance(v, Mapping) or not isinstance(v.get("workload"), Mapping):
        return None
    namespace, topology_key = v.get("namespace"), v.get("topologyKey")
    kind, name = v["workload"].get("kind"), v["workload"].get("name")
    if not (
        isinstance(namespace, str)
        and isinstance(kind, str)
        and isinstance(name, str)
        and isinstance(topology_key, str)
    ):
        return None
    match = v.get("matchLabels")
    pairs = tuple(
        (k, x)
        for k, x in (match.items() if isinstance(match, Mapping) else ())
        if isinstance(x, str)
    )
    return (namespace, kind, name, topology_key, match_text(pairs))


def first_seen(status: Stored | None) -> dict[ViolationKey, str]:
    """When each violation of a stored status was first seen (its ``since``)."""
    out: dict[ViolationKey, str] = {}
    for v in _items((status or {}).get("violations")):
        key, since = violation_key(v), _str(v.get("since")) if isinstance(v, Mapping) else None
        if key is not None and since is not None:
            out[key] = since
    return out


# ---- what a restarted operator remembers -------------------------------------------------


@dataclass(frozen=True, slots=True)
class Remembered:
    """The operator's memory of one policy, as read back from its status."""

    causes: dict[ViolationKey, tuple[Cause, str]] = field(default_factory=dict)
    workloads: tuple[WorkloadHistory, ...] = ()


def _reviews(entry: Mapping[str, Any]) -> tuple[tuple[str, int], ...]:
    reviews = []
    for r in _items(entry.get("pendingReview")):
        if isinstance(r, Mapping) and _str(r.get("topologyKey")) is not None:
            skew = r.get("skewAtEviction")
            if _is_int(skew):
                reviews.append((str(r["topologyKey"]), skew))
    return tuple(reviews)


def _history(entry: object) -> WorkloadHistory | None:
    if not isinstance(entry, Mapping):
        return None
    workload = entry.get("workload")
    namespace = _str(entry.get("namespace"))
    if not isinstance(workload, Mapping) or namespace is None:
        return None
    kind, name = _str(workload.get("kind")), _str(workload.get("name"))
    if kind is None or name is None:
        return None
    return WorkloadHistory(
        namespace,
        kind,
        name,
        last_eviction=parse_time(entry.get("lastEvictionTime")),
        reviews=_reviews(entry),
        backoff_level=_count(entry.get("backoffLevel")),
        backoff_until=parse_time(entry.get("backoffUntil")),
    )


def _cause(v: Mapping[str, Any]) -> tuple[Cause, str] | None:
    try:
        cause = Cause(str(v.get("cause")))
    except ValueError:
        return None
    message = v.get("causeMessage")
    return cause, message if isinstance(message, str) else ""


def remembered(status: Stored | None) -> Remembered:
    """Read back what a status says the operator knew: each listed violation's cause (an ongoing
    violation keeps the cause it was first given), and each workload's eviction history."""
    status = status or {}
    causes = {}
    for v in _items(status.get("violations")):
        key = violation_key(v)
        cause = _cause(v) if key is not None else None
        if key is not None and cause is not None:
            causes[key] = cause
    workloads = tuple(
        w for w in (_history(e) for e in _items(status.get("cooldowns"))) if w is not None
    )
    return Remembered(causes, workloads)

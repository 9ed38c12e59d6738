"""The domain memory a stored status holds (the inverse of contract.domains_json): what a
restarted or newly elected operator remembers of lost domains, outages and recoveries. The
domains each workload was last seen over start afresh (the next scan sees them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from respread.analysis.domain_memory import DomainMemory, DomainPhase, Recovery
from respread.analysis.groups import WorkloadRef
from respread.report.stored import parse_time


def _items(value: object) -> list[Mapping[str, Any]]:
    return [v for v in value if isinstance(v, Mapping)] if isinstance(value, list) else []


def _text(entry: Mapping[str, Any], key: str) -> str | None:
    value = entry.get(key)
    return value if isinstance(value, str) else None


def stored_domains(status: Mapping[str, Any] | None) -> DomainMemory:
    status = status or {}
    lost: dict[tuple[WorkloadRef, str, str], float] = {}
    known: dict[tuple[WorkloadRef, str], frozenset[str]] = {}
    for e in _items(status.get("lostDomains")):
        workload = e.get("workload")
        ns, key, domain = _text(e, "namespace"), _text(e, "topologyKey"), _text(e, "domain")
        since = parse_time(e.get("since"))
        if not isinstance(workload, Mapping) or None in (ns, key, domain) or since is None:
            continue
        kind, name = _text(workload, "kind"), _text(workload, "name")
        if kind is None or name is None:
            continue
        assert ns is not None and key is not None and domain is not None
        ref = WorkloadRef(ns, kind, name)
        lost[(ref, key, domain)] = since
        known[(ref, key)] = known.get((ref, key), frozenset())
    outages: dict[tuple[str, str], float | None] = {}
    recovering: dict[tuple[str, str], Recovery] = {}
    for e in _items(status.get("domainPhases")):
        key, domain, phase = _text(e, "topologyKey"), _text(e, "domain"), _text(e, "phase")
        if key is None or domain is None:
            continue
        since = parse_time(e.get("since"))
        if phase == DomainPhase.OUTAGE.value:
            outages[(key, domain)] = since
        elif phase == DomainPhase.RECOVERING.value and since is not None:
            start = e.get("workloadsAtStart")
            count = start if isinstance(start, int) and not isinstance(start, bool) else 0
            recovering[(key, domain)] = Recovery(since, count)
    return DomainMemory(known, lost, outages, recovering)

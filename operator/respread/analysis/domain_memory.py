"""Domains remembered from one scan to the next: lost domains, outages, and the recovery ramp.

Per workload and topology key (not the hostname key: a node going is ordinary churn), the
eligible domains its groups were judged over are remembered. One that is no longer eligible
(its last node gone: a zone scaled to zero, a node pool removed) and is not in an outage is
*lost*: reported with when it went and whether the workload's minDomains is now unmet, until it
comes back (*returned*, reported once) or the workload goes.

Outages (scheduling/outages.py) are remembered too. One that ends with its domain back is
*recovering*: workloads with a violated group over it are moved back in steps
(remedies/evict/ramp.py), and
the domain's phase is reported, Outage -> Recovering -> Normal (reported once, when no workload
over it is violated any more).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from respread.analysis.groups import Analysis, Group, WorkloadRef
from respread.scheduling.outages import Outage
from respread.scheduling.spread import HOSTNAME_KEY

WorkloadKey = tuple[WorkloadRef, str]  # (workload, topology key)
DomainKey = tuple[str, str]  # (topology key, domain)


class DomainPhase(StrEnum):
    OUTAGE = "Outage"
    RECOVERING = "Recovering"
    NORMAL = "Normal"


@dataclass(frozen=True, slots=True)
class Recovery:
    since: float  # when the outage was seen to end
    workloads: int  # workloads with a violated group over the domain then


@dataclass(frozen=True, slots=True)
class DomainMemory:
    """What one scan hands the next about domains."""

    known: Mapping[WorkloadKey, frozenset[str]] = field(default_factory=dict)
    lost: Mapping[tuple[WorkloadRef, str, str], float] = field(default_factory=dict)
    outages: Mapping[DomainKey, float | None] = field(default_factory=dict)  # -> since
    recovering: Mapping[DomainKey, Recovery] = field(default_factory=dict)


NO_DOMAINS = DomainMemory()


@dataclass(frozen=True, slots=True)
class LostDomain:
    workload: WorkloadRef
    topology_key: str
    domain: str
    since: float
    min_domains: int
    eligible: int  # eligible domains now
    new: bool = False  # lost since the last scan

    @property
    def min_domains_unmet(self) -> bool:
        return self.eligible < self.min_domains


@dataclass(frozen=True, slots=True)
class ReturnedDomain:
    workload: WorkloadRef
    topology_key: str
    domain: str
    lost_since: float


@dataclass(frozen=True, slots=True)
class PhaseEntry:
    topology_key: str
    domain: str
    phase: DomainPhase
    since: float | None
    workloads: int  # workloads with a violated group over it now
    workloads_at_start: int = 0  # Recovering: when the outage ended


@dataclass(frozen=True, slots=True)
class DomainView:
    """The domain findings of one scan, for the report."""

    lost: tuple[LostDomain, ...] = ()
    returned: tuple[ReturnedDomain, ...] = ()
    phases: tuple[PhaseEntry, ...] = ()

    def recovering(self) -> frozenset[DomainKey]:
        return frozenset(
            (p.topology_key, p.domain) for p in self.phases if p.phase is DomainPhase.RECOVERING
        )


NO_VIEW = DomainView()


def _eligible(analysis: Analysis) -> dict[WorkloadKey, tuple[frozenset[str], int]]:
    """Per workload and key: its groups' eligible domains (and its largest minDomains)."""
    out: dict[WorkloadKey, tuple[frozenset[str], int]] = {}
    for g in analysis.groups:
        key = g.constraint.key
        if key == HOSTNAME_KEY:
            continue
        wk = (g.workload, key)
        known, most = out.get(wk, (frozenset(), 1))
        out[wk] = (known | frozenset(g.domains), max(most, g.constraint.min_domains))
    return out


def _over(groups: Iterable[Group], key: DomainKey) -> set[WorkloadRef]:
    return {g.workload for g in groups if g.constraint.key == key[0] and key[1] in g.domains}


def remember(
    memory: DomainMemory,
    analysis: Analysis,
    outages: tuple[Outage, ...],
    now: float,
) -> tuple[DomainMemory, DomainView]:
    """This scan's domain findings, and the memory for the next scan."""
    down = {(o.key, o.domain): o.since for o in outages}
    down_by_key: dict[str, set[str]] = {}
    for k, d in down:
        down_by_key.setdefault(k, set()).add(d)
    eligible = _eligible(analysis)
    known: dict[WorkloadKey, frozenset[str]] = {}
    lost: dict[tuple[WorkloadRef, str, str], float] = {}
    lost_view: list[LostDomain] = []
    returned: list[ReturnedDomain] = []
    for wk, (domains, min_domains) in eligible.items():
        workload, key = wk
        in_outage = frozenset(down_by_key.get(key, ()))
        before = memory.known.get(wk, frozenset())
        now_known = domains | (before & in_outage)  # a domain in an outage is not lost
        known[wk] = now_known
        gone = {d for (w, k, d) in memory.lost if w == workload and k == key}
        gone |= before - now_known
        for d in sorted(gone):
            since = memory.lost.get((workload, key, d), now)
            if d in now_known:
                returned.append(ReturnedDomain(workload, key, d, since))
                continue
            lost[(workload, key, d)] = since
            new = (workload, key, d) not in memory.lost
            lost_view.append(
                LostDomain(workload, key, d, since, min_domains, len(domains), new=new)
            )
    recovering, phases, outages_kept = _phases(memory, analysis, down, now)
    after = DomainMemory(known, lost, outages_kept, recovering)
    return after, DomainView(tuple(lost_view), tuple(returned), phases)


def _phases(
    memory: DomainMemory,
    analysis: Analysis,
    down: Mapping[DomainKey, float | None],
    now: float,
) -> tuple[dict[DomainKey, Recovery], tuple[PhaseEntry, ...], dict[DomainKey, float | None]]:
    """The recoveries to remember, the phases to report, and the outages to remember: those
    found now, and those whose domain has no Ready node left (its nodes gone, or being
    replaced): an outage ends when a node of its domain is Ready again."""
    violated = analysis.violations
    labelled = {(k, v) for n in analysis.index.state.nodes if n.ready for k, v in n.labels.items()}
    outages = dict(down)
    for key, since in memory.outages.items():
        if key not in down and key not in labelled:
            outages[key] = since
    recovering = {k: r for k, r in memory.recovering.items() if k not in outages}
    for key in memory.outages:
        if key not in outages and key not in recovering:
            recovering[key] = Recovery(now, len(_over(violated, key)))
    phases = [
        PhaseEntry(k, d, DomainPhase.OUTAGE, since, len(_over(violated, (k, d))))
        for (k, d), since in sorted(outages.items())
    ]
    for key, r in sorted(recovering.items()):
        left = len(_over(violated, key))
        phase = DomainPhase.RECOVERING if left else DomainPhase.NORMAL
        phases.append(PhaseEntry(key[0], key[1], phase, r.since, left, r.workloads))
    still = {k: r for k, r in recovering.items() if _over(violated, k)}
    return still, tuple(phases), outages


def over(groups: Iterable[Group], key: DomainKey) -> set[WorkloadRef]:
    """The workloads with a group of the key over the domain."""
    return _over(groups, key)

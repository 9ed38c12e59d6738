"""Domains in an outage and pods spread holds Pending, as text (`plan -o text`, `explain`)."""

from __future__ import annotations

from respread.analysis.domain_memory import DomainPhase, DomainView
from respread.analysis.pending import PendingPod, UnblockKind
from respread.core.timestamps import format_rfc3339
from respread.scheduling.outages import Outage


def outages_text(outages: tuple[Outage, ...]) -> list[str]:
    """One line per domain in an outage."""
    if not outages:
        return []
    out = ["", f"{len(outages)} domain(s) in an outage (every node NotReady or unreachable):"]
    for o in outages:
        since = format_rfc3339(o.since) if o.since is not None else "an unknown time"
        nodes = ", ".join(o.nodes[:5]) + (
            f" and {len(o.nodes) - 5} more" if len(o.nodes) > 5 else ""
        )
        out.append(f"  {o}: {len(o.nodes)} node(s) down since {since} ({nodes})")
    return out


def _when(t: float | None) -> str:
    return format_rfc3339(t) if t is not None else "an unknown time"


def domains_text(view: DomainView) -> list[str]:
    """Lost and returned domains, and the phases of domains after an outage."""
    out: list[str] = []
    for d in view.lost:
        unmet = (
            f"; minDomains {d.min_domains} now unmet ({d.eligible} eligible)"
            if d.min_domains_unmet
            else ""
        )
        out.append(
            f"  {d.workload} lost {d.topology_key}={d.domain} at {_when(d.since)} "
            f"(its last node went){unmet}"
        )
    for r in view.returned:
        out.append(
            f"  {r.workload}: {r.topology_key}={r.domain} is back (lost at {_when(r.lost_since)})"
        )
    for p in view.phases:
        if p.phase is DomainPhase.RECOVERING:
            done = p.workloads_at_start - p.workloads
            detail = f"since {_when(p.since)}; {p.workloads} workload(s) still skewed over it" + (
                f", {done} of {p.workloads_at_start} rebalanced" if done > 0 else ""
            )
        elif p.phase is DomainPhase.NORMAL:
            detail = "recovered: no workload skewed over it"
        else:
            detail = f"since {_when(p.since)}; {p.workloads} workload(s) skewed over it"
        out.append(f"  {p.topology_key}={p.domain}: {p.phase.value} ({detail})")
    return ["", "Domains:", *out] if out else []


def pending_text(pending: tuple[PendingPod, ...]) -> list[str]:
    """A section per pod: the binding constraint and domain, why, and what would unblock it."""
    if not pending:
        return []
    out = ["", f"{len(pending)} pod(s) held Pending by topology spread:"]
    for p in pending:
        out.append("")
        out.extend(pending_pod_text(p))
    return out


def pending_pod_text(p: PendingPod) -> list[str]:
    w = p.workload
    counts = ", ".join(f"{d or chr(34) * 2}={n}" for d, n in p.counts) or "none eligible"
    out = [
        f"{p.pod.namespace}/{p.pod.name} ({w.kind} {w.name})  {p.topology_key}  "
        f"maxSkew {p.max_skew}  [Pending: {p.obstacle.value}]",
        f"  domains: {counts} (global minimum {p.global_min}"
        + (f", minDomains {p.min_domains}" if p.min_domains > 1 else "")
        + ")",
        f"  {p.message}",
    ]
    for a in p.admitted:
        for n in a.nodes:
            out.append(f"    {a.domain or chr(34) * 2}: {n.node}: {n.detail}")
    if p.admitted_total > len(p.admitted):
        out.append(f"    ... {p.admitted_total} admitted domains in all")
    out.append(f"  {p.nodes_refused_by_spread} node(s) would take it but for the spread Filter")
    for u in p.unblock:
        label = "respread can plan" if u.kind is UnblockKind.MOVE else "needs"
        out.append(f"  unblock ({label}): {u.message}")
    if p.evidence:
        out.append(f"  scheduler: {p.evidence}")
    return out

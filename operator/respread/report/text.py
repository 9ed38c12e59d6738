"""The report as text, for a person at a terminal (`respread plan -o text`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from respread.core.limits import few_named
from respread.core.timestamps import format_rfc3339
from respread.inputs.policy import Mode
from respread.remedies.choose import Remedy, RemedyVerdict
from respread.remedies.evict.steps import Move, Skip
from respread.remedies.evict.steps import Verdict as GroupVerdict  # move.Verdict: Now/Later/No
from respread.report.model import (
    TIER_NAMES,
    CostEntry,
    CostOrder,
    CoverageSection,
    DeletionCostSection,
    Report,
    Summary,
    SurgeSection,
    Violation,
    match_text,
)
from respread.report.move import MoveAnswer, Verdict
from respread.report.pending_text import domains_text, outages_text, pending_text
from respread.scheduling.controller import Tier

ORDER_ROWS_SHOWN = 30  # pods of one ReplicaSet listed in the text (JSON lists them all)


def where(domains: Iterable[tuple[str, str]]) -> str:
    """A pod's domains, their values only: `eu-west-1a,node-3`; `-` for none."""
    return ",".join(value for _, value in domains) or "-"


def _table(rows: list[list[str]], indent: str = "  ") -> list[str]:
    if not rows:
        return []
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        indent + "  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
        for r in rows
    ]


def render_text(report: Report) -> str:
    s = report.summary
    out = [
        f"Scanned {s.nodes} nodes, {s.pods} pods, {s.constraint_groups} constraint groups "
        f"(policy {report.policy.name}, mode {report.policy.mode.value}).",
    ]
    out.extend(coverage_text(report.coverage))
    out.extend(outages_text(report.outages))
    if not report.violations:
        out.extend(_all_clear(report.coverage, pending=bool(report.pending)))
    else:
        out.append(verdicts_text(s) + ".")
        for v in report.violations:
            out.append("")
            out.extend(_violation_text(v))
        out.append("")
        out.extend(_plan_text(report))
    out.extend(pending_text(report.pending))
    if not report.violations and report.evictions:  # evictions that unblock pending pods
        out.append("")
        out.extend(_plan_text(report))
    out.extend(domains_text(report.domains))
    out.extend(deletion_cost_text(report.deletion_cost))
    out.extend(_surge_text(report.surge, report.policy.mode))
    return "\n".join(out) + "\n"


UNKNOWN_SHOWN = 10  # pods on unknown nodes listed one by one


def coverage_text(c: CoverageSection) -> list[str]:
    """What the scan could not see, and a selection that holds nothing: never an all-clear."""
    out = []
    if c.nothing_selected:
        out.append(f"The policy selects no pod: {c.nothing_selected}. Nothing was checked.")
    if c.missing_namespaces and not c.nothing_selected:
        out.append(
            "Warning: namespace(s) selected by name do not exist: "
            f"{', '.join(c.missing_namespaces)}."
        )
    if c.matching_pod_selector == 0 and not c.nothing_selected:
        out.append(
            f"Warning: spec.selector.podSelector matches none of the {c.pods_selected} pod(s) "
            "in the selected namespaces: nothing may be evicted."
        )
    if c.complete:
        return out
    lost = c.pods_on_unknown_nodes
    out.append(
        f"Incomplete input: {len(lost)} pod(s) are bound to nodes the input does not hold, and "
        "are left out of every count:"
    )
    out.extend(f"  {p.namespace}/{p.pod} on node {p.node}" for p in lost[:UNKNOWN_SHOWN])
    if len(lost) > UNKNOWN_SHOWN:
        out.append(f"  ... {len(lost)} pods in all")
    groups = [f"{w.namespace}/{w.name} {key}" for w, key in c.incomplete_groups]
    if groups:
        more = f" and {len(groups) - 5} more" if len(groups) > 5 else ""
        out.append(
            f"  {len(groups)} constraint group(s) counted without them: "
            f"{', '.join(groups[:5])}{more}"
        )
    return out


def _all_clear(c: CoverageSection, *, pending: bool) -> list[str]:
    """No violation found: said only as far as the scan can vouch for it (and not as an
    all-clear when spread holds pods Pending)."""
    if c.nothing_selected:
        return []  # coverage_text said it: nothing was checked
    if c.complete and pending:
        return ["No misplaced pods; pods are held Pending by topology spread (below)."]
    if c.complete:
        return ["No topology spread violations."]
    return [
        "No topology spread violations in what the input holds; "
        f"{len(c.incomplete_groups)} constraint group(s) were counted without some of their "
        "pods (above)."
    ]


def verdicts_text(s: Summary) -> str:
    """'3 violation(s): 1 fixable by eviction, 2 waiting for holds to lift' (the verdicts)."""
    fixable = s.violations - s.unfixable - s.waiting - s.partly_fixable
    counts = (
        (fixable, "fixable by eviction"),
        (s.waiting, "waiting for holds to lift"),
        (s.partly_fixable, "partly fixable by eviction"),
        (s.unfixable, "not fixable by eviction"),
    )
    return f"{s.violations} violation(s): " + ", ".join(f"{n} {w}" for n, w in counts if n)


VERDICT_TEXT = {
    GroupVerdict.FIXABLE: "fixable",
    GroupVerdict.WAITING: "WAITING",
    GroupVerdict.PARTLY_FIXABLE: "PARTLY FIXABLE",
    GroupVerdict.NOT_FIXABLE: "NOT FIXABLE",
}


def _violation_text(v: Violation) -> list[str]:
    state = VERDICT_TEXT[v.verdict]
    if v.incomplete:
        state += ", counts incomplete"
    relation = ">" if v.skew > v.max_skew else "<="
    misplaced = f"{v.violating_pods} of {v.pods} pods misplaced"
    if v.pods_on_nodes_without_key:
        misplaced += f", {v.pods_on_nodes_without_key} on nodes without the key"
    if v.pods_pinned_by_volume:
        misplaced += f", {v.pods_pinned_by_volume} pinned by volume"
    if v.pods_outside_domains:
        misplaced += (
            f", {v.pods_outside_domains} on nodes its inclusion policies leave out of the counts"
        )
    out = [
        f"{v.workload.namespace}/{v.workload.name} ({v.workload.kind}"
        f"{', ' + match_text(v.match_labels) if v.match_labels else ''})  "
        f"{v.topology_key}  skew {v.skew} {relation} maxSkew {v.max_skew}  "
        f"[{misplaced}, {state}]"
    ]
    out.extend(_table([["DOMAIN", "PODS", ""], *_domain_rows(v)]))
    if v.domains_truncated:
        out.append(f"  ... {v.domain_count} domains in all")
    if v.min_domains > 1:
        out.append(f"  minDomains {v.min_domains}, {v.domain_count} eligible domain(s)")
    out.append(f"  cause: {v.cause.value} ({v.cause_message})")
    out.append(f"  {v.message}")
    out.append(f"  remedies: {remedies_text(v)}")
    return out


def _domain_rows(v: Violation) -> list[list[str]]:
    gmin = v.global_minimum
    rows = []
    for name, pods in sorted(v.domains, key=lambda kv: (-kv[1], kv[0])):
        if pods - gmin > v.max_skew:
            mark = f"+{pods - gmin} over min"
        else:
            mark = "min" if pods == gmin else ""
        rows.append([name or '""', str(pods), mark])
    return rows


def _plan_text(report: Report) -> list[str]:
    out = []
    if report.evictions:
        # The text is `respread plan`'s, which never evicts, whatever the policy's mode.
        enforce = report.policy.mode is Mode.ENFORCE
        note = " (mode Enforce: the operator evicts them; respread plan evicts nothing)"
        out.append(
            f"Would evict {len(report.evictions)} pod(s), in this order{note if enforce else ''}:"
        )
        out.extend(
            _table(
                [["#", "POD", "NODE", "FROM", "TO", "PREDICTED NODE"]]
                + [_eviction_row(i, e) for i, e in enumerate(report.evictions, 1)]
            )
        )
    else:
        out.append("No eviction planned for this run.")
    if report.planner.message:
        out.append(f"Planned by {report.planner.message}.")
    if report.deferred:
        reasons = Counter(d.deferred_by for d in report.deferred)
        detail = "; ".join(f"{n} by {r}" for r, n in reasons.most_common(3))
        out.append(f"{len(report.deferred)} more eviction(s) left for later runs ({detail}).")
    if report.skipped:
        out.append("")
        out.append(f"Not evicted ({len(report.skipped)} pod(s)):")
        out.extend(_table([["WORKLOAD", "PODS", "REASON"], *_skipped_rows(report.skipped)]))
    p = report.predicted
    out.append("")
    out.append(
        f"Predicted after this run: {p.violations} violation(s), "
        f"{p.violating_pods} misplaced pod(s); after the deferred evictions: "
        f"{p.violations_after_deferred} violation(s)."
    )
    return out


def _eviction_row(i: int, e: Move) -> list[str]:
    return [
        str(i),
        f"{e.pod.namespace}/{e.pod.name}",
        e.from_node,
        where(e.from_domain),
        where(e.to_domain),
        e.to_node,
    ]


def _skipped_rows(skipped: Iterable[Skip]) -> list[list[str]]:
    by_reason: dict[tuple[str, str], list[str]] = {}
    for sk in skipped:
        key = (f"{sk.pod.namespace}/{sk.workload.name}", sk.reason)
        by_reason.setdefault(key, []).append(sk.pod.name)
    rows = []
    for (workload, reason), pods in by_reason.items():
        shown = ", ".join(pods[:3]) + (f" and {len(pods) - 3} more" if len(pods) > 3 else "")
        rows.append([workload, shown, reason])
    return rows


def _surge_text(section: SurgeSection, mode: Mode) -> list[str]:
    if not (section.enabled or section.operations):
        return []
    note = " (mode Enforce: the operator makes it)" if mode is Mode.ENFORCE else ""
    out = [""]
    if not section.plans:
        out.append("No surge move planned.")
    for p in section.plans:
        w, n = p.plan.workload, p.plan.original
        out.append(
            f"Would surge {w.namespace}/{w.name} (Deployment) "
            f"{n} -> {p.plan.target} -> {n} replicas{note}:"
        )
        out.extend(f"  {i}. {step}" for i, step in enumerate(p.steps, 1))
    for sk in section.skipped:
        out.append(f"Not surged: {sk.workload.namespace}/{sk.workload.name}: {sk.reason}")
    for f in section.operations:
        w, op = f.workload, f.operation
        out.append(
            f"Surge in flight: {w.namespace}/{w.name} {op.phase.value} "
            f"({op.original} -> {op.target}, {f.ready_replicas} Ready); "
            f"next: {f.action.kind.value} ({f.action.reason})"
        )
    return out


def _remedy_state(r: RemedyVerdict, chosen: bool, verdict: GroupVerdict) -> str:
    if chosen:
        return "chosen"
    if r.remedy is Remedy.EVICT and verdict is GroupVerdict.WAITING:
        return "waiting" if r.enabled else "waiting, not enabled"
    if not r.enabled:
        return "applies, not enabled" if r.applies else "not enabled"
    return "applies" if r.applies else "does not apply"


def remedies_text(v: Violation) -> str:
    parts = [
        f"{r.remedy.value} ({_remedy_state(r, r.remedy is v.remedy, v.verdict)})"
        for r in v.remedies
    ]
    return ", ".join(parts) + ("" if v.remedy is not None else "; none chosen")


def _cost(value: int | None) -> str:
    return "-" if value is None else str(value)


def deletion_cost_text(section: DeletionCostSection) -> list[str]:
    if not section.enabled:
        return []
    out = ["", "Deletion-cost order (a scale-in removes the lowest cost first):"]
    if not section.orders:
        out.append("  No Deployment or ReplicaSet with hard spread constraints to order.")
    for o in section.orders:
        out.extend(_order_text(o))
    for x in section.excluded:
        w = x.workload
        out.append(f"Not ordered: {w.namespace}/{w.name} ({w.kind}, {x.pods} pod(s)): {x.reason}")
    out.append(
        f"Would write {len(section.patches)} pod-deletion-cost annotation(s) this scan; "
        f"{section.deferred_patches} left for later scans."
    )
    return out


def _order_text(o: CostOrder) -> list[str]:
    w = o.workload
    out = [
        f"{w.namespace}/{w.name} ({w.kind}), ReplicaSet {o.replica_set}: {o.state.value}, "
        f"{o.steps_within_max_skew} of {o.pods} removal(s) within maxSkew from the first",
        f"  {o.message}",
    ]
    if o.owner:
        return out  # another policy's order: not this policy's to show
    rows = [["#", "POD", "NODE", "DOMAINS", "COST", "WITHIN MAXSKEW"]]
    rows.extend(_cost_row(i, e) for i, e in enumerate(o.order[:ORDER_ROWS_SHOWN], 1))
    out.extend(_table(rows))
    if len(o.order) > ORDER_ROWS_SHOWN:
        out.append(f"  ... {len(o.order)} pods in all")
    return out


def _cost_row(i: int, e: CostEntry) -> list[str]:
    cost = f"{_cost(e.current_cost)} -> {e.desired_cost}" if e.changed else _cost(e.current_cost)
    if e.conflict_managers:
        cost += f" (owned by {few_named(e.conflict_managers)})"
    within = "yes" if e.within_max_skew else "no"
    if e.tier is not Tier.READY:
        within += f" ({TIER_NAMES[e.tier]}: goes first whatever its cost)"
    return [str(i), e.pod, e.node or "-", where(e.domains), cost, within]


VERDICTS = {
    Verdict.NOW: "Yes: this run would evict it",
    Verdict.LATER: "Later: a later run would evict it",
    Verdict.NO: "No",
}


def move_text(answer: MoveAnswer) -> str:
    """`respread explain`'s answer to "would respread move it?", with every reason."""
    head = VERDICTS[answer.verdict]
    if answer.step is not None:
        head += f" (step {answer.step} of the plan)"
    if answer.predicted_node is not None:
        head += f"; its replacement is predicted on {answer.predicted_node}"
    out = ["", f"Would respread move it? {head}."]
    for r in answer.reasons:
        when = f" (until {format_rfc3339(r.until)})" if r.until is not None else ""
        out.append(f"  - {r.kind.value}: {r.text}{when}")
    return "\n".join(out) + "\n"

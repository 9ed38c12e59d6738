"""The policy's eviction limits and RemovePodsViolatingTopologySpreadConstraint's arguments
(defaulted as the plugin defaults them: constraints [DoNotSchedule], topologyBalanceNodeFit
true; include and exclude refused together, as its validation refuses them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from respread.core.limits import shown
from respread.inputs.descheduler.fields import (
    CONSTRAINT_KINDS,
    EVICTION,
    ConversionError,
    Draft,
    at,
    count,
    flag,
    label_selector_of,
    mapping,
    strings,
    unknown_fields,
)


def top_level(doc: Mapping[str, Any], draft: Draft) -> None:
    """The policy-wide eviction limits."""
    limits = (
        ("maxNoOfPodsToEvictTotal", "maxPerRun", "per scan (the descheduler: per cycle)"),
        ("maxNoOfPodsToEvictPerNode", "maxPerNode", "per node per scan"),
        ("maxNoOfPodsToEvictPerNamespace", "maxPerNamespace", "per namespace per scan"),
    )
    for source, target, meaning in limits:
        cap = count(doc.get(source), source)
        draft.eviction[target] = cap
        if cap is None and target == "maxPerRun":
            draft.note(
                (*EVICTION, target),
                "null: no cap, as the descheduler without maxNoOfPodsToEvictTotal; respread's"
                " default is 10 evictions per scan",
            )
        elif cap is not None:
            draft.note((*EVICTION, target), f"from {source}: at most {cap} {meaning}")
    grace = doc.get("gracePeriodSeconds")
    if grace is not None:
        if isinstance(grace, bool) or not isinstance(grace, int) or grace < 0:
            raise ConversionError("gracePeriodSeconds", f"expected seconds, got {shown(grace)}")
        draft.eviction["gracePeriodSeconds"] = grace
    if doc.get("nodeSelector"):
        draft.note(
            (),
            f"nodeSelector {shown(doc['nodeSelector'])}: no equivalent; respread considers every"
            " node, as kube-scheduler does when it places the replacement",
        )
    ignored = ("metricsCollector", "metricsProviders", "prometheus", "tracing")
    for key in (k for k in ignored if doc.get(k)):
        draft.note((), f"{key}: not used by the topology spread plugin; not converted")


def spread_args(args: Mapping[str, Any], where: str, draft: Draft) -> None:
    """RemovePodsViolatingTopologySpreadConstraint's arguments (defaulted as the plugin does)."""
    constraints = strings(args.get("constraints"), at(where, "constraints")) or [
        CONSTRAINT_KINDS[0]
    ]
    for i, kind in enumerate(constraints):
        if kind not in CONSTRAINT_KINDS:
            raise ConversionError(
                at(at(where, "constraints"), i), f"{shown(kind)} is not one of {CONSTRAINT_KINDS}"
            )
    draft.constraints["whenUnsatisfiable"] = list(dict.fromkeys(constraints))
    namespaces = mapping(args.get("namespaces"), at(where, "namespaces"))
    include = strings(namespaces.get("include"), at(where, "namespaces.include"))
    exclude = strings(namespaces.get("exclude"), at(where, "namespaces.exclude"))
    if include and exclude:
        raise ConversionError(
            at(where, "namespaces"),
            "only one of include and exclude can be set (the descheduler refuses both)",
        )
    draft.selector["namespaces"] = {"include": include, "exclude": exclude}
    selector = label_selector_of(args.get("labelSelector"), at(where, "labelSelector"))
    if selector is not None:
        draft.pod_selectors.append(selector)
    fit = flag(args.get("topologyBalanceNodeFit"), at(where, "topologyBalanceNodeFit"), True)
    draft.require_fit.append(fit)
    known = ("constraints", "namespaces", "labelSelector", "topologyBalanceNodeFit")
    draft.notes.extend(unknown_fields(args, known, where))

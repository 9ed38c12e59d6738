"""The DefaultEvictor's arguments: protections (podProtections, or the deprecated booleans),
its label and namespace selectors, nodeFit, minPodAge; the rest as notes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from respread.core.limits import shown
from respread.inputs.descheduler.fields import (
    EVICTION,
    PROTECTIONS,
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
from respread.inputs.policy import PolicyError, parse_duration

DEFAULT_PROTECTIONS = {
    "PodsWithLocalStorage": "localStorage",
    "SystemCriticalPods": "systemCritical",
    "DaemonSetPods": None,
    "FailedBarePods": None,
}
EXTRA_PROTECTIONS = {
    "PodsWithPVC": "persistentVolumeClaims",
    "PodsWithoutPDB": None,
    "PodsWithResourceClaims": None,
}
UNCONVERTED_PROTECTION = {
    "DaemonSetPods": "evicting DaemonSet pods: respread never evicts them (a DaemonSet places"
    " one pod per node; spread does not apply)",
    "FailedBarePods": "evicting failed bare pods: respread never evicts bare pods, and counts no"
    " finished pod",
    "PodsWithoutPDB": "protecting pods without a PodDisruptionBudget: no equivalent; respread"
    " evicts them too, within its caps",
    "PodsWithResourceClaims": "protecting pods with ResourceClaims: no equivalent",
}
# Deprecated DefaultEvictor booleans: (field, protection, true means the protection is ...).
DEPRECATED = (
    ("evictLocalStoragePods", "PodsWithLocalStorage", False),
    ("evictSystemCriticalPods", "SystemCriticalPods", False),
    ("evictDaemonSetPods", "DaemonSetPods", False),
    ("evictFailedBarePods", "FailedBarePods", False),
    ("ignorePvcPods", "PodsWithPVC", True),
    ("ignorePodsWithoutPDB", "PodsWithoutPDB", True),
)


def _protection_list(
    args: Mapping[str, Any], key: str, allowed: Mapping[str, Any], where: str
) -> list[str]:
    spot = at(at(where, "podProtections"), key)
    names = strings(mapping(args.get("podProtections"), spot).get(key), spot)
    for i, name in enumerate(names):
        if name not in allowed:
            raise ConversionError(at(spot, i), f"{shown(name)} is not one of {', '.join(allowed)}")
    if len(set(names)) != len(names):
        raise ConversionError(spot, "lists a protection twice")
    return names


def _protections(args: Mapping[str, Any], where: str, draft: Draft) -> None:
    """podProtections (or the deprecated booleans: the descheduler refuses both at once)."""
    disabled = _protection_list(args, "defaultDisabled", DEFAULT_PROTECTIONS, where)
    enabled = _protection_list(args, "extraEnabled", EXTRA_PROTECTIONS, where)
    deprecated = [(f, p, on) for f, p, on in DEPRECATED if flag(args.get(f), at(where, f), False)]
    if deprecated and (disabled or enabled):
        raise ConversionError(
            where,
            "cannot use the deprecated evict*/ignore* fields alongside podProtections"
            " (the descheduler refuses both)",
        )
    changes = [(p, False) for p in disabled] + [(p, True) for p in enabled]
    changes += [(p, on) for _, p, on in deprecated]
    for name, on in changes:
        target = DEFAULT_PROTECTIONS.get(name) or EXTRA_PROTECTIONS.get(name)
        if target is None:
            draft.note(
                PROTECTIONS,
                f"{name} ({'on' if on else 'off'}) asks for " + UNCONVERTED_PROTECTION[name],
            )
            continue
        draft.protections[target] = on
        draft.note((*PROTECTIONS, target), f"from the DefaultEvictor's {name}")
    classes = mapping(mapping(args.get("podProtections"), where).get("config"), where)
    pvc = mapping(classes.get("PodsWithPVC"), where).get("protectedStorageClasses")
    if pvc:
        draft.note(
            (*PROTECTIONS, "persistentVolumeClaims"),
            f"protectedStorageClasses {_names(pvc)}: respread protects every pod with a"
            " PersistentVolumeClaim, whatever its storage class",
        )


def _names(classes: object) -> str:
    entries = classes if isinstance(classes, list) else []
    return ", ".join(shown(e.get("name")) for e in entries if isinstance(e, Mapping)) or shown(
        classes
    )


def _priority(args: Mapping[str, Any], where: str, draft: Draft) -> None:
    threshold = mapping(args.get("priorityThreshold"), at(where, "priorityThreshold"))
    spot = at(where, "priorityThreshold")
    value, name = threshold.get("value"), threshold.get("name")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConversionError(at(spot, "value"), f"expected an integer, got {shown(value)}")
    if name is not None and not isinstance(name, str):
        raise ConversionError(at(spot, "name"), f"expected a string, got {shown(name)}")
    if name and value is not None:
        raise ConversionError(spot, "only one of name and value can be set")
    if threshold.get("name") == "system-cluster-critical" or not threshold:
        return
    draft.note(
        (*PROTECTIONS, "systemCritical"),
        f"priorityThreshold {f'name {shown(name)}' if name else f'value {value}'}: no"
        " equivalent; respread protects the"
        " priority classes system-cluster-critical and system-node-critical only",
    )


def evictor_args(args: Mapping[str, Any], where: str, draft: Draft) -> None:
    """The DefaultEvictor's arguments: protections, selectors, nodeFit, minPodAge; the rest
    noted."""
    _protections(args, where, draft)
    _priority(args, where, draft)
    selector = label_selector_of(args.get("labelSelector"), at(where, "labelSelector"))
    if selector is not None:
        draft.pod_selectors.append(selector)
    namespaces = label_selector_of(
        args.get("namespaceLabelSelector"), at(where, "namespaceLabelSelector")
    )
    if namespaces is not None:
        draft.selector["namespaceSelector"] = namespaces
        draft.note(
            ("spec", "selector", "namespaceSelector"),
            "from the DefaultEvictor's namespaceLabelSelector: respread scans only these"
            " namespaces (the descheduler evicts only from them)",
        )
    if flag(args.get("nodeFit"), at(where, "nodeFit"), False):
        draft.require_fit.append(True)
    _min_pod_age(args.get("minPodAge"), at(where, "minPodAge"), draft)
    _evictor_notes(args, where, draft)


def _min_pod_age(value: object, where: str, draft: Draft) -> None:
    if value is None:
        draft.eviction["minPodAge"] = "0s"
        draft.note(
            (*EVICTION, "minPodAge"),
            "0s: the DefaultEvictor's default; respread's default leaves pods younger than 5m",
        )
        return
    try:
        parse_duration(value, where)
    except PolicyError:
        raise ConversionError(
            where, f"expected a duration in h, m, s or ms such as 5m, got {shown(value)}"
        ) from None
    draft.eviction["minPodAge"] = value


def _evictor_notes(args: Mapping[str, Any], where: str, draft: Draft) -> None:
    policy = args.get("noEvictionPolicy")
    if policy not in (None, "", "Preferred", "Mandatory"):
        raise ConversionError(
            at(where, "noEvictionPolicy"), f"{shown(policy)} is not Preferred or Mandatory"
        )
    if policy == "Mandatory":
        draft.note(
            PROTECTIONS,
            "noEvictionPolicy Mandatory: respread does not read descheduler.alpha.kubernetes.io/"
            'prefer-no-eviction; annotate those pods respread.io/evict: "false" instead',
        )
    replicas = count(args.get("minReplicas"), at(where, "minReplicas"))
    if replicas is not None and replicas > 1:
        draft.note(
            EVICTION,
            f"minReplicas {replicas}: no equivalent; a PodDisruptionBudget keeps small workloads"
            " whole (respread never evicts beyond one)",
        )
    if args.get("nodeSelector"):
        draft.note(
            (),
            f"the DefaultEvictor's nodeSelector {shown(args['nodeSelector'])}: no"
            " equivalent; respread may evict from every node",
        )
    known = {
        "nodeSelector",
        "labelSelector",
        "namespaceLabelSelector",
        "priorityThreshold",
        "nodeFit",
        "minReplicas",
        "minPodAge",
        "noEvictionPolicy",
        "podProtections",
        *(f for f, _, _ in DEPRECATED),
    }
    draft.notes.extend(unknown_fields(args, known, where))

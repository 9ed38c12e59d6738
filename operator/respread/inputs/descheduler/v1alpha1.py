"""descheduler/v1alpha1, read into v1alpha2's shape as the descheduler's own conversion did."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from respread.inputs.descheduler.fields import (
    CONSTRAINT_KINDS,
    EVICTOR,
    POLICY_KIND,
    SPREAD,
    V1ALPHA2,
    ConversionError,
    at,
    flag,
    label_selector_of,
    mapping,
    strings,
)

V1ALPHA1_EVICTOR = (
    "evictLocalStoragePods",
    "evictSystemCriticalPods",
    "evictDaemonSetPods",
    "ignorePvcPods",
    "evictFailedBarePods",
)


def v1alpha1_as_v1alpha2(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A v1alpha1 policy in v1alpha2's shape, as the descheduler converted it: the strategy's
    params become the plugin's args, the policy's evict*/ignore* flags and the strategy's
    nodeFit and priority threshold the DefaultEvictor's."""
    strategies = mapping(doc.get("strategies"), "strategies")
    where = at("strategies", SPREAD)
    strategy = mapping(strategies.get(SPREAD), where)
    if not flag(strategy.get("enabled"), at(where, "enabled"), False):
        raise ConversionError(where, "not enabled: nothing to convert")
    params = _v1alpha1_params(mapping(strategy.get("params"), at(where, "params")), where)
    soft = params.get("includeSoftConstraints", False)
    args: dict[str, Any] = {"constraints": list(CONSTRAINT_KINDS[: 2 if soft else 1])}
    args.update({k: params[k] for k in ("namespaces", "labelSelector") if params.get(k)})
    evictor: dict[str, Any] = {k: flag(doc.get(k), k, False) for k in V1ALPHA1_EVICTOR}
    evictor["nodeFit"] = params.get("nodeFit", False)
    threshold = {
        "value": params.get("thresholdPriority"),
        "name": params.get("thresholdPriorityClassName"),
    }
    if any(v is not None for v in threshold.values()):
        evictor["priorityThreshold"] = {k: v for k, v in threshold.items() if v is not None}
    others = [
        str(s)
        for s, v in strategies.items()
        if s != SPREAD and isinstance(v, Mapping) and v.get("enabled")
    ]
    top = (
        "nodeSelector",
        "maxNoOfPodsToEvictPerNode",
        "maxNoOfPodsToEvictPerNamespace",
        "maxNoOfPodsToEvictTotal",
    )
    return {
        "apiVersion": V1ALPHA2,
        "kind": POLICY_KIND,
        **{k: doc[k] for k in top if k in doc},
        "profiles": [
            {
                "name": "descheduler",
                "pluginConfig": [
                    {"name": EVICTOR, "args": evictor},
                    {"name": SPREAD, "args": args},
                ],
                "plugins": {"balance": {"enabled": [SPREAD]}, "deschedule": {"enabled": others}},
            }
        ],
    }


def _v1alpha1_params(params: Mapping[str, Any], where: str) -> Mapping[str, Any]:
    """The strategy's params checked where v1alpha1 has them (errors name v1alpha1's fields)."""
    spot = at(where, "params")
    for key in ("includeSoftConstraints", "nodeFit"):
        flag(params.get(key), at(spot, key), False)
    namespaces = mapping(params.get("namespaces"), at(spot, "namespaces"))
    for key in ("include", "exclude"):
        strings(namespaces.get(key), at(spot, f"namespaces.{key}"))
    label_selector_of(params.get("labelSelector"), at(spot, "labelSelector"))
    name = params.get("thresholdPriorityClassName")
    if name is not None and not isinstance(name, str):
        raise ConversionError(at(spot, "thresholdPriorityClassName"), "expected a string")
    return params

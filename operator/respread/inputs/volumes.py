"""Pods pinned by their volumes: PersistentVolumeClaim -> PersistentVolume -> node affinity.

A pod whose claim is bound to a volume with ``spec.nodeAffinity.required`` (a zonal disk, a
local volume) can only run on the nodes that selector admits: kube-scheduler's VolumeBinding
filter refuses the others, for the pod and for its replacement, which mounts the same claim
(a StatefulSet's replacement keeps its pod's name and so its claims). ``pin_pods`` joins the
claims and volumes of a ClusterState onto its pods, once, after loading; everything later reads
``Pod.volume_pins``.
"""

from __future__ import annotations

from dataclasses import replace

from respread.core.model import ClusterState, Node, NodeSelectorTerm, Pod, VolumePin
from respread.core.selectors import term_matches


def pin_pods(state: ClusterState) -> ClusterState:
    """``state`` with each pod's volume pins set (the same state when no pod has one)."""
    if not state.claims or not state.volumes:
        return state
    bound = {(c.namespace, c.name): c.volume for c in state.claims if c.volume}
    terms = {v.name: v.terms for v in state.volumes if v.terms is not None}
    cache: dict[tuple[str, tuple[str, ...]], tuple[VolumePin, ...]] = {}
    changed = False
    pods = list(state.pods)
    for position, pod in enumerate(pods):
        if not pod.claims:
            continue
        key = (pod.namespace, pod.claims)
        pins = cache.get(key)
        if pins is None:
            pins = cache[key] = _pins(pod, bound, terms)
        if pins != pod.volume_pins:
            pods[position] = replace(pod, volume_pins=pins)
            changed = True
    return replace(state, pods=tuple(pods)) if changed else state


def _pins(
    pod: Pod,
    bound: dict[tuple[str, str], str],
    terms: dict[str, tuple[NodeSelectorTerm, ...]],
) -> tuple[VolumePin, ...]:
    out = []
    for claim in pod.claims:
        volume = bound.get((pod.namespace, claim))
        if volume is None:
            continue
        required = terms.get(volume)
        if required is not None:
            out.append(VolumePin(claim, volume, required))
    return tuple(out)


def refusing_volume(pod: Pod, node: Node) -> VolumePin | None:
    """The first of the pod's volumes that refuses ``node`` (None: all admit it)."""
    for pin in pod.volume_pins:
        if not any(term_matches(t, node) for t in pin.terms):
            return pin
    return None

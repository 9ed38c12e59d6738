"""Why a surge must not touch a Deployment now: opted out, managed by GitOps or an autoscaler,
paused, or not settled (a rollout in progress, replicas not Ready). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from respread.analysis.groups import Analysis, WorkloadRef
from respread.core.annotations import SURGE_OPT
from respread.core.model import Autoscaler, Workload
from respread.inputs.policy import RebalancePolicy

# GitOps markers: a controller that would put spec.replicas back (docs/surge.md).
GITOPS_MARKERS: Final[Mapping[str, str]] = {
    "argocd.argoproj.io/tracking-id": "Argo CD (annotation tracking)",
    "argocd.argoproj.io/instance": "Argo CD (label tracking)",
    "kustomize.toolkit.fluxcd.io/name": "Flux (Kustomization)",
    "kustomize.toolkit.fluxcd.io/namespace": "Flux (Kustomization)",
    "helm.toolkit.fluxcd.io/name": "Flux (HelmRelease)",
    "helm.toolkit.fluxcd.io/namespace": "Flux (HelmRelease)",
}


def deployments(analysis: Analysis) -> dict[WorkloadRef, Workload]:
    return {
        WorkloadRef(w.namespace, w.kind, w.name): w
        for w in analysis.index.state.workloads
        if w.kind == "Deployment"
    }


def gitops_marker(deployment: Workload) -> str | None:
    """The GitOps controller a marker names, unless respread's opt-in says surge anyway."""
    if deployment.markers.get(SURGE_OPT) == "true":
        return None
    for key, who in GITOPS_MARKERS.items():
        if key in deployment.markers:
            return f"managed by {who} ({key}): it would put spec.replicas back"
    return None


def autoscaled(deployment: Workload, autoscalers: Iterable[Autoscaler]) -> str | None:
    for a in autoscalers:
        if (
            a.namespace == deployment.namespace
            and a.target_kind == "Deployment"
            and a.target_name == deployment.name
        ):
            return a.name
    return None


def _active_replica_sets(analysis: Analysis, deployment: Workload) -> list[Workload]:
    return [
        w
        for w in analysis.index.state.workloads
        if w.kind == "ReplicaSet"
        and w.namespace == deployment.namespace
        and w.owner is not None
        and w.owner.kind == "Deployment"
        and w.owner.name == deployment.name
        and (w.replicas or 0) > 0
    ]


def guard(analysis: Analysis, deployment: Workload, policy: RebalancePolicy) -> str | None:
    """Why a surge must not touch this Deployment now (None: it may)."""
    settings = policy.remediation.surge
    if deployment.markers.get(SURGE_OPT) == "false":
        return f'opted out ({SURGE_OPT}: "false")'
    marker = gitops_marker(deployment)
    if marker is not None:
        return marker
    hpa = autoscaled(deployment, analysis.index.state.autoscalers)
    if hpa is not None and not settings.allow_autoscaled:
        return (
            f"HorizontalPodAutoscaler {hpa} scales it"
            " (spec.remediation.surge.allowAutoscaled is false)"
        )
    if deployment.paused:
        return "the Deployment is paused"
    if deployment.replicas is None:
        return "the Deployment has no spec.replicas"
    status = deployment.rollout
    if (
        deployment.observed_generation < deployment.generation
        or status is None
        or status.updated != deployment.replicas
        or status.replicas != deployment.replicas
        or len(_active_replica_sets(analysis, deployment)) > 1
    ):
        return "a rollout is in progress"
    if status.ready < deployment.replicas:
        return f"{status.ready} of {deployment.replicas} replicas Ready: not settled"
    return None

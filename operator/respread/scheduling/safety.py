"""Which pods respread never evicts, and why."""

from __future__ import annotations

from respread.core.model import Pod
from respread.core.selectors import selector_matches
from respread.inputs.policy import RebalancePolicy

# Controllers that create a replacement for an evicted pod.
REPLACING_OWNERS = frozenset({"ReplicaSet", "StatefulSet", "ReplicationController", "Job"})
SYSTEM_PRIORITY = 2_000_000_000
SYSTEM_CLASSES = frozenset({"system-cluster-critical", "system-node-critical"})

OPT_OUTS = (
    ("respread.io/evict", "false"),
    ("karpenter.sh/do-not-disrupt", "true"),
    ("cluster-autoscaler.kubernetes.io/safe-to-evict", "false"),
)


def protection(pod: Pod, policy: RebalancePolicy, now: float | None) -> str | None:
    """Why the pod may not be evicted, or None when it may: first what the pod is (opted out,
    not replaced, not running), then what the policy protects."""
    return _never_evicted(pod) or _protected_by(pod, policy, now)


def _never_evicted(pod: Pod) -> str | None:
    """Why no policy may evict the pod: it opted out, nothing would replace it, or it is not
    running."""
    for key, value in OPT_OUTS:
        if pod.annotations.get(key) == value:
            return f'opted out ({key}: "{value}")'
    if "kubernetes.io/config.mirror" in pod.annotations:
        return "static (mirror) pod"
    if pod.owner is None:
        return "no controller would replace it (bare pod)"
    if pod.owner.kind == "DaemonSet":
        return "DaemonSet pod (it can only run where it is)"
    if pod.owner.kind not in REPLACING_OWNERS:
        return f"owner kind {pod.owner.kind} is not known to replace evicted pods"
    if pod.terminating or pod.finished or pod.node_name is None:
        return "not running"
    return None


def _protected_by(pod: Pod, policy: RebalancePolicy, now: float | None) -> str | None:
    """Why the policy's protections, pod selector or minimum age keep the pod."""
    prot = policy.eviction.protections
    if prot.system_critical and (
        pod.priority >= SYSTEM_PRIORITY or pod.spec.priority_class in SYSTEM_CLASSES
    ):
        return "system-critical pod"
    if (
        prot.local_storage
        and pod.spec.local_storage
        and pod.annotations.get("respread.io/evict") != "true"
    ):
        return (
            'uses local storage (emptyDir or hostPath); annotate respread.io/evict: "true" to allow'
        )
    if prot.persistent_volume_claims and pod.spec.persistent_volume_claims:
        return "uses a PersistentVolumeClaim"
    selector = policy.selection.pod_selector
    if selector is not None and not selector_matches(selector, pod.labels):
        return "outside the policy's podSelector"
    min_age = policy.eviction.min_pod_age
    if now is not None and pod.created is not None and min_age > 0 and now - pod.created < min_age:
        return f"younger than minPodAge ({int(now - pod.created)}s < {int(min_age)}s)"
    return None


def pinned(pod: Pod) -> bool:
    """Whether nodeSelector or required node affinity restricts where the pod may run."""
    return not pod.spec.affinity.is_empty

"""The Kubernetes object a record is read from: ``manifest(record)`` is what the snapshot parser
(respread.inputs.objects) reads back as that very record (tests/unit/inputs/test_manifests.py
holds them to it), and what the cluster tests send to the API server.

Pods and pod templates get one container, ``app``, with a fake image (kwok never pulls it), the
pod's requests, no service-account token and no termination grace, so that the cluster tests'
pods start and go at once. What a record does not keep but an object needs (a budget's
``maxUnavailable``) is given as ``spec``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from respread.core import model
from respread.inputs.objects import Record
from tests.support.constants import DELETION_COST

Json = dict[str, Any]

IMAGE = "registry.invalid/respread/fake:1"  # never pulled: kwok fakes the containers
DELETED_AT = "2026-01-01T00:00:00Z"  # deletionTimestamp of a terminating pod
API_VERSIONS = {
    "Deployment": "apps/v1",
    "ReplicaSet": "apps/v1",
    "StatefulSet": "apps/v1",
    "DaemonSet": "apps/v1",
    "ReplicationController": "v1",
    "Job": "batch/v1",
}
MI = 2**20


def manifest(record: Record, *, spec: Mapping[str, Any] | None = None) -> Json:
    """The object for ``record``; ``spec``: fields added to its spec. What reads back as its
    default is left out (namespace ``default``, generation and status counts 0), so that a
    record of namespace ``default`` may be created in any namespace the request names."""
    if isinstance(record, model.Node):
        doc = _node(record)
    elif isinstance(record, model.Pod):
        doc = _pod(record)
    elif isinstance(record, model.Workload):
        doc = _workload(record)
    elif isinstance(record, model.DisruptionBudget):
        doc = _budget(record)
    elif isinstance(record, model.Service):
        doc = _object("v1", "Service", record.name, record.namespace)
        doc["spec"] = {"selector": dict(record.selector)} if record.selector is not None else {}
    elif isinstance(record, model.Namespace):
        doc = _object("v1", "Namespace", record.name, None, labels=record.labels)
    else:
        doc = _autoscaler(record)
    if spec:
        doc["spec"] = {**doc.get("spec", {}), **spec}
    return doc


def manifests(*records: Record) -> list[Json]:
    return [manifest(r) for r in records]


def rfc3339(t: float) -> str:
    moment = datetime.fromtimestamp(t, UTC)
    if t == int(t):
        return moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _object(
    api_version: str,
    kind: str,
    name: str,
    namespace: str | None,
    *,
    labels: Mapping[str, str] | None = None,
    created: float | None = None,
    owner: model.OwnerRef | None = None,
) -> Json:
    meta: Json = {"name": name}
    if namespace not in (None, "default"):  # "default": the reader's, or the request's
        meta["namespace"] = namespace
    if labels:
        meta["labels"] = dict(labels)
    if created is not None:
        meta["creationTimestamp"] = rfc3339(created)
    if owner is not None:
        meta["ownerReferences"] = [{"kind": owner.kind, "name": owner.name, "controller": True}]
    return {"apiVersion": api_version, "kind": kind, "metadata": meta}


def _ready(ready: bool) -> Json:
    return {"type": "Ready", "status": str(ready)}


# --------------------------------------------------------------------------------------------
# Selectors and pod specs


def selector(value: model.LabelSelector) -> Json:
    """matchLabels for the leading single-value In requirements in key order (as the parser
    puts them first), matchExpressions for the rest."""
    reqs = value.requirements
    labels: dict[str, str] = {}
    for r in reqs:
        if r.op is not model.Op.IN or len(r.values) != 1 or (labels and r.key <= max(labels)):
            break
        labels[r.key] = r.values[0]
    out: Json = {"matchLabels": labels} if labels else {}
    if rest := reqs[len(labels) :]:
        out["matchExpressions"] = [_requirement(r) for r in rest]
    return out


def _requirement(r: model.Requirement) -> Json:
    out: Json = {"key": r.key, "operator": r.op.value}
    if r.values:
        out["values"] = list(r.values)
    return out


def _constraint(c: model.SpreadConstraint) -> Json:
    out: Json = {"maxSkew": c.max_skew, "topologyKey": c.topology_key}
    out["whenUnsatisfiable"] = c.when.value
    if c.selector is not None:
        out["labelSelector"] = selector(c.selector)
    if c.min_domains is not None:
        out["minDomains"] = c.min_domains
    if c.node_affinity_policy is not None:
        out["nodeAffinityPolicy"] = c.node_affinity_policy.value
    if c.node_taints_policy is not None:
        out["nodeTaintsPolicy"] = c.node_taints_policy.value
    if c.match_label_keys:
        out["matchLabelKeys"] = list(c.match_label_keys)
    return out


def _affinity(affinity: model.NodeAffinity) -> Json:
    out: Json = {}
    if affinity.node_selector:
        out["nodeSelector"] = dict(affinity.node_selector)
    if affinity.required_terms is not None:
        terms = [
            {
                "matchExpressions": [_requirement(r) for r in t.match_expressions],
                "matchFields": [_requirement(r) for r in t.match_fields],
            }
            for t in affinity.required_terms
        ]
        required = {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        out["affinity"] = {"nodeAffinity": required}
    return out


def quantities(r: model.Resources) -> dict[str, str]:
    """Requests (or allocatable) as quantities: CPU in millicores, memory in Mi when whole."""
    memory = f"{r.memory // MI}Mi" if r.memory % MI == 0 else str(r.memory)
    named = {"cpu": f"{r.cpu}m", "memory": memory, "ephemeral-storage": str(r.ephemeral)}
    amounts = {"cpu": r.cpu, "memory": r.memory, "ephemeral-storage": r.ephemeral}
    out = {k: v for k, v in named.items() if amounts[k]}
    out.update((name, str(amount)) for name, amount in r.extended)
    return out


def _pod_spec(spec: model.PodSpec) -> Json:
    container: Json = {"name": "app", "image": IMAGE}
    if requests := quantities(spec.requests):
        container["resources"] = {"requests": requests}
    out: Json = {
        **_affinity(spec.affinity),
        "automountServiceAccountToken": False,
        "terminationGracePeriodSeconds": 0,
        "containers": [container],
    }
    if spec.constraints:
        out["topologySpreadConstraints"] = [_constraint(c) for c in spec.constraints]
    if spec.tolerations:
        out["tolerations"] = [
            {k: v for k, v in (("key", t.key), ("operator", t.operator), ("value", t.value)) if v}
            | ({"effect": t.effect.value} if t.effect else {})
            for t in spec.tolerations
        ]
    if spec.priority_class:
        out["priorityClassName"] = spec.priority_class
    volumes = [{"name": "scratch", "emptyDir": {}}] if spec.local_storage else []
    if spec.persistent_volume_claims:
        volumes.append({"name": "data", "persistentVolumeClaim": {"claimName": "data"}})
    if volumes:
        out["volumes"] = volumes
    return out


# --------------------------------------------------------------------------------------------
# Kinds


def _node(n: model.Node) -> Json:
    doc = _object("v1", "Node", n.name, None, labels=n.labels, created=n.created)
    spec: Json = {}
    if n.taints:
        spec["taints"] = [
            {"key": t.key, "value": t.value, "effect": t.effect.value} for t in n.taints
        ]
    if n.unschedulable:
        spec["unschedulable"] = True
    doc["spec"] = spec
    status: Json = {"conditions": [_ready(n.ready)]}
    if n.allocatable is None and n.max_pods is not None:
        raise ValueError(f"node {n.name}: max_pods without allocatable is no object's status")
    if n.allocatable is not None:
        # cpu always: an empty allocatable would read as none reported
        allocatable = {"cpu": f"{n.allocatable.cpu}m", **quantities(n.allocatable)}
        if n.max_pods is not None:
            allocatable["pods"] = str(n.max_pods)
        status["allocatable"] = allocatable
    doc["status"] = status
    return doc


def _pod(p: model.Pod) -> Json:
    doc = _object(
        "v1", "Pod", p.name, p.namespace, labels=p.labels, created=p.created, owner=p.owner
    )
    meta = doc["metadata"]
    if p.annotations:
        meta["annotations"] = dict(p.annotations)
    if p.uid is not None:
        meta["uid"] = p.uid
    if p.terminating:
        meta["deletionTimestamp"] = DELETED_AT
    if p.deletion_cost_managers:
        cost_field = {"f:metadata": {"f:annotations": {f"f:{DELETION_COST}": {}}}}
        meta["managedFields"] = [
            {"manager": m, "operation": "Update", "fieldsV1": cost_field}
            for m in p.deletion_cost_managers
        ]
    spec = _pod_spec(p.spec)
    if p.node_name is not None:
        spec["nodeName"] = p.node_name
    if p.priority:
        spec["priority"] = p.priority
    doc["spec"] = spec
    status: Json = {"phase": p.phase.value, "conditions": [_ready(p.ready)]}
    if p.nominated_node is not None:
        status["nominatedNodeName"] = p.nominated_node
    doc["status"] = status
    return doc


def _workload(w: model.Workload) -> Json:
    doc = _object(
        API_VERSIONS[w.kind], w.kind, w.name, w.namespace, created=w.created, owner=w.owner
    )
    meta = doc["metadata"]
    if w.generation:
        meta["generation"] = w.generation
    annotations = dict(w.markers) if w.kind == "Deployment" else {}
    if w.revision is not None:
        annotations["deployment.kubernetes.io/revision"] = w.revision
    if annotations:
        meta["annotations"] = annotations
    doc["spec"] = spec = _workload_spec(w)
    status: Json = {"observedGeneration": w.observed_generation}
    if w.status_replicas is not None:
        status["replicas"] = w.status_replicas
    if w.kind == "Deployment":
        _deployment_fields(w, meta, spec, status)
    if status := {k: v for k, v in status.items() if v}:  # zeros read back as they are
        doc["status"] = status
    return doc


def _workload_spec(w: model.Workload) -> Json:
    spec: Json = {}
    if w.selector is not None:
        rendered = selector(w.selector)
        if w.kind == "ReplicationController":  # a plain map of labels
            rendered = rendered.get("matchLabels", {})
        spec["selector"] = rendered
    if w.replicas is not None:
        spec["parallelism" if w.kind == "Job" else "replicas"] = w.replicas
    if w.template is not None:
        spec["template"] = {
            "metadata": {"labels": dict(w.template.labels)},
            "spec": _pod_spec(w.template.spec),
        }
    return spec


def _deployment_fields(w: model.Workload, meta: Json, spec: Json, status: Json) -> None:
    """What only a Deployment's manifest carries: its identity, pause, and rollout status."""
    if w.uid is not None:
        meta["uid"] = w.uid
    if w.resource_version is not None:
        meta["resourceVersion"] = w.resource_version
    if w.paused:
        spec["paused"] = True
    if w.rollout is not None:
        r = w.rollout
        status |= {
            "replicas": r.replicas,
            "updatedReplicas": r.updated,
            "readyReplicas": r.ready,
            "availableReplicas": r.available,
        }


def _budget(b: model.DisruptionBudget) -> Json:
    doc = _object("policy/v1", "PodDisruptionBudget", b.name, b.namespace)
    doc["metadata"]["generation"] = b.generation
    doc["spec"] = {"selector": selector(b.selector)} if b.selector is not None else {}
    doc["status"] = {
        "observedGeneration": b.observed_generation,
        "disruptionsAllowed": b.disruptions_allowed,
        "currentHealthy": b.current_healthy,
        "desiredHealthy": b.desired_healthy,
        "expectedPods": b.expected_pods,
    }
    return doc


def _autoscaler(a: model.Autoscaler) -> Json:
    doc = _object("autoscaling/v2", "HorizontalPodAutoscaler", a.name, a.namespace)
    target = {"apiVersion": "apps/v1", "kind": a.target_kind, "name": a.target_name}
    doc["spec"] = {"scaleTargetRef": target, "maxReplicas": 10}
    return doc

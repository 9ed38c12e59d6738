"""Builders for the records the pipeline reads, so tests read like the situations they describe.

In the spirit of kube-scheduler's ``st.MakePod()``, with Python's keywords for its chained calls:

- ``node("n1", zone="z1")`` is a node labelled ``zone=z1`` (label keys that are not Python names
  go in ``labels={...}``); ``zone_node("a1", "a")`` one labelled as a cloud provider labels it
  (topology.kubernetes.io/zone and kubernetes.io/hostname).
- ``pod("web-1", "n1", APP_WEB, constraints=(hard(ZONE, WEB),))`` is a pod bound to ``n1``;
  ``pods_on("n1", 3)`` three alike.
- ``deployment("web", 9, constraints=...)``, ``replica_set(...)``, ``stateful_set(...)``: a
  controller of ``app=<name>`` pods with that template; ``workload(kind, name, selector)`` any
  controller as it is; ``budget("web", WEB, allowed=1)`` a PodDisruptionBudget and its status;
  ``rollout("web", "abc")`` a Deployment and its ReplicaSet ``web-abc`` as ownership reads them;
  ``namespace("team", tier="a")``; ``service(...)``; ``state(nodes, pods, ...)`` the cluster.
- ``eviction_policy(max_per_run=1)``: a RebalancePolicy over every namespace that evicts without
  caps or minimum age unless told otherwise.

Everything returns the immutable records of ``respread.core.model``. Where a test needs the
Kubernetes object instead (a snapshot file, the API server of the cluster tests), ``manifest``
(tests/support/manifests.py) writes the object that reads back as that very record.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from respread.core.model import (
    NO_RESOURCES,
    ClusterState,
    DisruptionBudget,
    Effect,
    Labels,
    LabelSelector,
    Namespace,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    Op,
    OwnerRef,
    Phase,
    Pod,
    PodSpec,
    PodTemplate,
    Policy,
    ReplicaStatus,
    Requirement,
    Resources,
    Service,
    SpreadConstraint,
    Taint,
    Toleration,
    When,
    Workload,
)
from respread.inputs.policy import EvictionSettings, RebalancePolicy, Selection
from tests.support.constants import DELETION_COST, HOST, ZONE

APP_WEB: Mapping[str, str] = {"app": "web"}


def sel(**match_labels: str) -> LabelSelector:
    """A selector with only matchLabels; ``sel()`` is ``{}`` (matches everything)."""
    return LabelSelector(
        tuple(Requirement(k, Op.IN, (v,)) for k, v in sorted(match_labels.items()))
    )


def sel_in(key: str, *values: str) -> LabelSelector:
    """``key In (values...)``: for keys that are not Python names, or several values."""
    return LabelSelector((Requirement(key, Op.IN, values),))


WEB = sel(app="web")
EVERYTHING = sel()


# --------------------------------------------------------------------------------------------
# Nodes


def node(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    taints: Iterable[Taint] = (),
    unschedulable: bool = False,
    allocatable: Resources | None = None,
    max_pods: int | None = None,
    ready: bool = True,
    created: float | None = None,
    **kw_labels: str,
) -> Node:
    return Node(
        name,
        Labels({**(labels or {}), **kw_labels}),
        tuple(taints),
        unschedulable,
        allocatable,
        max_pods,
        ready,
        created,
    )


def zone_node(name: str, zone: str, **kw: Any) -> Node:
    """A node in ``zone`` labelled with the well-known zone and hostname keys."""
    labels = {ZONE: zone, HOST: name, **kw.pop("labels", {})}
    return node(name, labels, **kw)


def taint(key: str, value: str = "", effect: Effect = Effect.NO_SCHEDULE) -> Taint:
    return Taint(key, value, effect)


# --------------------------------------------------------------------------------------------
# Spread constraints


def constraint(
    key: str,
    selector: LabelSelector | None,
    *,
    when: When,
    max_skew: int = 1,
    min_domains: int | None = None,
    affinity: Policy | None = None,
    taints: Policy | None = None,
    match_label_keys: tuple[str, ...] = (),
) -> SpreadConstraint:
    return SpreadConstraint(
        max_skew, key, when, selector, min_domains, affinity, taints, match_label_keys
    )


def hard(key: str, selector: LabelSelector | None, **kw: Any) -> SpreadConstraint:
    """A DoNotSchedule constraint."""
    return constraint(key, selector, when=When.DO_NOT_SCHEDULE, **kw)


def soft(key: str, selector: LabelSelector | None, **kw: Any) -> SpreadConstraint:
    """A ScheduleAnyway constraint."""
    return constraint(key, selector, when=When.SCHEDULE_ANYWAY, **kw)


# --------------------------------------------------------------------------------------------
# Pods


def pod_spec(
    constraints: Iterable[SpreadConstraint] = (),
    *,
    node_selector: Mapping[str, str] | None = None,
    required_terms: tuple[NodeSelectorTerm, ...] | None = None,
    tolerations: Iterable[Toleration] = (),
    requests: Resources = NO_RESOURCES,
    **fields: Any,
) -> PodSpec:
    """The scheduling part of a pod (or template); ``fields``: PodSpec's others by name."""
    affinity = NodeAffinity(Labels(node_selector or {}), required_terms)
    return PodSpec(tuple(constraints), affinity, tuple(tolerations), requests, **fields)


def pod(
    name: str,
    node_name: str | None,
    labels: Mapping[str, str] | None = None,
    *,
    spec: PodSpec | None = None,
    namespace: str = "default",
    phase: Phase | None = None,
    annotations: Mapping[str, str] | None = None,
    nominated: str | None = None,
    **kw: Any,
) -> Pod:
    """A pod; bound when ``node_name`` is set. Phase defaults to Running (bound) or Pending.

    ``spec`` is used as it is; otherwise ``pod_spec``'s keywords (constraints, node_selector,
    required_terms, tolerations, requests) build one. The other keywords are Pod's fields
    (terminating, ready, priority, owner, created, uid, deletion_cost_managers).
    """
    spec_keys = ("constraints", "node_selector", "required_terms", "tolerations", "requests")
    spec_kw = {k: kw.pop(k) for k in spec_keys if k in kw}
    if spec is None:
        spec = pod_spec(**spec_kw)
    elif spec_kw:
        raise TypeError(f"pod {name}: give spec or {', '.join(spec_kw)}, not both")
    if phase is None:
        phase = Phase.RUNNING if node_name else Phase.PENDING
    return Pod(
        namespace,
        name,
        Labels(labels or {}),
        spec,
        node_name,
        phase,
        annotations=Labels(annotations or {}),
        nominated_node=nominated,
        **kw,
    )


def pods_on(
    node_name: str | None, count: int, labels: Mapping[str, str] = APP_WEB, **kw: Any
) -> tuple[Pod, ...]:
    """``count`` identical pods on one node, named ``<node>-<namespace>-p<i>``."""
    prefix = node_name or "pending"
    namespace = kw.get("namespace", "default")
    return tuple(pod(f"{prefix}-{namespace}-p{i}", node_name, labels, **kw) for i in range(count))


def with_cost(p: Pod, cost: int | None, managers: tuple[str, ...] = ("respread",)) -> Pod:
    """The pod with its pod-deletion-cost annotation set to ``cost`` by ``managers`` (the
    field managers managedFields names for it); None: the pod as it is."""
    if cost is None:
        return p
    return replace(
        p, annotations=Labels({DELETION_COST: str(cost)}), deletion_cost_managers=managers
    )


# --------------------------------------------------------------------------------------------
# Workloads, budgets, services, namespaces


def workload(
    kind: str,
    name: str,
    selector: LabelSelector | None,
    namespace: str = "default",
    **fields: Any,
) -> Workload:
    """A controller as it is; ``fields``: Workload's others (replicas, template, owner, ...)."""
    return Workload(kind, namespace, name, selector, **fields)


def controller(
    kind: str,
    name: str,
    replicas: int | None,
    *,
    labels: Mapping[str, str] | None = None,
    namespace: str = "default",
    template: PodSpec | None = None,
    **kw: Any,
) -> Workload:
    """A ``kind`` controlling the pods labelled ``labels`` (default ``app=<name>``), selected
    by those labels, with the pod template ``template`` or one ``pod_spec``'s keywords build;
    the other keywords are Workload's fields."""
    pod_labels = dict(labels or {"app": name})
    spec_keys = ("constraints", "node_selector", "required_terms", "tolerations", "requests")
    spec_kw = {k: kw.pop(k) for k in spec_keys if k in kw}
    spec = template if template is not None else pod_spec(**spec_kw)
    return Workload(
        kind,
        namespace,
        name,
        sel(**pod_labels),
        replicas,
        PodTemplate(Labels(pod_labels), spec),
        **kw,
    )


def deployment(name: str, replicas: int, **kw: Any) -> Workload:
    """A Deployment (see ``controller``); its replica status reads as the API server's does,
    zeros unless ``rollout`` says otherwise."""
    return controller("Deployment", name, replicas, **{"rollout": ReplicaStatus(), **kw})


def replica_set(name: str, replicas: int, **kw: Any) -> Workload:
    return controller("ReplicaSet", name, replicas, **kw)


def stateful_set(name: str, replicas: int, **kw: Any) -> Workload:
    return controller("StatefulSet", name, replicas, **kw)


def rollout(name: str, *hashes: str, namespace: str = "default") -> tuple[Workload, ...]:
    """A Deployment of ``app=<name>`` pods and its ReplicaSets ``<name>-<hash>``, as ownership
    reads them (selectors and owners, no templates)."""
    selector = sel(app=name)
    owner = OwnerRef("Deployment", name)
    return (
        workload("Deployment", name, selector, namespace),
        *(workload("ReplicaSet", f"{name}-{h}", selector, namespace, owner=owner) for h in hashes),
    )


def budget(
    name: str,
    selector: LabelSelector | None = WEB,
    *,
    allowed: int = 0,
    namespace: str = "default",
    generation: int = 1,
    observed: int | None = None,
    healthy: int = 0,
    desired: int = 0,
    expected: int = 0,
) -> DisruptionBudget:
    """A PodDisruptionBudget with its status: ``allowed`` disruptions, observed at
    ``observed`` (default: its own ``generation``, so not stale)."""
    return DisruptionBudget(
        namespace,
        name,
        selector,
        generation,
        generation if observed is None else observed,
        allowed,
        healthy,
        desired,
        expected,
    )


def service(name: str, selector: Mapping[str, str] | None, namespace: str = "default") -> Service:
    return Service(namespace, name, Labels(selector) if selector is not None else None)


def namespace(name: str, **labels: str) -> Namespace:
    return Namespace(name, Labels(labels))


def state(
    nodes: Iterable[Node],
    pods: Iterable[Pod] = (),
    *,
    budgets: Iterable[DisruptionBudget] = (),
    workloads: Iterable[Workload] = (),
    services: Iterable[Service] = (),
    namespaces: Iterable[Namespace] = (),
) -> ClusterState:
    return ClusterState(
        nodes=tuple(nodes),
        pods=tuple(pods),
        budgets=tuple(budgets),
        workloads=tuple(workloads),
        services=tuple(services),
        namespaces=tuple(namespaces),
    )


# --------------------------------------------------------------------------------------------
# Policies


def eviction_policy(**eviction: Any) -> RebalancePolicy:
    """Every namespace, no caps (maxPerRun, maxPerWorkload) and no minimum pod age, unless
    ``eviction`` (EvictionSettings' fields) says otherwise."""
    settings = {"max_per_run": None, "max_per_workload": None, "min_pod_age": 0.0, **eviction}
    return RebalancePolicy(
        selection=Selection(exclude_namespaces=frozenset()),
        eviction=EvictionSettings(**settings),
    )

"""Tiny builders for model records, so spread tests read like the situations they describe.

``node("n1", zone="z1")`` is a node labelled ``zone=z1``; label keys that are not Python names go
in ``labels={...}``. ``pod("web-1", "n1", APP_WEB, constraints=(hard("zone", WEB),))`` is a pod
bound to ``n1``. Everything returns the immutable records from ``respread.core.model`` directly.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from respread.core.model import (
    ClusterState,
    Effect,
    Labels,
    LabelSelector,
    Node,
    NodeAffinity,
    NodeSelectorTerm,
    Op,
    OwnerRef,
    Phase,
    Pod,
    PodSpec,
    Policy,
    Requirement,
    Service,
    SpreadConstraint,
    Taint,
    Toleration,
    When,
    Workload,
)

APP_WEB: Mapping[str, str] = {"app": "web"}
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"


def sel(**match_labels: str) -> LabelSelector:
    """A selector with only matchLabels; ``sel()`` is ``{}`` (matches everything)."""
    return LabelSelector(
        tuple(Requirement(k, Op.IN, (v,)) for k, v in sorted(match_labels.items()))
    )


WEB = sel(app="web")
EVERYTHING = sel()


def node(
    name: str,
    labels: Mapping[str, str] | None = None,
    *,
    taints: Iterable[Taint] = (),
    unschedulable: bool = False,
    **kw_labels: str,
) -> Node:
    return Node(
        name=name,
        labels=Labels({**(labels or {}), **kw_labels}),
        taints=tuple(taints),
        unschedulable=unschedulable,
    )


def taint(key: str, value: str = "", effect: Effect = Effect.NO_SCHEDULE) -> Taint:
    return Taint(key, value, effect)


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
        max_skew=max_skew,
        topology_key=key,
        when=when,
        selector=selector,
        min_domains=min_domains,
        node_affinity_policy=affinity,
        node_taints_policy=taints,
        match_label_keys=match_label_keys,
    )


def hard(key: str, selector: LabelSelector | None, **kw: object) -> SpreadConstraint:
    """A DoNotSchedule constraint."""
    return constraint(key, selector, when=When.DO_NOT_SCHEDULE, **kw)  # type: ignore[arg-type]


def soft(key: str, selector: LabelSelector | None, **kw: object) -> SpreadConstraint:
    """A ScheduleAnyway constraint."""
    return constraint(key, selector, when=When.SCHEDULE_ANYWAY, **kw)  # type: ignore[arg-type]


def pod(
    name: str,
    node_name: str | None,
    labels: Mapping[str, str] | None = None,
    *,
    constraints: Iterable[SpreadConstraint] = (),
    namespace: str = "default",
    terminating: bool = False,
    phase: Phase | None = None,
    node_selector: Mapping[str, str] | None = None,
    required_terms: tuple[NodeSelectorTerm, ...] | None = None,
    tolerations: Iterable[Toleration] = (),
    owner: OwnerRef | None = None,
    priority: int = 0,
    nominated: str | None = None,
) -> Pod:
    """A pod; bound when ``node_name`` is set. Phase defaults to Running (bound) or Pending."""
    if phase is None:
        phase = Phase.RUNNING if node_name else Phase.PENDING
    spec = PodSpec(
        constraints=tuple(constraints),
        affinity=NodeAffinity(Labels(node_selector or {}), required_terms),
        tolerations=tuple(tolerations),
    )
    return Pod(
        namespace=namespace,
        name=name,
        labels=Labels(labels or {}),
        spec=spec,
        node_name=node_name,
        phase=phase,
        terminating=terminating,
        priority=priority,
        owner=owner,
        nominated_node=nominated,
    )


def pods_on(
    node_name: str | None, count: int, labels: Mapping[str, str] = APP_WEB, **kw: object
) -> tuple[Pod, ...]:
    """``count`` identical pods on one node, named ``<node>-p<i>``."""
    prefix = node_name or "pending"
    namespace = kw.get("namespace", "default")
    return tuple(
        pod(f"{prefix}-{namespace}-p{i}", node_name, labels, **kw)  # type: ignore[arg-type]
        for i in range(count)
    )


def workload(
    kind: str, name: str, selector: LabelSelector | None, namespace: str = "default"
) -> Workload:
    return Workload(kind=kind, namespace=namespace, name=name, selector=selector)


def service(name: str, selector: Mapping[str, str] | None, namespace: str = "default") -> Service:
    return Service(namespace, name, Labels(selector) if selector is not None else None)


def state(
    nodes: Iterable[Node],
    pods: Iterable[Pod] = (),
    *,
    workloads: Iterable[Workload] = (),
    services: Iterable[Service] = (),
) -> ClusterState:
    return ClusterState(
        nodes=tuple(nodes),
        pods=tuple(pods),
        workloads=tuple(workloads),
        services=tuple(services),
    )


def with_cost(p: Pod, cost: int | None, managers: tuple[str, ...] = ("respread",)) -> Pod:
    """The pod with its pod-deletion-cost annotation set to ``cost`` by ``managers`` (the
    field managers managedFields names for it); None: the pod as it is."""
    if cost is None:
        return p
    return replace(
        p, annotations=Labels({DELETION_COST: str(cost)}), deletion_cost_managers=managers
    )

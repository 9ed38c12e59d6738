"""Slim, immutable records of the cluster objects the pipeline reads, and the ClusterState.

Only what the pipeline needs is kept. Records that replicas of one workload share (labels,
scheduling specs, owner references) are interned by the loader, so 150,000 pods of a few
thousand workloads cost little more than their names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Final, NoReturn


class Labels(dict[str, str]):
    """An immutable, hashable string map (labels, nodeSelector, selected annotations).

    A dict underneath, so that lookups, iteration and equality run at C speed (they are the
    inner loop of counting and matching); every mutating method refuses.
    """

    __slots__ = ("_hash",)

    def __init__(self, items: Mapping[str, str] | None = None) -> None:
        super().__init__(items or {})
        self._hash = hash(frozenset(dict.items(self)))

    def __hash__(self) -> int:  # type: ignore[override]
        return self._hash

    def __repr__(self) -> str:
        return f"Labels({dict.__repr__(self)})"

    def __reduce__(self) -> tuple[type[Labels], tuple[dict[str, str]]]:
        return (Labels, (dict(self),))

    def _immutable(self, *args: object, **kwargs: object) -> NoReturn:
        raise TypeError("Labels are immutable")

    __setitem__ = _immutable
    __delitem__ = _immutable
    __ior__ = _immutable
    clear = _immutable
    pop = _immutable
    popitem = _immutable
    setdefault = _immutable
    update = _immutable


EMPTY_LABELS: Final = Labels()


class Op(StrEnum):
    """Operators of label-selector and node-selector requirements."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    GT = "Gt"
    LT = "Lt"


@dataclass(frozen=True, slots=True)
class Requirement:
    """One requirement of a selector. A requirement may hold 100,000 values, checked against
    every node or pod: its values as a set, and its hash, are made once."""

    key: str
    op: Op
    values: tuple[str, ...] = ()
    value_set: frozenset[str] = field(init=False, repr=False, compare=False)
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "value_set", frozenset(self.values))
        object.__setattr__(self, "_hash", hash((self.key, self.op, self.values)))

    def __hash__(self) -> int:
        return self._hash


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A metav1.LabelSelector: matchLabels folded into In requirements, all ANDed.

    A nil selector is represented by ``None`` where a selector is optional, and matches nothing.
    ``LabelSelector(())`` is ``{}``: it matches everything.
    """

    requirements: tuple[Requirement, ...] = ()

    def with_terms(self, extra: tuple[Requirement, ...]) -> LabelSelector:
        return LabelSelector(self.requirements + extra) if extra else self


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One term of required node affinity: expressions on labels and fields, ANDed."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeAffinity:
    """What the NodeAffinity filter checks: nodeSelector AND (any required term, if set)."""

    node_selector: Labels = EMPTY_LABELS
    required_terms: tuple[NodeSelectorTerm, ...] | None = None

    @property
    def is_empty(self) -> bool:
        return not self.node_selector and self.required_terms is None


NO_AFFINITY: Final = NodeAffinity()


class Effect(StrEnum):
    NO_SCHEDULE = "NoSchedule"
    PREFER_NO_SCHEDULE = "PreferNoSchedule"
    NO_EXECUTE = "NoExecute"


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: Effect


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"  # Equal | Exists | Lt | Gt
    value: str = ""
    effect: Effect | None = None


UNSCHEDULABLE_TAINT: Final = Taint("node.kubernetes.io/unschedulable", "", Effect.NO_SCHEDULE)


class When(StrEnum):
    DO_NOT_SCHEDULE = "DoNotSchedule"
    SCHEDULE_ANYWAY = "ScheduleAnyway"


class Policy(StrEnum):
    HONOR = "Honor"
    IGNORE = "Ignore"


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    """One entry of ``spec.topologySpreadConstraints`` as written (before defaults)."""

    max_skew: int
    topology_key: str
    when: When
    selector: LabelSelector | None = None
    min_domains: int | None = None
    node_affinity_policy: Policy | None = None
    node_taints_policy: Policy | None = None
    match_label_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Resources:
    """Requested or allocatable resources: CPU in millicores, the rest in whole units."""

    cpu: int = 0
    memory: int = 0
    ephemeral: int = 0
    extended: tuple[tuple[str, int], ...] = ()

    def fits_in(self, free: Resources) -> bool:
        if self.cpu > free.cpu or self.memory > free.memory or self.ephemeral > free.ephemeral:
            return False
        if not self.extended:
            return True
        available = dict(free.extended)
        return all(amount <= available.get(name, 0) for name, amount in self.extended if amount)

    def __add__(self, other: Resources) -> Resources:
        return Resources(
            self.cpu + other.cpu,
            self.memory + other.memory,
            self.ephemeral + other.ephemeral,
            _merge(self.extended, other.extended, 1),
        )

    def __sub__(self, other: Resources) -> Resources:
        return Resources(
            self.cpu - other.cpu,
            self.memory - other.memory,
            self.ephemeral - other.ephemeral,
            _merge(self.extended, other.extended, -1),
        )


def _merge(
    a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...], sign: int
) -> tuple[tuple[str, int], ...]:
    if not b:
        return a
    total = dict(a)
    for name, amount in b:
        total[name] = total.get(name, 0) + sign * amount
    return tuple(sorted(total.items()))


NO_RESOURCES: Final = Resources()


@dataclass(frozen=True, slots=True)
class PodSpec:
    """The scheduling-relevant part of a pod spec; shared by all replicas of a template."""

    constraints: tuple[SpreadConstraint, ...] = ()
    affinity: NodeAffinity = NO_AFFINITY
    tolerations: tuple[Toleration, ...] = ()
    requests: Resources = NO_RESOURCES
    priority_class: str = ""
    local_storage: bool = False
    persistent_volume_claims: bool = False


EMPTY_SPEC: Final = PodSpec()


@dataclass(frozen=True, slots=True)
class OwnerRef:
    kind: str
    name: str
    controller: bool = True


class Phase(StrEnum):
    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    UNKNOWN = "Unknown"


FINISHED: Final = frozenset((Phase.SUCCEEDED, Phase.FAILED))


@dataclass(frozen=True, slots=True)
class VolumePin:
    """A claim bound to a PersistentVolume whose spec.nodeAffinity.required restricts nodes."""

    claim: str
    volume: str
    terms: tuple[NodeSelectorTerm, ...]  # ORed, as a required node selector's terms


@dataclass(frozen=True, slots=True)
class Claim:
    """A PersistentVolumeClaim: only the volume it is bound to."""

    namespace: str
    name: str
    volume: str | None


@dataclass(frozen=True, slots=True)
class Volume:
    """A PersistentVolume: only its required node affinity (None: any node)."""

    name: str
    terms: tuple[NodeSelectorTerm, ...] | None


@dataclass(frozen=True, slots=True)
class SchedulingEvent:
    """A FailedScheduling Event about a pod (core/v1 or events.k8s.io/v1): only its message."""

    namespace: str
    name: str  # the Event's
    pod: str
    message: str
    time: float | None  # lastTimestamp, or eventTime


@dataclass(frozen=True, slots=True)
class Pod:
    namespace: str
    name: str
    labels: Labels
    spec: PodSpec
    node_name: str | None = None
    phase: Phase = Phase.RUNNING
    terminating: bool = False
    ready: bool = True
    priority: int = 0
    owner: OwnerRef | None = None
    created: float | None = None  # seconds since the epoch
    annotations: Labels = EMPTY_LABELS  # only the annotations respread reads
    nominated_node: str | None = None
    uid: str | None = None
    # The field managers owning the pod-deletion-cost annotation (metadata.managedFields);
    # interned, and the shared empty tuple for the usual pod without one.
    deletion_cost_managers: tuple[str, ...] = ()
    # The scheduler's PodScheduled=False condition (reason: message), evidence of why an
    # unbound pod waits; None when it has no such condition.
    unschedulable: str | None = None
    # The PersistentVolumeClaims the pod mounts (ephemeral volumes by their claim's name), and
    # what their bound volumes' node affinity requires of a node (joined after loading,
    # inputs/volumes.py): the VolumeBinding filter's restriction on the pod and its replacement.
    claims: tuple[str, ...] = ()
    volume_pins: tuple[VolumePin, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def finished(self) -> bool:
        return self.phase in FINISHED


# A pod's identity in a snapshot: (namespace, name). The planners key the pods they moved or
# skipped by it; written out where used (a property costs a call on the planner's hot paths).
PodName = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    labels: Labels
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    allocatable: Resources | None = None  # None: not reported, so resources are not modelled
    max_pods: int | None = None
    ready: bool = True
    created: float | None = None
    # When the Ready condition last changed (status.conditions lastTransitionTime): how long
    # a NotReady node has been so (outage detection's grace period).
    ready_changed: float | None = None


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: LabelSelector | None
    generation: int = 0
    observed_generation: int = 0
    disruptions_allowed: int = 0
    current_healthy: int = 0
    desired_healthy: int = 0
    expected_pods: int = 0

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def stale(self) -> bool:
        return self.observed_generation < self.generation


@dataclass(frozen=True, slots=True)
class PodTemplate:
    labels: Labels
    spec: PodSpec


@dataclass(frozen=True, slots=True)
class Workload:
    """A pod controller: Deployment, ReplicaSet, StatefulSet, ReplicationController, Job, ..."""

    kind: str
    namespace: str
    name: str
    selector: LabelSelector | None = None
    replicas: int | None = None
    template: PodTemplate | None = None
    owner: OwnerRef | None = None
    generation: int = 0
    observed_generation: int = 0
    created: float | None = None
    revision: str | None = None  # deployment.kubernetes.io/revision (ReplicaSets, Deployments)
    # status.replicas of a controller other than a Deployment (whose status is `rollout`):
    # more than spec.replicas while it scales in
    status_replicas: int | None = None
    # What surge moves (surge.py) read, on Deployments: identity and version for write
    # preconditions, spec.paused, the replica status, and only the labels and annotations that
    # mark GitOps management or respread's own surge state (snapshot.SURGE_MARKERS).
    uid: str | None = None
    resource_version: str | None = None
    paused: bool = False
    rollout: ReplicaStatus | None = None
    markers: Labels = EMPTY_LABELS

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.namespace, self.kind, self.name)


@dataclass(frozen=True, slots=True)
class ReplicaStatus:
    """A Deployment's status replica counts."""

    replicas: int = 0
    updated: int = 0
    ready: int = 0
    available: int = 0


@dataclass(frozen=True, slots=True)
class Autoscaler:
    """A HorizontalPodAutoscaler: only what it scales (spec.scaleTargetRef)."""

    namespace: str
    name: str
    target_kind: str
    target_name: str


@dataclass(frozen=True, slots=True)
class Service:
    namespace: str
    name: str
    selector: Labels | None


@dataclass(frozen=True, slots=True)
class Namespace:
    name: str
    labels: Labels = EMPTY_LABELS


@dataclass(frozen=True, slots=True)
class ClusterState:
    nodes: tuple[Node, ...] = ()
    pods: tuple[Pod, ...] = ()
    budgets: tuple[DisruptionBudget, ...] = ()
    workloads: tuple[Workload, ...] = ()
    services: tuple[Service, ...] = ()
    namespaces: tuple[Namespace, ...] = ()
    taken_at: float | None = field(default=None, compare=False)
    autoscalers: tuple[Autoscaler, ...] = ()
    claims: tuple[Claim, ...] = ()
    volumes: tuple[Volume, ...] = ()
    scheduling_events: tuple[SchedulingEvent, ...] = ()

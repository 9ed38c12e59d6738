"""Turning Kubernetes manifests (as ``kubectl get -o yaml|json`` writes them) into a ClusterState.

Pure: the caller reads the files and hands over their text. A malformed object is reported as a
Problem naming its source, kind, name and field, and left out; everything else still loads.
Unknown kinds are ignored. Shared substructures are interned, which is what keeps the model small.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from respread.core.annotations import (
    COST_POLICY,
    COST_WRITTEN,
    DELETION_COST,
    SURGE_OPT,
    SURGE_STATE,
)
from respread.core.limits import DEFAULT_LIMITS, INT32_MAX, Limits, is_int64, printable, shown
from respread.core.model import (
    EMPTY_LABELS,
    NO_AFFINITY,
    Autoscaler,
    Claim,
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
    SchedulingEvent,
    Service,
    SpreadConstraint,
    Taint,
    Toleration,
    Volume,
    When,
    Workload,
)
from respread.core.quantity import QuantityError, milli, units
from respread.core.timestamps import parse_rfc3339, rfc3339_or_none
from respread.inputs.documents import InputError, documents_from_text, read_documents
from respread.inputs.entries import LIST_ITEMS, LeftOut, Settled
from respread.inputs.evidence import with_evidence
from respread.inputs.volumes import pin_pods

__all__ = ["documents_from_text"]  # re-exported: the command reads policies with it

# Annotations the pipeline reads; every other annotation is dropped at load time.
KEPT_ANNOTATIONS = frozenset(
    {
        "respread.io/evict",
        "karpenter.sh/do-not-disrupt",
        "cluster-autoscaler.kubernetes.io/safe-to-evict",
        "kubernetes.io/config.mirror",
        "deployment.kubernetes.io/revision",
        DELETION_COST,
        COST_POLICY,
        COST_WRITTEN,
    }
)

# Labels and annotations of a Deployment that surge moves read (surge.py: GitOps management,
# respread's opt-out and its operation state); every other one is dropped at load time.
SURGE_MARKERS = frozenset(
    {
        SURGE_STATE,
        SURGE_OPT,
        "argocd.argoproj.io/tracking-id",
        "argocd.argoproj.io/instance",
        "kustomize.toolkit.fluxcd.io/name",
        "kustomize.toolkit.fluxcd.io/namespace",
        "helm.toolkit.fluxcd.io/name",
        "helm.toolkit.fluxcd.io/namespace",
    }
)

WORKLOAD_KINDS = frozenset(
    {"Deployment", "ReplicaSet", "StatefulSet", "ReplicationController", "Job", "DaemonSet"}
)

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Problem:
    """One object that could not be read, and why."""

    source: str
    kind: str
    name: str
    field: str
    message: str

    def __str__(self) -> str:
        where = f"{self.kind} {self.name}" if self.name else self.kind or "document"
        at = f" field {self.field}:" if self.field else ""
        return printable(f"{self.source}: {where}:{at} {self.message}")


# The API server's limits on names (a DNS subdomain; a namespace is a DNS label).
MAX_NAME = 253
MAX_NAMESPACE = 63


@dataclass(frozen=True, slots=True)
class LoadResult:
    state: ClusterState
    problems: tuple[Problem, ...]


class FieldError(ValueError):
    def __init__(self, path: str, message: str) -> None:
        path, message = printable(path), printable(message)
        super().__init__(message)
        self.path = path
        self.message = message


# --------------------------------------------------------------------------------------------
# Documents -> ClusterState


class _Interner:
    """Returns one shared instance per distinct value; with ``memo``, also remembers what parts
    of objects read as, by what they hold (a snapshot's pods of one template share a spec)."""

    def __init__(self, memo: bool = False) -> None:
        self._seen: dict[object, object] = {}
        # (what, key) -> the record part; None: not remembered (a long-lived parser, whose
        # watch events come one at a time, keeps no keys)
        self.memo: dict[tuple[str, object], Any] | None = {} if memo else None

    def __call__(self, value: T) -> T:
        return self._seen.setdefault(value, value)  # type: ignore[return-value]


Record = (
    Node
    | Pod
    | DisruptionBudget
    | Workload
    | Service
    | Namespace
    | Autoscaler
    | Claim
    | Volume
    | SchedulingEvent
)


class ObjectParser:
    """Parses objects one at a time, as watch events deliver them, interning shared parts.

    The interner is dropped every ``reset_every`` objects, so values no live record uses any
    more (labels of deleted pods, old templates) do not accumulate in a long-running process.
    """

    def __init__(self, reset_every: int = 500_000, memo: bool = False) -> None:
        self._memo = memo
        self._intern = _Interner(memo)
        self._parsed = 0
        self._reset_every = reset_every

    def parse(self, doc: Mapping[str, Any], kind: str | None = None) -> Record | None:
        """The record for a known kind, None for others; raises FieldError when malformed.

        ``kind`` names the kind where the object does not (items of a list or a watch).
        """
        kind = kind or doc.get("kind")
        parser = _PARSERS.get(kind) if isinstance(kind, str) else None
        if parser is None:
            return None
        self._parsed += 1
        if self._parsed % self._reset_every == 0:
            self._intern = _Interner(self._memo)
        try:
            record: Record = parser(doc if "kind" in doc else {**doc, "kind": kind}, self._intern)
        except FieldError:
            raise
        except (
            ValueError,
            TypeError,
            AttributeError,
            KeyError,
            IndexError,
            OverflowError,
            RecursionError,
        ) as err:
            # Every malformed field should be named by the parsers above; this keeps the
            # contract (FieldError, the object skipped) for any shape they did not foresee.
            raise FieldError("", f"cannot be read ({type(err).__name__})") from None
        return record


def _identity(doc: Mapping[str, Any]) -> tuple[str, str]:
    """The kind and ``namespace/name`` of a document, for messages (cut if long or odd)."""
    meta = doc.get("metadata")
    name = meta.get("name", "") if isinstance(meta, dict) else ""
    namespace = meta.get("namespace") if isinstance(meta, dict) else None
    raw_kind = doc.get("kind")
    kind = raw_kind if isinstance(raw_kind, str) and len(raw_kind) <= 64 else shown(raw_kind, 40)
    name = name if isinstance(name, str) and len(name) <= MAX_NAME else shown(name)
    if namespace and kind != "Namespace":
        ns = namespace if isinstance(namespace, str) and len(namespace) <= 64 else shown(namespace)
        return kind, f"{ns}/{name}"
    return kind, str(name)


def _key(record: Record) -> tuple[str, str, str]:
    if isinstance(record, Workload):
        return record.kind, record.namespace, record.name
    namespace = getattr(record, "namespace", "")
    return type(record).__name__, namespace if isinstance(namespace, str) else "", record.name


class _Collector:
    """The records read so far, in the order read, and the problems; the items of a List not
    yet known to be one are parsed at once (their text dropped) but held apart until it is
    (only those that make a record or a problem: an item of no kind respread reads costs
    nothing to hold)."""

    def __init__(self) -> None:
        self.parser = ObjectParser(memo=True)  # one load: its keys go with it
        self.records: dict[type, list[Any]] = {
            kind: []
            for kind in (
                Node,
                Pod,
                DisruptionBudget,
                Workload,
                Service,
                Namespace,
                Autoscaler,
                Claim,
                Volume,
                SchedulingEvent,
            )
        }
        self.problems: list[Problem] = []
        self.seen: dict[tuple[str, str, str], str] = {}
        self.ordinals: dict[str, int] = {}
        self.pending: list[tuple[int, str, Record | Problem, Any]] | None = None
        self.pending_count = 0  # items since LIST_ITEMS, kept or not

    def add(self, source: str, entry: Any) -> None:
        if entry is LIST_ITEMS:
            self.pending, self.pending_count = [], 0
        elif isinstance(entry, Settled):
            self._settle(source, entry)
        elif self.pending is not None:
            item_source, parsed, identity = self._parsed(source, entry)
            if parsed is not None:
                self.pending.append((self.pending_count, item_source, parsed, identity))
            self.pending_count += 1
        else:
            self._keep(*self._parsed(source, entry))

    def _settle(self, source: str, settled: Settled) -> None:
        pending, count = self.pending or [], self.pending_count
        self.pending, self.pending_count = None, 0
        if settled.is_list:
            base = self.ordinals.get(source, 0)
            for position, item_source, parsed, identity in pending:
                self.ordinals[source] = base + position
                self._keep(item_source, parsed, identity)
            self.ordinals[source] = base + count
        elif settled.root is not None:
            self._keep(*self._parsed(source, settled.root))

    def _parsed(self, source: str, doc: Any) -> tuple[str, Record | Problem | None, Any]:
        """(source, the record or the problem or None for a kind respread does not read,
        the object's kind and name for a later message)."""
        if isinstance(doc, LeftOut):
            kind, label = _identity(doc.doc) if isinstance(doc.doc, dict) else ("", "")
            return source, Problem(source, kind, label, doc.field, doc.message), None
        if not isinstance(doc, dict):
            message = "not a Kubernetes object (not a mapping)"
            return source, Problem(source, "", "", "", message), None
        try:
            record = self.parser.parse(doc)
        except FieldError as err:
            kind, label = _identity(doc)
            return source, Problem(source, kind, label, err.path, err.message), None
        return source, record, _identity(doc) if record is not None else None

    def _keep(self, source: str, parsed: Record | Problem | None, identity: Any) -> None:
        ordinal = self.ordinals[source] = self.ordinals.get(source, 0) + 1
        if parsed is None:
            return
        if isinstance(parsed, Problem):
            self.problems.append(parsed)
            return
        place = f"{source} (object {ordinal})"
        first = self.seen.setdefault(_key(parsed), place)
        if first is not place:
            kind, label = identity
            message = f"seen twice, in {first} and in {place}: counted once"
            self.problems.append(Problem(source, kind, label, "", message))
            return
        self.records[type(parsed)].append(parsed)

    def result(self, taken_at: float | None) -> LoadResult:
        records = self.records
        state = ClusterState(
            nodes=tuple(records[Node]),
            pods=tuple(records[Pod]),
            budgets=tuple(records[DisruptionBudget]),
            workloads=tuple(records[Workload]),
            services=tuple(records[Service]),
            namespaces=tuple(records[Namespace]),
            taken_at=taken_at,
            autoscalers=tuple(records[Autoscaler]),
            claims=tuple(records[Claim]),
            volumes=tuple(records[Volume]),
            scheduling_events=tuple(records[SchedulingEvent]),
        )
        return LoadResult(with_evidence(pin_pods(state)), tuple(self.problems))


def load_documents(docs: Iterable[tuple[str, Any]], taken_at: float | None = None) -> LoadResult:
    """The state of every readable object; a malformed one, or a second copy of an object
    already read (same kind, namespace and name), is left out with a Problem naming it.

    ``docs`` are objects (mappings), or the entries of respread.inputs.documents.read_documents
    (what could not be read, and the items of Lists, handed on as they were read)."""
    collector = _Collector()
    for source, doc in docs:
        collector.add(source, doc)
    return collector.result(taken_at)


def load_texts(
    texts: Iterable[tuple[str, str]],
    taken_at: float | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> LoadResult:
    """Parse several (source, text) pairs, each object as soon as it is read (a text is never
    held as objects whole); what cannot be read is a Problem naming it, the rest is read."""
    collector = _Collector()
    for source, text in texts:
        try:
            for entry in read_documents(text, limits):
                collector.add(source, entry)
        except InputError as err:
            collector.add(source, LeftOut(None, "", f"cannot be read: {err}"))
    return collector.result(taken_at)


# --------------------------------------------------------------------------------------------
# Field helpers


def _get(obj: Mapping[str, Any], path: str, key: str, kind: type[T], default: T) -> T:
    value = obj.get(key)
    if value is None:
        return default
    if value.__class__ is kind and kind is not int:  # the common case: str, dict, list
        return value
    where = f"{path}.{key}" if path else key
    if kind is int and isinstance(value, bool):
        raise FieldError(where, f"expected an integer, got {shown(value)}")
    if not isinstance(value, kind):
        raise FieldError(where, f"expected {_kind_name(kind)}, got {shown(value)}")
    if isinstance(value, int) and not is_int64(value):
        raise FieldError(where, f"out of range for an int64: {shown(value)}")
    return value


def _int32(obj: Mapping[str, Any], path: str, key: str, default: int) -> int:
    value = _get(obj, path, key, int, default)
    if not -INT32_MAX - 1 <= value <= INT32_MAX:
        raise FieldError(f"{path}.{key}", f"out of range for an int32: {shown(value)}")
    return value


def _scalar(value: object, where: str) -> str:
    """A label-like value: a string (YAML numbers and booleans read as their text)."""
    if isinstance(value, str | bool | int | float):
        return _label_value(value)
    raise FieldError(where, f"expected a string, got {shown(value)}")


def _kind_name(kind: type) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", int: "an integer"}.get(
        kind, kind.__name__
    )


def _map(obj: Mapping[str, Any], path: str, key: str) -> dict[str, Any]:
    return _get(obj, path, key, dict, {})


def _list(obj: Mapping[str, Any], path: str, key: str) -> list[Any]:
    return _get(obj, path, key, list, [])


def _str(obj: Mapping[str, Any], path: str, key: str, default: str = "") -> str:
    return _get(obj, path, key, str, default)


def _labels(obj: Mapping[str, Any], path: str, key: str, intern: _Interner) -> Labels:
    raw = _map(obj, path, key)
    if not raw:
        return EMPTY_LABELS
    memo = intern.memo
    if memo is None:
        return _checked_labels(raw, path, key, intern)
    seen = ("labels", repr(raw))  # repr, not the items: 1, 1.0 and True are equal keys
    found = memo.get(seen)
    if found is None:
        found = memo[seen] = _checked_labels(raw, path, key, intern)
    return found


def _checked_labels(raw: dict[str, Any], path: str, key: str, intern: _Interner) -> Labels:
    for k, v in raw.items():
        if not isinstance(k, str) or not isinstance(v, str | int | float | bool):
            raise FieldError(
                f"{path}.{key}", f"expected string keys and values, got {shown(k)}: {shown(v)}"
            )
    return intern(Labels({k: _label_value(v) for k, v in raw.items()}))


def _label_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _time(
    meta: Mapping[str, Any], key: str, memo: dict[tuple[str, object], Any] | None = None
) -> float | None:
    value = meta.get(key)
    if value is None:
        return None
    if memo is not None and value.__class__ is str:
        found = memo.get(("time", value))
        if found is None:
            found = memo["time", value] = _time(meta, key)
        return found
    if not isinstance(value, str):
        raise FieldError(f"metadata.{key}", f"expected an RFC 3339 time, got {shown(value)}")
    try:
        return parse_rfc3339(value)
    except ValueError as err:
        raise FieldError(f"metadata.{key}", f"{err}, got {shown(value)}") from None


def _meta(doc: Mapping[str, Any], namespaced: bool) -> tuple[dict[str, Any], str, str]:
    meta = _map(doc, "", "metadata")
    name = meta.get("name")
    if name is None or name == "":
        raise FieldError("metadata.name", "missing")
    if not isinstance(name, str):
        raise FieldError("metadata.name", f"expected a string, got {shown(name)}")
    if len(name) > MAX_NAME:
        raise FieldError("metadata.name", f"longer than {MAX_NAME} characters: {shown(name)}")
    namespace = _str(meta, "metadata", "namespace", "default") if namespaced else ""
    if len(namespace) > MAX_NAMESPACE:
        raise FieldError(
            "metadata.namespace", f"longer than {MAX_NAMESPACE} characters: {shown(namespace)}"
        )
    return meta, name, namespace


# --------------------------------------------------------------------------------------------
# Selectors, affinity, tolerations, constraints


def _requirements(
    raw: list[Any], path: str, allowed: frozenset[Op], intern: _Interner
) -> tuple[Requirement, ...]:
    out: list[Requirement] = []
    for i, item in enumerate(raw):
        where = f"{path}[{i}]"
        if not isinstance(item, dict):
            raise FieldError(where, "expected a mapping")
        key = item.get("key")
        if not isinstance(key, str) or not key:
            raise FieldError(f"{where}.key", f"expected a non-empty string, got {shown(key)}")
        operator = item.get("operator")
        try:
            op = Op(operator if isinstance(operator, str) else "")
        except ValueError:
            raise FieldError(f"{where}.operator", f"unknown operator {shown(operator)}") from None
        if op not in allowed:
            raise FieldError(f"{where}.operator", f"operator {op.value} is not allowed here")
        values = _list(item, where, "values")
        if op in (Op.IN, Op.NOT_IN) and not values:
            raise FieldError(f"{where}.values", f"must be non-empty for operator {op.value}")
        if op in (Op.EXISTS, Op.DOES_NOT_EXIST) and values:
            raise FieldError(f"{where}.values", f"must be empty for operator {op.value}")
        if op in (Op.GT, Op.LT) and len(values) != 1:
            raise FieldError(f"{where}.values", f"must have exactly one value for {op.value}")
        out.append(
            intern(
                Requirement(
                    key, op, tuple(_scalar(v, f"{where}.values[{j}]") for j, v in enumerate(values))
                )
            )
        )
    return tuple(out)


_LABEL_OPS = frozenset({Op.IN, Op.NOT_IN, Op.EXISTS, Op.DOES_NOT_EXIST})
_NODE_OPS = frozenset(Op)
_FIELD_OPS = frozenset({Op.IN, Op.NOT_IN})


def label_selector(raw: Any, path: str, intern: _Interner | None = None) -> LabelSelector | None:
    """A metav1.LabelSelector; ``None`` (nil) stays None."""
    intern = intern or _Interner()
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise FieldError(path, "expected a label selector mapping")
    match_labels = _map(raw, path, "matchLabels")
    for k in match_labels:
        if not isinstance(k, str):
            raise FieldError(f"{path}.matchLabels", f"expected string keys, got {shown(k)}")
    reqs = [
        intern(Requirement(k, Op.IN, (_scalar(v, f"{path}.matchLabels.{k}"),)))
        for k, v in sorted(match_labels.items())
    ]
    reqs.extend(
        _requirements(
            _list(raw, path, "matchExpressions"), f"{path}.matchExpressions", _LABEL_OPS, intern
        )
    )
    return intern(LabelSelector(tuple(reqs)))


def _affinity(spec: Mapping[str, Any], intern: _Interner) -> NodeAffinity:
    node_selector = _labels(spec, "spec", "nodeSelector", intern)
    affinity = _map(spec, "spec", "affinity")
    node_aff = _map(affinity, "spec.affinity", "nodeAffinity")
    base = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
    required = node_aff.get("requiredDuringSchedulingIgnoredDuringExecution")
    terms = _node_selector_terms(required, base, intern)
    if not node_selector and terms is None:
        return NO_AFFINITY
    return intern(NodeAffinity(node_selector, terms))


def _node_selector_terms(
    required: Any, base: str, intern: _Interner
) -> tuple[NodeSelectorTerm, ...] | None:
    """A required node selector's terms (None: not set), as node affinity and volumes hold it."""
    if required is None:
        return None
    if not isinstance(required, dict):
        raise FieldError(base, "expected a mapping")
    parsed = []
    for i, term in enumerate(_list(required, base, "nodeSelectorTerms")):
        where = f"{base}.nodeSelectorTerms[{i}]"
        if not isinstance(term, dict):
            raise FieldError(where, "expected a mapping")
        exprs = _requirements(
            _list(term, where, "matchExpressions"),
            f"{where}.matchExpressions",
            _NODE_OPS,
            intern,
        )
        fields = _requirements(
            _list(term, where, "matchFields"), f"{where}.matchFields", _FIELD_OPS, intern
        )
        for j, f in enumerate(fields):
            if f.key != "metadata.name" or len(f.values) != 1:
                raise FieldError(
                    f"{where}.matchFields[{j}]",
                    "only metadata.name with exactly one value is supported",
                )
        parsed.append(NodeSelectorTerm(exprs, fields))
    return intern(tuple(parsed))


def _effect(value: Any, path: str) -> Effect:
    try:
        return Effect(value)
    except ValueError:
        raise FieldError(path, f"unknown taint effect {shown(value)}") from None


def _tolerations(spec: Mapping[str, Any], intern: _Interner) -> tuple[Toleration, ...]:
    out = []
    for i, raw in enumerate(_list(spec, "spec", "tolerations")):
        where = f"spec.tolerations[{i}]"
        if not isinstance(raw, dict):
            raise FieldError(where, "expected a mapping")
        effect = raw.get("effect")
        operator = _str(raw, where, "operator", "Equal") or "Equal"
        if operator not in ("Equal", "Exists", "Lt", "Gt"):
            raise FieldError(f"{where}.operator", f"unknown operator {shown(operator)}")
        out.append(
            Toleration(
                key=_str(raw, where, "key"),
                operator=operator,
                value=_scalar(raw.get("value", ""), f"{where}.value"),
                effect=_effect(effect, f"{where}.effect") if effect else None,
            )
        )
    return intern(tuple(out))


def _policy(raw: Mapping[str, Any], where: str, key: str) -> Policy | None:
    value = raw.get(key)
    if value is None:
        return None
    try:
        return Policy(value)
    except ValueError:
        raise FieldError(f"{where}.{key}", f"must be Honor or Ignore, got {shown(value)}") from None


def _when(raw: Mapping[str, Any], where: str) -> When:
    try:
        when_raw = raw.get("whenUnsatisfiable")
        return When(when_raw if isinstance(when_raw, str) else "")
    except ValueError:
        raise FieldError(
            f"{where}.whenUnsatisfiable", "must be DoNotSchedule or ScheduleAnyway"
        ) from None


def _min_domains(raw: Mapping[str, Any], where: str, when: When) -> int | None:
    min_domains = raw.get("minDomains")
    if min_domains is None:
        return None
    if not isinstance(min_domains, int) or isinstance(min_domains, bool) or min_domains <= 0:
        raise FieldError(f"{where}.minDomains", "must be greater than zero")
    if min_domains > INT32_MAX:
        raise FieldError(f"{where}.minDomains", f"out of range for an int32: {shown(min_domains)}")
    if when is not When.DO_NOT_SCHEDULE:
        raise FieldError(
            f"{where}.minDomains", "may only be set with whenUnsatisfiable DoNotSchedule"
        )
    return min_domains


def spread_constraint(raw: Any, where: str, intern: _Interner | None = None) -> SpreadConstraint:
    """One topology spread constraint, validated as the API server validates it (section 9)."""
    intern = intern or _Interner()
    if not isinstance(raw, dict):
        raise FieldError(where, "expected a mapping")
    max_skew = _int32(raw, where, "maxSkew", 0)
    if max_skew <= 0:
        raise FieldError(f"{where}.maxSkew", "must be greater than zero")
    key = _str(raw, where, "topologyKey")
    if not key:
        raise FieldError(f"{where}.topologyKey", "must not be empty")
    when = _when(raw, where)
    min_domains = _min_domains(raw, where, when)
    keys = _list(raw, where, "matchLabelKeys")
    if any(not isinstance(k, str) or not k for k in keys):
        raise FieldError(f"{where}.matchLabelKeys", "keys must be non-empty strings")
    selector = label_selector(raw.get("labelSelector"), f"{where}.labelSelector", intern)
    if keys and selector is None:
        raise FieldError(f"{where}.matchLabelKeys", "requires labelSelector to be set")
    return intern(
        SpreadConstraint(
            max_skew=max_skew,
            topology_key=key,
            when=when,
            selector=selector,
            min_domains=min_domains,
            node_affinity_policy=_policy(raw, where, "nodeAffinityPolicy"),
            node_taints_policy=_policy(raw, where, "nodeTaintsPolicy"),
            match_label_keys=tuple(keys),
        )
    )


def _constraints(spec: Mapping[str, Any], intern: _Interner) -> tuple[SpreadConstraint, ...]:
    # Two entries on one {topologyKey, whenUnsatisfiable} would fail API validation, but the
    # scheduler evaluates each independently, and so does respread: no check here.
    raw = _list(spec, "spec", "topologySpreadConstraints")
    return intern(
        tuple(
            spread_constraint(c, f"spec.topologySpreadConstraints[{i}]", intern)
            for i, c in enumerate(raw)
        )
    )


# --------------------------------------------------------------------------------------------
# Resources


def _resources(raw: Mapping[str, Any], path: str) -> Resources:
    cpu = memory = ephemeral = 0
    extended: dict[str, int] = {}
    for name, value in raw.items():
        if not isinstance(name, str):
            raise FieldError(path, f"expected resource names to be strings, got {shown(name)}")
        try:
            if name == "cpu":
                cpu = milli(value)
            elif name == "memory":
                memory = units(value)
            elif name == "ephemeral-storage":
                ephemeral = units(value)
            elif name != "pods":
                extended[name] = units(value)
        except QuantityError as err:
            raise FieldError(f"{path}.{name}", str(err)) from None
    return Resources(cpu, memory, ephemeral, tuple(sorted(extended.items())))


def _max(a: Resources, b: Resources) -> Resources:
    ext = dict(a.extended)
    for name, amount in b.extended:
        ext[name] = max(ext.get(name, 0), amount)
    return Resources(
        max(a.cpu, b.cpu),
        max(a.memory, b.memory),
        max(a.ephemeral, b.ephemeral),
        tuple(sorted(ext.items())),
    )


def _container_requests(container: Mapping[str, Any], path: str) -> Resources:
    res = _map(container, path, "resources")
    # API defaulting: a limit with no request requests the limit.
    merged = {
        **_map(res, f"{path}.resources", "limits"),
        **_map(res, f"{path}.resources", "requests"),
    }
    return _resources(merged, f"{path}.resources.requests")


def _pod_requests(spec: Mapping[str, Any]) -> Resources:
    """The scheduler's effective request, with sidecars (restartable init containers).

    max(containers + every sidecar, each plain init container + the sidecars started before
    it) + overhead.
    """
    total = Resources()
    for i, c in enumerate(_list(spec, "spec", "containers")):
        if isinstance(c, dict):
            total = total + _container_requests(c, f"spec.containers[{i}]")
    sidecars = Resources()
    init_peak = Resources()
    for i, c in enumerate(_list(spec, "spec", "initContainers")):
        if not isinstance(c, dict):
            continue
        request = _container_requests(c, f"spec.initContainers[{i}]")
        if c.get("restartPolicy") == "Always":
            sidecars = sidecars + request
            init_peak = _max(init_peak, sidecars)
        else:
            init_peak = _max(init_peak, sidecars + request)
    total = _max(total + sidecars, init_peak)
    overhead = _map(spec, "spec", "overhead")
    return total + _resources(overhead, "spec.overhead") if overhead else total


# --------------------------------------------------------------------------------------------
# Kinds


def _pod_spec(spec: Mapping[str, Any], intern: _Interner) -> PodSpec:
    """The scheduling part of a pod's spec; remembered by the fields it reads (the pods of one
    template share it, wherever they run)."""
    memo = intern.memo
    if memo is None:
        return _read_pod_spec(spec, intern)
    seen = ("spec", repr(tuple(_spec_view(spec))))
    found = memo.get(seen)
    if found is None:
        found = memo[seen] = _read_pod_spec(spec, intern)
    return found


_SPEC_FIELDS = (
    "topologySpreadConstraints",
    "affinity",
    "nodeSelector",
    "tolerations",
    "overhead",
    "priorityClassName",
)


def _spec_view(spec: Mapping[str, Any]) -> Iterator[object]:
    """Every field of a spec _read_pod_spec reads (with its type: repr tells 1 from "1" and
    True), and of containers and volumes only what it reads of them."""
    get = spec.get
    for name in _SPEC_FIELDS:
        yield get(name)
    for name in ("containers", "initContainers"):
        containers = get(name)
        if containers.__class__ is list:
            yield [
                (c.get("resources"), c.get("restartPolicy")) if c.__class__ is dict else None
                for c in containers
            ]
        else:
            yield containers
    volumes = get("volumes")
    if volumes.__class__ is list:
        yield [
            (
                "emptyDir" in v or "hostPath" in v,
                "persistentVolumeClaim" in v or "ephemeral" in v,
            )
            if v.__class__ is dict
            else None
            for v in volumes
        ]
    else:
        yield volumes


def _read_pod_spec(spec: Mapping[str, Any], intern: _Interner) -> PodSpec:
    volumes = [v for v in _list(spec, "spec", "volumes") if isinstance(v, dict)]
    return intern(
        PodSpec(
            constraints=_constraints(spec, intern),
            affinity=_affinity(spec, intern),
            tolerations=_tolerations(spec, intern),
            requests=intern(_pod_requests(spec)),
            priority_class=_str(spec, "spec", "priorityClassName"),
            local_storage=any("emptyDir" in v or "hostPath" in v for v in volumes),
            persistent_volume_claims=any(
                "persistentVolumeClaim" in v or "ephemeral" in v for v in volumes
            ),
        )
    )


def _owner(meta: Mapping[str, Any], intern: _Interner) -> OwnerRef | None:
    memo = intern.memo
    raw = meta.get("ownerReferences")
    if memo is None or raw is None:
        return _read_owner(meta, intern)
    seen = ("owner", repr(raw))
    if seen not in memo:
        memo[seen] = _read_owner(meta, intern)
    return memo[seen]  # type: ignore[no-any-return]


def _read_owner(meta: Mapping[str, Any], intern: _Interner) -> OwnerRef | None:
    refs = [r for r in _list(meta, "metadata", "ownerReferences") if isinstance(r, dict)]
    chosen = next((r for r in refs if r.get("controller") is True), None)
    if chosen is None and len(refs) == 1 and refs[0].get("controller") is None:
        chosen = refs[0]  # hand-written manifests often omit `controller`
    if chosen is None:
        return None
    kind, name = chosen.get("kind"), chosen.get("name")
    if not isinstance(kind, str) or not isinstance(name, str):
        raise FieldError("metadata.ownerReferences", "kind and name must be strings")
    return intern(OwnerRef(kind, name, True))


def _kept_annotations(meta: Mapping[str, Any], intern: _Interner) -> Labels:
    raw = _map(meta, "metadata", "annotations")
    kept = {
        k: _scalar(v, f"metadata.annotations.{k}") for k, v in raw.items() if k in KEPT_ANNOTATIONS
    }
    return intern(Labels(kept)) if kept else EMPTY_LABELS


def _deletion_cost_managers(meta: Mapping[str, Any], intern: _Interner) -> tuple[str, ...]:
    """The field managers that own the pod-deletion-cost annotation, from managedFields."""
    entries = meta.get("managedFields")
    if not isinstance(entries, list):
        return ()
    owners = []
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        fields = entry.get("fieldsV1")
        metadata = fields.get("f:metadata") if isinstance(fields, dict) else None
        annotations = metadata.get("f:annotations") if isinstance(metadata, dict) else None
        if isinstance(annotations, dict) and f"f:{DELETION_COST}" in annotations:
            manager = entry.get("manager")
            owners.append(intern(manager) if isinstance(manager, str) else "")
    return intern(tuple(sorted(set(owners)))) if owners else ()


def _condition(status: Mapping[str, Any], kind: str) -> Mapping[str, Any] | None:
    for cond in _list(status, "status", "conditions"):
        if isinstance(cond, dict) and cond.get("type") == kind:
            return cond
    return None


def _ready(status: Mapping[str, Any], default: bool) -> bool:
    cond = _condition(status, "Ready")
    return cond.get("status") == "True" if cond is not None else default


def _ready_changed(status: Mapping[str, Any]) -> float | None:
    """When the node's Ready condition last changed (None: not said, or not a time)."""
    cond = _condition(status, "Ready")
    return rfc3339_or_none(cond.get("lastTransitionTime")) if cond is not None else None


def _unschedulable(status: Mapping[str, Any]) -> str | None:
    """The PodScheduled=False condition as "reason: message" (None: none)."""
    cond = _condition(status, "PodScheduled")
    if cond is None or cond.get("status") != "False":
        return None
    reason = _scalar(cond.get("reason") or "", "status.conditions.reason")
    message = _scalar(cond.get("message") or "", "status.conditions.message")
    return printable(f"{reason}: {message}" if reason and message else reason or message)


def _claims(spec: Mapping[str, Any], pod: str, intern: _Interner) -> tuple[str, ...]:
    """The claims the pod's volumes name: persistentVolumeClaim.claimName, and an ephemeral
    volume's claim, which the ephemeral volume controller names <pod>-<volume>."""
    out: list[str] = []
    for v in _list(spec, "spec", "volumes"):
        if not isinstance(v, dict):
            continue
        pvc = v.get("persistentVolumeClaim")
        if isinstance(pvc, dict) and isinstance(pvc.get("claimName"), str):
            out.append(pvc["claimName"])
        elif isinstance(v.get("ephemeral"), dict) and isinstance(v.get("name"), str):
            out.append(f"{pod}-{v['name']}")
    return intern(tuple(out)) if out else ()


def _pod(doc: Mapping[str, Any], intern: _Interner) -> Pod:
    meta, name, namespace = _meta(doc, namespaced=True)
    spec = _map(doc, "", "spec")
    status = _map(doc, "", "status")
    phase_raw = _str(status, "status", "phase", "Running" if spec.get("nodeName") else "Pending")
    try:
        phase = Phase(phase_raw)
    except ValueError:
        raise FieldError("status.phase", f"unknown phase {shown(phase_raw)}") from None
    priority = _int32(spec, "spec", "priority", 0)
    node_name = _str(spec, "spec", "nodeName") or None
    return Pod(
        namespace=intern(namespace),
        name=name,
        labels=_labels(meta, "metadata", "labels", intern),
        spec=_pod_spec(spec, intern),
        node_name=intern(node_name) if node_name else None,
        phase=phase,
        terminating=meta.get("deletionTimestamp") is not None,
        ready=_ready(status, default=phase is Phase.RUNNING),
        priority=priority,
        owner=_owner(meta, intern),
        created=_time(meta, "creationTimestamp", intern.memo),
        annotations=_kept_annotations(meta, intern),
        nominated_node=_str(status, "status", "nominatedNodeName") or None,
        uid=_str(meta, "metadata", "uid") or None,
        deletion_cost_managers=_deletion_cost_managers(meta, intern),
        unschedulable=_unschedulable(status) if node_name is None else None,
        claims=_claims(spec, name, intern),
    )


def _node(doc: Mapping[str, Any], intern: _Interner) -> Node:
    meta, name, _ = _meta(doc, namespaced=False)
    spec = _map(doc, "", "spec")
    status = _map(doc, "", "status")
    taints = []
    for i, raw in enumerate(_list(spec, "spec", "taints")):
        where = f"spec.taints[{i}]"
        if not isinstance(raw, dict) or not isinstance(raw.get("key"), str):
            raise FieldError(where, "a taint needs a key")
        taints.append(
            Taint(
                raw["key"],
                _scalar(raw.get("value", ""), f"{where}.value"),
                _effect(raw.get("effect"), f"{where}.effect"),
            )
        )
    alloc_raw = _map(status, "status", "allocatable") or _map(status, "status", "capacity")
    allocatable = _resources(alloc_raw, "status.allocatable") if alloc_raw else None
    max_pods: int | None = None
    if "pods" in alloc_raw:
        try:
            max_pods = units(alloc_raw["pods"])
        except QuantityError as err:
            raise FieldError("status.allocatable.pods", str(err)) from None
    return Node(
        name=name,
        labels=_labels(meta, "metadata", "labels", intern),
        taints=intern(tuple(taints)),
        unschedulable=bool(spec.get("unschedulable", False)),
        allocatable=intern(allocatable) if allocatable is not None else None,
        max_pods=max_pods,
        ready=_ready(status, default=True),
        created=_time(meta, "creationTimestamp"),
        ready_changed=_ready_changed(status),
    )


def _claim(doc: Mapping[str, Any], intern: _Interner) -> Claim:
    _, name, namespace = _meta(doc, namespaced=True)
    spec = _map(doc, "", "spec")
    volume = _str(spec, "spec", "volumeName") or None
    return Claim(intern(namespace), name, volume)


def _scheduling_event(doc: Mapping[str, Any], intern: _Interner) -> SchedulingEvent | None:
    """A FailedScheduling Event about a pod (None for any other Event: not kept)."""
    if doc.get("reason") != "FailedScheduling":
        return None
    _, name, namespace = _meta(doc, namespaced=True)
    about = doc.get("involvedObject") or doc.get("regarding")  # core/v1, events.k8s.io/v1
    if not isinstance(about, dict) or about.get("kind") != "Pod":
        return None
    pod = about.get("name")
    if not isinstance(pod, str):
        raise FieldError("involvedObject.name", "expected the pod's name")
    text = doc.get("message") if "message" in doc else doc.get("note")
    when = None
    for key in ("lastTimestamp", "eventTime"):
        value = doc.get(key)
        if isinstance(value, str) and when is None:
            try:
                when = parse_rfc3339(value)
            except ValueError:
                raise FieldError(key, f"expected an RFC 3339 time, got {shown(value)}") from None
    involved = about.get("namespace")
    ns = involved if isinstance(involved, str) and involved else namespace
    message = printable(text) if isinstance(text, str) else ""
    return SchedulingEvent(intern(ns), name, pod, message, when)


def _volume(doc: Mapping[str, Any], intern: _Interner) -> Volume:
    _, name, _ = _meta(doc, namespaced=False)
    spec = _map(doc, "", "spec")
    affinity = _map(spec, "spec", "nodeAffinity")
    terms = _node_selector_terms(affinity.get("required"), "spec.nodeAffinity.required", intern)
    return Volume(name, terms)


def _budget(doc: Mapping[str, Any], intern: _Interner) -> DisruptionBudget:
    meta, name, namespace = _meta(doc, namespaced=True)
    spec = _map(doc, "", "spec")
    status = _map(doc, "", "status")
    return DisruptionBudget(
        namespace=namespace,
        name=name,
        selector=label_selector(spec.get("selector"), "spec.selector", intern),
        generation=_get(meta, "metadata", "generation", int, 0),
        observed_generation=_get(status, "status", "observedGeneration", int, 0),
        disruptions_allowed=_get(status, "status", "disruptionsAllowed", int, 0),
        current_healthy=_get(status, "status", "currentHealthy", int, 0),
        desired_healthy=_get(status, "status", "desiredHealthy", int, 0),
        expected_pods=_get(status, "status", "expectedPods", int, 0),
    )


def _workload(doc: Mapping[str, Any], intern: _Interner) -> Workload:
    kind = str(doc["kind"])
    meta, name, namespace = _meta(doc, namespaced=True)
    spec = _map(doc, "", "spec")
    status = _map(doc, "", "status")
    raw_selector = spec.get("selector")
    if kind == "ReplicationController" and isinstance(raw_selector, dict):
        raw_selector = {"matchLabels": raw_selector}
    template_raw = _map(spec, "spec", "template")
    template = None
    if template_raw:
        tmeta = _map(template_raw, "spec.template", "metadata")
        try:
            tspec = _pod_spec(_map(template_raw, "spec.template", "spec"), intern)
        except FieldError as err:
            raise FieldError(f"spec.template.{err.path}", err.message) from None
        template = PodTemplate(_labels(tmeta, "spec.template.metadata", "labels", intern), tspec)
    replicas_key = "parallelism" if kind == "Job" else "replicas"
    replicas = spec.get(replicas_key)
    if replicas is not None:
        replicas = _int32(spec, "spec", replicas_key, 0)
    annotations = _map(meta, "metadata", "annotations")
    revision = annotations.get("deployment.kubernetes.io/revision")
    surge: dict[str, Any] = {}
    if kind == "Deployment":
        surge = _surge_fields(meta, spec, status, annotations, intern)
    return Workload(
        kind=kind,
        namespace=namespace,
        name=name,
        selector=label_selector(raw_selector, "spec.selector", intern),
        replicas=replicas if kind != "DaemonSet" else None,
        template=template,
        owner=_owner(meta, intern),
        generation=_get(meta, "metadata", "generation", int, 0),
        observed_generation=_get(status, "status", "observedGeneration", int, 0),
        created=_time(meta, "creationTimestamp"),
        revision=_scalar(revision, "metadata.annotations") if revision is not None else None,
        status_replicas=None if surge else _observed_count(status.get("replicas")),
        **surge,
    )


def _observed_count(value: object) -> int | None:
    """A count a controller reports in its status, if it is one (the status is the
    controller's to write; an unreadable one is no evidence, not an error)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT32_MAX:
        return value
    return None


def _surge_fields(
    meta: Mapping[str, Any],
    spec: Mapping[str, Any],
    status: Mapping[str, Any],
    annotations: Mapping[str, Any],
    intern: _Interner,
) -> dict[str, Any]:
    """What surge moves read on a Deployment (model.Workload's uid ... markers)."""
    labels = _map(meta, "metadata", "labels")
    markers = {
        k: _scalar(v, f"metadata.annotations.{k}")
        for k, v in annotations.items()
        if k in SURGE_MARKERS
    }
    markers.update(
        (k, _scalar(v, f"metadata.labels.{k}")) for k, v in labels.items() if k in SURGE_MARKERS
    )
    uid = meta.get("uid")
    version = meta.get("resourceVersion")
    return {
        "uid": str(uid) if uid is not None else None,
        "resource_version": str(version) if version is not None else None,
        "paused": _get(spec, "spec", "paused", bool, False),
        "rollout": intern(
            ReplicaStatus(
                replicas=_get(status, "status", "replicas", int, 0),
                updated=_get(status, "status", "updatedReplicas", int, 0),
                ready=_get(status, "status", "readyReplicas", int, 0),
                available=_get(status, "status", "availableReplicas", int, 0),
            )
        ),
        "markers": intern(Labels(markers)) if markers else EMPTY_LABELS,
    }


def _autoscaler(doc: Mapping[str, Any], intern: _Interner) -> Autoscaler:
    _, name, namespace = _meta(doc, namespaced=True)
    spec = _map(doc, "", "spec")
    target = _map(spec, "spec", "scaleTargetRef")
    return Autoscaler(
        namespace=namespace,
        name=name,
        target_kind=_str(target, "spec.scaleTargetRef", "kind"),
        target_name=_str(target, "spec.scaleTargetRef", "name"),
    )


def _service(doc: Mapping[str, Any], intern: _Interner) -> Service:
    _, name, namespace = _meta(doc, namespaced=True)
    spec = _map(doc, "", "spec")
    selector = _labels(spec, "spec", "selector", intern) if spec.get("selector") else None
    return Service(namespace, name, selector)


def _namespace(doc: Mapping[str, Any], intern: _Interner) -> Namespace:
    meta, name, _ = _meta(doc, namespaced=False)
    return Namespace(name, _labels(meta, "metadata", "labels", intern))


_PARSERS: dict[str, Callable[[Mapping[str, Any], _Interner], Any]] = {
    "Node": _node,
    "Pod": _pod,
    "PodDisruptionBudget": _budget,
    "Service": _service,
    "Namespace": _namespace,
    "HorizontalPodAutoscaler": _autoscaler,
    "PersistentVolumeClaim": _claim,
    "PersistentVolume": _volume,
    "Event": _scheduling_event,
    **dict.fromkeys(WORKLOAD_KINDS, _workload),
}

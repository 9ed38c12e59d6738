"""The RebalancePolicy spec: parsing, defaults and validation (design.md, "RebalancePolicy").

One schema: a policy is first checked against the CRD's own structural schema
(respread.inputs.policy_schema, generated from crds/rebalancepolicy.yaml) as the API server checks
it (unknown fields refused, nulls dropped and defaulted, types and bounds); then the checks that the
CRD states as CEL rules (durations of at least 10s, cron grammar, exactly one of interval and cron,
no labelSelector in default constraints, ...) are made here. The one known difference: a cron day of
month that none of its months has ("0 0 30 2 *") passes the API server and is refused here (it would
never fire).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from respread.core.limits import INT64_MAX, is_int64, printable, shown
from respread.core.model import LabelSelector, SpreadConstraint, When
from respread.inputs import durations
from respread.inputs.cron import CronError, parse_cron
from respread.inputs.objects import FieldError, label_selector, spread_constraint
from respread.inputs.policy_schema import SCHEMA
from respread.inputs.structural import SchemaError, check

API_VERSION = "respread.io/v1alpha1"
KIND = "RebalancePolicy"


class Mode(StrEnum):
    DRY_RUN = "DryRun"
    ENFORCE = "Enforce"


class PolicyError(ValueError):
    """An invalid policy; ``field`` is the path of the offending field."""

    def __init__(self, field: str, message: str, name: str = "") -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message
        self.name = name

    def __str__(self) -> str:
        who = f"RebalancePolicy {self.name}: " if self.name else ""
        return printable(f"{who}field {self.field}: {self.message}")


@dataclass(frozen=True, slots=True)
class Protections:
    local_storage: bool = True
    persistent_volume_claims: bool = False
    system_critical: bool = True


@dataclass(frozen=True, slots=True)
class EvictionSettings:
    max_per_run: int | None = 10
    max_per_node: int | None = None
    max_per_namespace: int | None = None
    max_per_workload: int | None = 1
    require_fit: bool = True
    min_pod_age: float = 300.0
    cooldown: float = 600.0
    protections: Protections = field(default_factory=Protections)
    grace_period_seconds: int | None = None


@dataclass(frozen=True, slots=True)
class Schedule:
    interval: float | None = 300.0
    cron: str | None = None


@dataclass(frozen=True, slots=True)
class Selection:
    include_namespaces: frozenset[str] = frozenset()
    exclude_namespaces: frozenset[str] = frozenset({"kube-system"})
    namespace_selector: LabelSelector | None = None  # None: every namespace
    pod_selector: LabelSelector | None = None  # None: every pod may be evicted


@dataclass(frozen=True, slots=True)
class ConstraintSettings:
    when_unsatisfiable: frozenset[When] = frozenset({When.DO_NOT_SCHEDULE})
    default_constraints: tuple[SpreadConstraint, ...] = ()
    # kube-scheduler v1.27 to v1.35 count nothing for `labelSelector: {}` (PR #141340 fixes it).
    empty_selector_matches_all: bool = False


@dataclass(frozen=True, slots=True)
class DeletionCostSettings:
    """Keep pod-deletion-cost in the order that keeps a scale-in within maxSkew."""

    enabled: bool = False
    take_over: bool = False  # also write where another field manager owns the annotation
    max_patches_per_scan: int = 50


class SurgeWhen(StrEnum):
    WHEN_EVICTION_BLOCKED = "WhenEvictionBlocked"
    ALWAYS = "Always"


@dataclass(frozen=True, slots=True)
class SurgeSettings:
    """Surge moves (make before break): scale a Deployment up, then back down (surge.py)."""

    enabled: bool = False
    when: SurgeWhen = SurgeWhen.WHEN_EVICTION_BLOCKED
    max_surge: int = 3  # extra replicas per Deployment
    ready_timeout: float = 300.0  # seconds the new pods have to become Ready
    allow_autoscaled: bool = False  # also surge a Deployment an HPA targets


@dataclass(frozen=True, slots=True)
class RemediationSettings:
    """Which remedies respread may use; the default is eviction alone (as before)."""

    evict: bool = True
    deletion_cost: DeletionCostSettings = field(default_factory=DeletionCostSettings)
    surge: SurgeSettings = field(default_factory=SurgeSettings)


class OutageCounting(StrEnum):
    SCHEDULER = "Scheduler"  # as kube-scheduler counts today
    KEP5980 = "KEP5980"  # an outage domain counts toward minDomains, not toward skew


@dataclass(frozen=True, slots=True)
class OutageSettings:
    grace_period: float = 300.0
    counting: OutageCounting = OutageCounting.SCHEDULER
    recovery_share: int = 25  # percent of a workload's pods per recovery step
    recovery_interval: float = 300.0  # between two recovery steps of one workload


@dataclass(frozen=True, slots=True)
class RebalancePolicy:
    name: str = "default"
    generation: int = 0
    mode: Mode = Mode.DRY_RUN
    schedule: Schedule = field(default_factory=Schedule)
    selection: Selection = field(default_factory=Selection)
    constraints: ConstraintSettings = field(default_factory=ConstraintSettings)
    eviction: EvictionSettings = field(default_factory=EvictionSettings)
    report_max_items: int = 20
    remediation: RemediationSettings = field(default_factory=RemediationSettings)
    outages: OutageSettings = field(default_factory=OutageSettings)


DEFAULT_POLICY = RebalancePolicy()


def parse_duration(value: object, path: str) -> float:
    """A Go-style duration ("90s", "5m", "1h30m", "250ms"), as the CRD's pattern accepts it,
    in seconds.

    A bare number is refused, as the API server refuses it: "90" could mean seconds or minutes.
    """
    if not isinstance(value, str) or not value:
        raise PolicyError(path, f"expected a duration such as 30s, 5m or 1h, got {shown(value)}")
    try:
        return durations.seconds(value)
    except ValueError:
        raise PolicyError(
            path, f"expected a duration such as 30s, 5m or 1h, got {shown(value)}"
        ) from None


def at_least_10s(value: object, path: str) -> float:
    """A duration the CRD's rule compares with ``duration('10s')``, read as CEL reads it (Go's
    ParseDuration, to the nanosecond): at least 10s, and at most 2^63-1 nanoseconds."""
    parse_duration(value, path)
    nanos = durations.go_duration(str(value))
    if nanos is None:
        raise PolicyError(path, "out of range (at most 2562047h47m16.854775807s)")
    if nanos < 10 * 10**9:
        raise PolicyError(path, "must be at least 10s")
    return nanos / 1e9


def _section(raw: Mapping[str, Any], key: str, path: str) -> Mapping[str, Any]:
    value = raw.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise PolicyError(f"{path}.{key}" if path else key, "expected a mapping")
    return value


def cron_problem(expression: str) -> str | None:
    """Why a five-field cron expression is invalid (respread.inputs.cron's reading), or None."""
    try:
        parse_cron(expression)
    except CronError as err:
        return str(err)
    return None


def _cap(raw: Mapping[str, Any], key: str, path: str, default: int | None) -> int | None:
    if key not in raw:
        return default
    value = raw[key]
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0 or not is_int64(value):
        raise PolicyError(
            f"{path}.{key}", f"must be a non-negative integer or null, got {shown(value)}"
        )
    return value


def _bool(raw: Mapping[str, Any], key: str, path: str, default: bool) -> bool:
    value = raw.get(key, default)
    if not isinstance(value, bool):
        raise PolicyError(f"{path}.{key}", f"must be true or false, got {shown(value)}")
    return value


def _strings(
    raw: Mapping[str, Any], key: str, path: str, default: frozenset[str]
) -> frozenset[str]:
    if key not in raw or raw[key] is None:
        return default
    value = raw[key]
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise PolicyError(f"{path}.{key}", "must be a list of names")
    return frozenset(value)


def _selector(raw: Mapping[str, Any], key: str, path: str) -> LabelSelector | None:
    if raw.get(key) is None:
        return None
    try:
        return label_selector(raw[key], f"{path}.{key}")
    except FieldError as err:
        raise PolicyError(err.path, err.message) from None


def _plain(value: Any) -> Any:
    """Plain dicts and lists (the operator hands over kopf's mapping views)."""
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def parse_policy(doc: Mapping[str, Any]) -> RebalancePolicy:
    """A RebalancePolicy object (as applied or as read back) into a validated policy."""
    doc = _plain(doc)
    meta = doc.get("metadata") or {}
    raw_name = meta.get("name") if isinstance(meta, dict) else None
    name = shown(raw_name)[1:-1] if isinstance(raw_name, str) else ""
    try:
        if doc.get("apiVersion") != API_VERSION:
            raise PolicyError(
                "apiVersion", f"expected {API_VERSION}, got {shown(doc.get('apiVersion'))}"
            )
        if doc.get("kind") != KIND:
            raise PolicyError("kind", f"expected {KIND}, got {shown(doc.get('kind'))}")
        try:
            checked = check(SCHEMA, doc)
        except SchemaError as err:
            raise PolicyError(err.path, err.message) from None
        return _parse(checked, name, checked["metadata"])
    except PolicyError as err:
        raise PolicyError(err.field, err.message, name) from None


def _parse(doc: Mapping[str, Any], name: str, meta: Mapping[str, Any]) -> RebalancePolicy:
    spec = _section(doc, "spec", "")
    path = "spec"
    generation = meta.get("generation", 0)
    # The sections in the order their errors are reported.
    return RebalancePolicy(
        name=name or "default",
        generation=generation if isinstance(generation, int) else 0,
        mode=_mode(spec, path),
        schedule=_schedule(spec, path),
        selection=_selection(_section(spec, "selector", path), f"{path}.selector"),
        constraints=_constraints(_section(spec, "constraints", path), f"{path}.constraints"),
        eviction=_eviction(_section(spec, "eviction", path), f"{path}.eviction"),
        remediation=_remediation(_section(spec, "remediation", path), f"{path}.remediation"),
        report_max_items=_ranged(
            _section(spec, "report", path), "maxItems", f"{path}.report", 20, 500
        ),
        outages=_outages(_section(spec, "outages", path), f"{path}.outages"),
    )


def _outages(raw: Mapping[str, Any], path: str) -> OutageSettings:
    grace = raw.get("gracePeriod")
    counting = raw.get("counting", OutageCounting.SCHEDULER.value)
    try:
        how = OutageCounting(counting)
    except ValueError:
        raise PolicyError(
            f"{path}.counting", f"must be Scheduler or KEP5980, got {shown(counting)}"
        ) from None
    recovery = _section(raw, "recovery", path)
    interval = recovery.get("interval")
    return OutageSettings(
        grace_period=300.0 if grace is None else parse_duration(grace, f"{path}.gracePeriod"),
        counting=how,
        recovery_share=_ranged(recovery, "maxShare", f"{path}.recovery", 25, 100),
        recovery_interval=(
            300.0 if interval is None else parse_duration(interval, f"{path}.recovery.interval")
        ),
    )


def _ranged(raw: Mapping[str, Any], key: str, path: str, default: int, most: int) -> int:
    """An integer from 1 to ``most``."""
    value = raw.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= most:
        raise PolicyError(f"{path}.{key}", f"must be an integer from 1 to {most}")
    return value


def _mode(spec: Mapping[str, Any], path: str) -> Mode:
    mode_raw = spec.get("mode", Mode.DRY_RUN.value)
    try:
        return Mode(mode_raw)
    except ValueError:
        raise PolicyError(
            f"{path}.mode", f"must be DryRun or Enforce, got {shown(mode_raw)}"
        ) from None


def _schedule(spec: Mapping[str, Any], path: str) -> Schedule:
    sched_raw = _section(spec, "schedule", path)
    if "interval" in sched_raw and "cron" in sched_raw:
        raise PolicyError(f"{path}.schedule", "set exactly one of interval and cron")
    if spec.get("schedule") is not None and "interval" not in sched_raw and "cron" not in sched_raw:
        # An absent schedule defaults to 5m; an empty one is refused, as the CRD refuses it.
        raise PolicyError(f"{path}.schedule", "set exactly one of interval and cron")
    if "cron" in sched_raw:
        cron = sched_raw["cron"]
        if not isinstance(cron, str):
            raise PolicyError(
                f"{path}.schedule.cron", f"expected a cron expression, got {shown(cron)}"
            )
        problem = cron_problem(cron)
        if problem:
            raise PolicyError(f"{path}.schedule.cron", f"{problem} in {shown(cron)}")
        return Schedule(interval=None, cron=cron)
    interval = at_least_10s(sched_raw.get("interval", "5m"), f"{path}.schedule.interval")
    return Schedule(interval=interval)


def _selection(raw: Mapping[str, Any], path: str) -> Selection:
    ns_raw = _section(raw, "namespaces", path)
    return Selection(
        include_namespaces=_strings(ns_raw, "include", f"{path}.namespaces", frozenset()),
        exclude_namespaces=_strings(
            ns_raw, "exclude", f"{path}.namespaces", frozenset({"kube-system"})
        ),
        namespace_selector=_selector(raw, "namespaceSelector", path),
        pod_selector=_selector(raw, "podSelector", path),
    )


def _constraints(raw: Mapping[str, Any], path: str) -> ConstraintSettings:
    when_raw = raw.get("whenUnsatisfiable", [When.DO_NOT_SCHEDULE.value])
    if not isinstance(when_raw, list) or not when_raw:
        raise PolicyError(
            f"{path}.whenUnsatisfiable", "must list DoNotSchedule and/or ScheduleAnyway"
        )
    try:
        whens = frozenset(When(w) for w in when_raw)
    except ValueError:
        raise PolicyError(
            f"{path}.whenUnsatisfiable",
            f"must list DoNotSchedule and/or ScheduleAnyway, got {shown(when_raw)}",
        ) from None
    return ConstraintSettings(
        when_unsatisfiable=whens,
        default_constraints=_default_constraints(raw, f"{path}.defaultConstraints"),
        empty_selector_matches_all=_bool(raw, "emptySelectorMatchesAll", path, False),
    )


def _default_constraints(raw: Mapping[str, Any], path: str) -> tuple[SpreadConstraint, ...]:
    defaults_raw = raw.get("defaultConstraints") or []
    if not isinstance(defaults_raw, list):
        raise PolicyError(path, "must be a list")
    defaults = []
    for i, c in enumerate(defaults_raw):
        where = f"{path}[{i}]"
        if isinstance(c, dict) and c.get("labelSelector") is not None:
            raise PolicyError(
                f"{where}.labelSelector",
                "default constraints take their selector from the pod's workload",
            )
        try:
            defaults.append(spread_constraint(c, where))
        except FieldError as err:
            raise PolicyError(err.path, err.message) from None
    pairs = [(c.topology_key, c.when) for c in defaults]
    if len(set(pairs)) != len(pairs):
        raise PolicyError(path, "each {topologyKey, whenUnsatisfiable} pair may appear once")
    return tuple(defaults)


def _eviction(raw: Mapping[str, Any], path: str) -> EvictionSettings:
    prot_raw = _section(raw, "protections", path)
    grace = raw.get("gracePeriodSeconds")
    if grace is not None and (
        not isinstance(grace, int) or isinstance(grace, bool) or not 0 <= grace <= INT64_MAX
    ):
        raise PolicyError(f"{path}.gracePeriodSeconds", "must be a non-negative integer")
    return EvictionSettings(
        max_per_run=_cap(raw, "maxPerRun", path, 10),
        max_per_node=_cap(raw, "maxPerNode", path, None),
        max_per_namespace=_cap(raw, "maxPerNamespace", path, None),
        max_per_workload=_cap(raw, "maxPerWorkload", path, 1),
        require_fit=_bool(raw, "requireFit", path, True),
        min_pod_age=parse_duration(raw.get("minPodAge", "5m"), f"{path}.minPodAge"),
        cooldown=parse_duration(raw.get("cooldown", "10m"), f"{path}.cooldown"),
        protections=Protections(
            local_storage=_bool(prot_raw, "localStorage", f"{path}.protections", True),
            persistent_volume_claims=_bool(
                prot_raw, "persistentVolumeClaims", f"{path}.protections", False
            ),
            system_critical=_bool(prot_raw, "systemCritical", f"{path}.protections", True),
        ),
        grace_period_seconds=grace,
    )


def _remediation(raw: Mapping[str, Any], path: str) -> RemediationSettings:
    cost_raw = _section(raw, "deletionCost", path)
    cost_path = f"{path}.deletionCost"
    patches = _ranged(cost_raw, "maxPatchesPerScan", cost_path, 50, 1000)
    return RemediationSettings(
        evict=_bool(raw, "evict", path, True),
        deletion_cost=DeletionCostSettings(
            enabled=_bool(cost_raw, "enabled", cost_path, False),
            take_over=_bool(cost_raw, "takeOver", cost_path, False),
            max_patches_per_scan=patches,
        ),
        surge=_surge(_section(raw, "surge", path), f"{path}.surge"),
    )


def _surge(raw: Mapping[str, Any], path: str) -> SurgeSettings:
    max_surge = _ranged(raw, "maxSurge", path, 3, 100)
    when = raw.get("when", SurgeWhen.WHEN_EVICTION_BLOCKED.value)
    if when not in {w.value for w in SurgeWhen}:
        raise PolicyError(f"{path}.when", "must be WhenEvictionBlocked or Always")
    timeout = at_least_10s(raw.get("readyTimeout", "5m"), f"{path}.readyTimeout")
    return SurgeSettings(
        enabled=_bool(raw, "enabled", path, False),
        when=SurgeWhen(when),
        max_surge=max_surge,
        ready_timeout=timeout,
        allow_autoscaled=_bool(raw, "allowAutoscaled", path, False),
    )

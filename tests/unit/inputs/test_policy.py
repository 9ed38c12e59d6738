"""The RebalancePolicy spec: defaults (design.md, "RebalancePolicy"), validation, durations."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from respread.core.model import Op, Requirement, When
from respread.inputs.policy import (
    API_VERSION,
    DEFAULT_POLICY,
    KIND,
    DeletionCostSettings,
    Mode,
    PolicyError,
    RebalancePolicy,
    RemediationSettings,
    parse_duration,
    parse_policy,
)
from tests.support.tables import cases


def policy_doc(spec: dict[str, Any] | None = None, name: str = "default") -> dict[str, Any]:
    doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": name}}
    if spec is not None:
        doc["spec"] = spec
    return doc


def nested(path: str, value: Any) -> dict[str, Any]:
    """``nested("eviction.maxPerRun", 3)`` is ``{"eviction": {"maxPerRun": 3}}``."""
    keys = path.split(".")
    out: dict[str, Any] = {keys[-1]: value}
    for k in reversed(keys[:-1]):
        out = {k: out}
    return out


# --------------------------------------------------------------------------------------------
# Defaults


def assert_design_defaults(p: RebalancePolicy) -> None:
    assert p.mode is Mode.DRY_RUN
    assert p.schedule.interval == 300.0
    assert p.schedule.cron is None
    assert p.selection.include_namespaces == frozenset()
    assert p.selection.exclude_namespaces == frozenset({"kube-system"})
    assert p.selection.namespace_selector is None
    assert p.selection.pod_selector is None
    assert p.constraints.when_unsatisfiable == frozenset({When.DO_NOT_SCHEDULE})
    assert p.constraints.default_constraints == ()
    ev = p.eviction
    assert ev.max_per_run == 10
    assert ev.max_per_node is None
    assert ev.max_per_namespace is None
    assert ev.max_per_workload == 1
    assert ev.require_fit is True
    assert ev.min_pod_age == 300.0
    assert ev.cooldown == 600.0
    assert ev.protections.local_storage is True
    assert ev.protections.persistent_volume_claims is False
    assert ev.protections.system_critical is True
    assert ev.grace_period_seconds is None
    assert p.report_max_items == 20


@pytest.mark.parametrize(
    "spec",
    [None, {}, {"eviction": {}, "report": {}, "selector": {}, "constraints": {}}],
    ids=["no spec", "empty spec", "empty sections"],
)
def test_parsed_defaults_match_design(spec: dict[str, Any] | None) -> None:
    assert_design_defaults(parse_policy(policy_doc(spec)))


def test_default_policy_matches_design() -> None:
    assert_design_defaults(DEFAULT_POLICY)


def test_default_policy_equals_parsed_empty_policy() -> None:
    assert parse_policy(policy_doc({})) == DEFAULT_POLICY


def test_design_example_parses() -> None:
    """The manifest shown in design.md, as written."""
    spec = {
        "mode": "DryRun",
        "schedule": {"interval": "5m"},
        "selector": {
            "namespaces": {"include": [], "exclude": ["kube-system"]},
            "namespaceSelector": {},
            "podSelector": {},
        },
        "constraints": {"whenUnsatisfiable": ["DoNotSchedule"], "defaultConstraints": []},
        "eviction": {
            "maxPerRun": 10,
            "maxPerNode": None,
            "maxPerNamespace": None,
            "maxPerWorkload": 1,
            "requireFit": True,
            "minPodAge": "5m",
            "cooldown": "10m",
            "protections": {
                "localStorage": True,
                "persistentVolumeClaims": False,
                "systemCritical": True,
            },
            "gracePeriodSeconds": None,
        },
        "report": {"maxItems": 20},
    }
    p = parse_policy(policy_doc(spec))
    assert p.mode is Mode.DRY_RUN
    assert p.schedule.interval == 300.0
    assert p.eviction.max_per_run == 10
    assert p.eviction.cooldown == 600.0
    assert p.report_max_items == 20


def test_settings_are_read() -> None:
    spec = {
        "mode": "Enforce",
        "schedule": {"cron": "*/10 * * * *"},
        "selector": {
            "namespaces": {"include": ["shop"], "exclude": []},
            "podSelector": {"matchLabels": {"tier": "web"}},
        },
        "constraints": {
            "whenUnsatisfiable": ["DoNotSchedule", "ScheduleAnyway"],
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                },
                {
                    "maxSkew": 3,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                },
            ],
        },
        "eviction": {
            "maxPerRun": 0,
            "maxPerNode": 2,
            "maxPerNamespace": 3,
            "maxPerWorkload": None,
            "requireFit": False,
            "minPodAge": "1h30m",
            "cooldown": "90s",
            "protections": {"localStorage": False, "persistentVolumeClaims": True},
            "gracePeriodSeconds": 0,
        },
        "report": {"maxItems": 1},
    }
    p = parse_policy(policy_doc(spec, name="strict"))
    assert p.name == "strict"
    assert p.mode is Mode.ENFORCE
    assert (p.schedule.interval, p.schedule.cron) == (None, "*/10 * * * *")
    assert p.selection.include_namespaces == frozenset({"shop"})
    assert p.selection.exclude_namespaces == frozenset()
    assert p.selection.pod_selector is not None
    assert p.selection.pod_selector.requirements == (Requirement("tier", Op.IN, ("web",)),)
    assert p.constraints.when_unsatisfiable == frozenset(When)
    hard, soft = p.constraints.default_constraints
    assert (hard.topology_key, hard.max_skew, hard.when) == (
        "topology.kubernetes.io/zone",
        1,
        When.DO_NOT_SCHEDULE,
    )
    assert hard.selector is None
    assert (soft.max_skew, soft.when) == (3, When.SCHEDULE_ANYWAY)
    ev = p.eviction
    assert (ev.max_per_run, ev.max_per_node, ev.max_per_namespace, ev.max_per_workload) == (
        0,
        2,
        3,
        None,
    )
    assert ev.require_fit is False
    assert ev.min_pod_age == 5400.0
    assert ev.cooldown == 90.0
    assert ev.protections.local_storage is False
    assert ev.protections.persistent_volume_claims is True
    assert ev.protections.system_critical is True
    assert ev.grace_period_seconds == 0
    assert p.report_max_items == 1


def test_empty_selector_matches_all_flag() -> None:
    p = parse_policy(policy_doc({"constraints": {"emptySelectorMatchesAll": True}}))
    assert p.constraints.empty_selector_matches_all is True
    assert DEFAULT_POLICY.constraints.empty_selector_matches_all is False


def test_parse_policy_does_not_modify_its_input() -> None:
    doc = policy_doc({"eviction": {"maxPerRun": 3}})
    before = copy.deepcopy(doc)
    parse_policy(doc)
    assert doc == before


# --------------------------------------------------------------------------------------------
# Validation: every error names the field

DC = "spec.constraints.defaultConstraints"
ZONE_HARD = {
    "maxSkew": 1,
    "topologyKey": "topology.kubernetes.io/zone",
    "whenUnsatisfiable": "DoNotSchedule",
}


def with_default(**fields: Any) -> dict[str, Any]:
    return {**ZONE_HARD, **fields}


INVALID = [
    # (id, spec, field path)
    ("remediation evict not a bool", nested("remediation.evict", "no"), "spec.remediation.evict"),
    (
        "deletionCost enabled not a bool",
        nested("remediation.deletionCost.enabled", 1),
        "spec.remediation.deletionCost.enabled",
    ),
    (
        "deletionCost maxPatchesPerScan 0",
        nested("remediation.deletionCost.maxPatchesPerScan", 0),
        "spec.remediation.deletionCost.maxPatchesPerScan",
    ),
    (
        "deletionCost maxPatchesPerScan above 1000",
        nested("remediation.deletionCost.maxPatchesPerScan", 1001),
        "spec.remediation.deletionCost.maxPatchesPerScan",
    ),
    ("remediation not a mapping", {"remediation": [1]}, "spec.remediation"),
    ("mode lower case", {"mode": "enforce"}, "spec.mode"),
    ("mode unknown", {"mode": "Delete"}, "spec.mode"),
    ("mode empty", {"mode": ""}, "spec.mode"),
    (
        "both interval and cron",
        {"schedule": {"interval": "5m", "cron": "*/5 * * * *"}},
        "spec.schedule",
    ),
    ("cron with three fields", {"schedule": {"cron": "every 5 minutes"}}, "spec.schedule.cron"),
    ("cron with four fields", {"schedule": {"cron": "* * * *"}}, "spec.schedule.cron"),
    ("cron with six fields", {"schedule": {"cron": "0 */5 * * * *"}}, "spec.schedule.cron"),
    ("cron empty", {"schedule": {"cron": ""}}, "spec.schedule.cron"),
    ("cron not a string", {"schedule": {"cron": 5}}, "spec.schedule.cron"),
    ("cron words", {"schedule": {"cron": "a b c d e"}}, "spec.schedule.cron"),
    ("cron minute out of range", {"schedule": {"cron": "61 * * * *"}}, "spec.schedule.cron"),
    ("cron hour out of range", {"schedule": {"cron": "0 24 * * *"}}, "spec.schedule.cron"),
    ("interval unknown unit", {"schedule": {"interval": "5x"}}, "spec.schedule.interval"),
    ("interval empty", {"schedule": {"interval": ""}}, "spec.schedule.interval"),
    ("interval negative", {"schedule": {"interval": -1}}, "spec.schedule.interval"),
    ("interval negative string", {"schedule": {"interval": "-5m"}}, "spec.schedule.interval"),
    ("interval no unit", {"schedule": {"interval": "5"}}, "spec.schedule.interval"),
    ("interval bool", {"schedule": {"interval": True}}, "spec.schedule.interval"),
    ("interval list", {"schedule": {"interval": ["5m"]}}, "spec.schedule.interval"),
    ("schedule not a mapping", {"schedule": "5m"}, "spec.schedule"),
    ("schedule empty", {"schedule": {}}, "spec.schedule"),
    ("interval a bare number", {"schedule": {"interval": 30}}, "spec.schedule.interval"),
    ("interval non-ASCII digits", {"schedule": {"interval": "\uff15m"}}, "spec.schedule.interval"),
    ("cooldown a bare number", nested("eviction.cooldown", 90), "spec.eviction.cooldown"),
    ("minPodAge a bare zero", nested("eviction.minPodAge", 0), "spec.eviction.minPodAge"),
    ("cron weekday 8", {"schedule": {"cron": "* * * * 8"}}, "spec.schedule.cron"),
    ("cron backwards range", {"schedule": {"cron": "5-3 * * * *"}}, "spec.schedule.cron"),
    ("cron backwards weekdays", {"schedule": {"cron": "* * * * fri-mon"}}, "spec.schedule.cron"),
    ("cron empty step", {"schedule": {"cron": "5/ * * * *"}}, "spec.schedule.cron"),
    ("cron step on a value", {"schedule": {"cron": "5/10 * * * *"}}, "spec.schedule.cron"),
    ("cron step zero", {"schedule": {"cron": "*/0 * * * *"}}, "spec.schedule.cron"),
    ("cron February 30", {"schedule": {"cron": "0 0 30 2 *"}}, "spec.schedule.cron"),
    ("minPodAge unknown unit", nested("eviction.minPodAge", "5x"), "spec.eviction.minPodAge"),
    ("minPodAge empty", nested("eviction.minPodAge", ""), "spec.eviction.minPodAge"),
    ("minPodAge negative", nested("eviction.minPodAge", -1), "spec.eviction.minPodAge"),
    ("cooldown unknown unit", nested("eviction.cooldown", "5x"), "spec.eviction.cooldown"),
    ("cooldown empty", nested("eviction.cooldown", ""), "spec.eviction.cooldown"),
    ("cooldown negative", nested("eviction.cooldown", -1), "spec.eviction.cooldown"),
    ("cooldown trailing garbage", nested("eviction.cooldown", "10m!"), "spec.eviction.cooldown"),
    ("maxPerRun negative", nested("eviction.maxPerRun", -1), "spec.eviction.maxPerRun"),
    ("maxPerRun a string", nested("eviction.maxPerRun", "10"), "spec.eviction.maxPerRun"),
    ("maxPerRun a bool", nested("eviction.maxPerRun", True), "spec.eviction.maxPerRun"),
    ("maxPerRun a float", nested("eviction.maxPerRun", 2.5), "spec.eviction.maxPerRun"),
    ("maxPerNode negative", nested("eviction.maxPerNode", -1), "spec.eviction.maxPerNode"),
    (
        "maxPerNamespace negative",
        nested("eviction.maxPerNamespace", -2),
        "spec.eviction.maxPerNamespace",
    ),
    (
        "maxPerWorkload negative",
        nested("eviction.maxPerWorkload", -1),
        "spec.eviction.maxPerWorkload",
    ),
    ("requireFit a string", nested("eviction.requireFit", "true"), "spec.eviction.requireFit"),
    (
        "gracePeriodSeconds negative",
        nested("eviction.gracePeriodSeconds", -1),
        "spec.eviction.gracePeriodSeconds",
    ),
    (
        "protections.localStorage a string",
        nested("eviction.protections.localStorage", "yes"),
        "spec.eviction.protections.localStorage",
    ),
    (
        "protections.systemCritical a number",
        nested("eviction.protections.systemCritical", 1),
        "spec.eviction.protections.systemCritical",
    ),
    ("eviction not a mapping", {"eviction": 10}, "spec.eviction"),
    (
        "whenUnsatisfiable unknown",
        nested("constraints.whenUnsatisfiable", ["Never"]),
        "spec.constraints.whenUnsatisfiable[0]",
    ),
    (
        "whenUnsatisfiable empty list",
        nested("constraints.whenUnsatisfiable", []),
        "spec.constraints.whenUnsatisfiable",
    ),
    (
        "whenUnsatisfiable a string, not a list",
        nested("constraints.whenUnsatisfiable", "DoNotSchedule"),
        "spec.constraints.whenUnsatisfiable",
    ),
    (
        "defaultConstraints with labelSelector",
        nested("constraints.defaultConstraints", [with_default(labelSelector={})]),
        f"{DC}[0].labelSelector",
    ),
    (
        "defaultConstraints second with labelSelector",
        nested(
            "constraints.defaultConstraints",
            [
                ZONE_HARD,
                with_default(
                    topologyKey="kubernetes.io/hostname",
                    labelSelector={"matchLabels": {"app": "web"}},
                ),
            ],
        ),
        f"{DC}[1].labelSelector",
    ),
    (
        "defaultConstraints duplicate key and whenUnsatisfiable",
        nested("constraints.defaultConstraints", [ZONE_HARD, with_default(maxSkew=2)]),
        f"{DC}[1]",
    ),
    (
        "defaultConstraints maxSkew 0",
        nested("constraints.defaultConstraints", [with_default(maxSkew=0)]),
        f"{DC}[0].maxSkew",
    ),
    (
        "defaultConstraints empty topologyKey",
        nested("constraints.defaultConstraints", [with_default(topologyKey="")]),
        f"{DC}[0].topologyKey",
    ),
    (
        "defaultConstraints whenUnsatisfiable missing",
        nested(
            "constraints.defaultConstraints",
            [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone"}],
        ),
        f"{DC}[0].whenUnsatisfiable",
    ),
    (
        "defaultConstraints not a list",
        nested("constraints.defaultConstraints", {"maxSkew": 1}),
        DC,
    ),
    ("maxItems 0", nested("report.maxItems", 0), "spec.report.maxItems"),
    ("maxItems negative", nested("report.maxItems", -5), "spec.report.maxItems"),
    ("maxItems a string", nested("report.maxItems", "20"), "spec.report.maxItems"),
    ("maxItems a bool", nested("report.maxItems", True), "spec.report.maxItems"),
    # etcd refuses objects over ~1.5 MiB: a million status entries can never fit
    ("maxItems a million", nested("report.maxItems", 1_000_000), "spec.report.maxItems"),
    (
        "namespaces.exclude a string",
        nested("selector.namespaces.exclude", "kube-system"),
        "spec.selector.namespaces.exclude",
    ),
    (
        "namespaces.include with an empty name",
        nested("selector.namespaces.include", [""]),
        "spec.selector.namespaces.include[0]",
    ),
    (
        "podSelector bad operator",
        nested("selector.podSelector", {"matchExpressions": [{"key": "a", "operator": "Is"}]}),
        "spec.selector.podSelector.matchExpressions[0].operator",
    ),
    (
        "namespaceSelector In without values",
        nested(
            "selector.namespaceSelector", {"matchExpressions": [{"key": "a", "operator": "In"}]}
        ),
        "spec.selector.namespaceSelector.matchExpressions[0].values",
    ),
]


@cases(("spec", "field"), INVALID)
def test_invalid_policy_names_the_field(spec: dict[str, Any], field: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(policy_doc(spec, name="mine"))
    err = info.value
    assert err.field == field
    assert err.message
    assert field in str(err)
    assert "mine" in str(err)


WRONG_OBJECT = [
    (
        "wrong kind",
        {"apiVersion": API_VERSION, "kind": "ConfigMap", "metadata": {"name": "x"}},
        "kind",
    ),
    ("missing kind", {"apiVersion": API_VERSION, "metadata": {"name": "x"}}, "kind"),
    (
        "wrong apiVersion",
        {"apiVersion": "respread.io/v1", "kind": KIND, "metadata": {"name": "x"}},
        "apiVersion",
    ),
    ("spec not a mapping", {"apiVersion": API_VERSION, "kind": KIND, "spec": [1, 2]}, "spec"),
]


@cases(("doc", "field"), WRONG_OBJECT)
def test_wrong_object(doc: dict[str, Any], field: str) -> None:
    with pytest.raises(PolicyError) as info:
        parse_policy(doc)
    assert info.value.field == field
    assert field in str(info.value)


def test_policy_error_is_a_value_error() -> None:
    assert issubclass(PolicyError, ValueError)


VALID_EDGES = [
    # (id, spec) that must be accepted
    ("maxPerRun 0 disables evictions", nested("eviction.maxPerRun", 0)),
    ("maxPerRun null is uncapped", nested("eviction.maxPerRun", None)),
    ("maxPerNode set", nested("eviction.maxPerNode", 1)),
    ("interval 1h", nested("schedule.interval", "1h")),
    ("cron every ten minutes", nested("schedule.cron", "*/10 * * * *")),
    ("cron with ranges and lists", nested("schedule.cron", "0,30 8-18 * * 1-5")),
    ("minPodAge zero", nested("eviction.minPodAge", "0s")),
    ("cron weekday 7 is Sunday", nested("schedule.cron", "0 3 * * 7")),
    ("cron named days and months", nested("schedule.cron", "0 3 * jan-mar MON-fri")),
    ("cron step over a range", nested("schedule.cron", "0-30/10 * * * *")),
    ("cron step larger than the range", nested("schedule.cron", "*/90 * * * *")),
    ("schedule null takes the default", {"schedule": None}),
    ("cooldown 0s", nested("eviction.cooldown", "0s")),
    ("maxItems 1", nested("report.maxItems", 1)),
    ("ScheduleAnyway only", nested("constraints.whenUnsatisfiable", ["ScheduleAnyway"])),
    (
        "hard and soft defaults on one key",
        nested(
            "constraints.defaultConstraints",
            [ZONE_HARD, with_default(whenUnsatisfiable="ScheduleAnyway")],
        ),
    ),
]


@cases("spec", VALID_EDGES)
def test_valid_edges_are_accepted(spec: dict[str, Any]) -> None:
    assert isinstance(parse_policy(policy_doc(spec)), RebalancePolicy)


# --------------------------------------------------------------------------------------------
# Durations

DURATIONS = [
    ("90s", 90.0),
    ("5m", 300.0),
    ("10m", 600.0),
    ("1h", 3600.0),
    ("1h30m", 5400.0),
    ("2h45m30s", 9930.0),
    ("1.5h", 5400.0),
    ("0.5m", 30.0),
    ("250ms", 0.25),
    ("1m500ms", 60.5),
    ("0s", 0.0),
]


@pytest.mark.parametrize(("value", "seconds"), DURATIONS, ids=[repr(d[0]) for d in DURATIONS])
def test_parse_duration(value: object, seconds: float) -> None:
    assert parse_duration(value, "spec.x") == pytest.approx(seconds)


BAD_DURATIONS = [
    ("unknown unit", "5x"),
    ("empty", ""),
    ("negative number", -1),
    ("negative string", "-5m"),
    ("no unit", "5"),
    ("unit only", "m"),
    ("space inside", "1h 30m"),
    ("trailing garbage", "5m3"),
    ("leading garbage", "x5m"),
    ("days are not a unit", "1d"),
    ("none", None),
    ("bool", True),
    ("list", ["5m"]),
]


@cases("value", BAD_DURATIONS)
def test_parse_duration_rejects(value: object) -> None:
    with pytest.raises(PolicyError) as info:
        parse_duration(value, "spec.eviction.cooldown")
    assert info.value.field == "spec.eviction.cooldown"
    assert "spec.eviction.cooldown" in str(info.value)


def test_remediation_defaults_to_eviction_alone() -> None:
    p = parse_policy(policy_doc({}))
    assert p.remediation == RemediationSettings()
    assert p.remediation.evict is True
    assert p.remediation.deletion_cost == DeletionCostSettings(
        enabled=False, take_over=False, max_patches_per_scan=50
    )


def test_remediation_is_read() -> None:
    p = parse_policy(
        policy_doc(
            {
                "remediation": {
                    "evict": False,
                    "deletionCost": {"enabled": True, "takeOver": True, "maxPatchesPerScan": 7},
                }
            }
        )
    )
    assert p.remediation == RemediationSettings(
        evict=False,
        deletion_cost=DeletionCostSettings(enabled=True, take_over=True, max_patches_per_scan=7),
    )

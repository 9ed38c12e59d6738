"""Borderline RebalancePolicies, each with the API server's verdict on it.

``API_ACCEPTS[id]`` is what kube-apiserver answers to ``create`` (strict field validation,
dry run) with crds/ installed; tests/cluster/test_policy_agreement.py asks the real API server
and requires these verdicts, and tests/unit/inputs/test_policy_schema.py requires the command line's
parser to give the same verdict, except for the cases in EXCEPTIONS (each with its reason).
"""

from __future__ import annotations

from typing import Any

API_VERSION = "respread.io/v1alpha1"


def policy(spec: Any = None, name: str = "corpus", **top: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": "RebalancePolicy",
        "metadata": {"name": name},
    }
    if spec is not None:
        doc["spec"] = spec
    doc.update(top)
    return {k: v for k, v in doc.items() if v is not ...}


def ev(**fields: Any) -> dict[str, Any]:
    return {"eviction": fields}


def sched(**fields: Any) -> dict[str, Any]:
    return {"schedule": fields}


def sel(**fields: Any) -> dict[str, Any]:
    return {"selector": fields}


def con(**fields: Any) -> dict[str, Any]:
    return {"constraints": fields}


DC = {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}

# (id, the policy, the API server accepts it)
CASES: list[tuple[str, dict[str, Any], bool]] = [
    # the object itself
    ("empty spec", policy({}), True),
    ("no spec", policy(), True),
    ("null spec", {**policy(), "spec": None}, True),
    ("missing apiVersion", policy({}, apiVersion=...), False),
    (
        "missing metadata.name",
        {"apiVersion": API_VERSION, "kind": "RebalancePolicy", "metadata": {}},
        False,
    ),
    ("missing metadata", {"apiVersion": API_VERSION, "kind": "RebalancePolicy"}, False),
    (
        "generateName only",
        {
            "apiVersion": API_VERSION,
            "kind": "RebalancePolicy",
            "metadata": {"generateName": "corpus-"},
        },
        True,
    ),
    ("upper-case name", policy({}, name="Corpus"), False),
    ("name of 254 characters", policy({}, name="a" * 254), False),
    ("name with a dot", policy({}, name="a.b"), True),
    ("unknown top-level field", policy({}, extra=1), False),
    (
        "unknown metadata field",
        {
            "apiVersion": API_VERSION,
            "kind": "RebalancePolicy",
            "metadata": {"name": "corpus", "nmae": "x"},
        },
        False,
    ),
    (
        "label value not a string",
        {
            "apiVersion": API_VERSION,
            "kind": "RebalancePolicy",
            "metadata": {"name": "corpus", "labels": {"a": 1}},
        },
        False,
    ),
    ("spec not an object", policy("DryRun"), False),
    # unknown fields, strict
    ("unknown spec field", policy({"mdoe": "DryRun"}), False),
    ("unknown eviction field", policy(ev(maxPerRunn=3)), False),
    ("unknown protections field", policy(ev(protections={"local": True})), False),
    ("unknown schedule field", policy(sched(interval="5m", every="5m")), False),
    ("unknown selector field", policy(sel(pods={})), False),
    (
        "unknown matchExpressions field",
        policy(
            sel(
                podSelector={"matchExpressions": [{"key": "a", "operator": "Exists", "value": "x"}]}
            )
        ),
        False,
    ),
    (
        "labelSelector in defaultConstraints (preserved, refused by rule)",
        policy(con(defaultConstraints=[{**DC, "labelSelector": {"foo": "bar"}}])),
        False,
    ),
    # nulls: dropped and defaulted unless nullable
    ("null mode", policy({"mode": None}), True),
    ("null requireFit", policy(ev(requireFit=None)), True),
    ("null minPodAge", policy(ev(minPodAge=None)), True),
    ("null cooldown", policy(ev(cooldown=None)), True),
    ("null whenUnsatisfiable", policy(con(whenUnsatisfiable=None)), True),
    ("null emptySelectorMatchesAll", policy(con(emptySelectorMatchesAll=None)), True),
    ("null schedule", policy({"schedule": None}), True),
    ("null eviction", policy({"eviction": None}), True),
    ("null protections", policy(ev(protections=None)), True),
    ("null maxPerRun (nullable: no cap)", policy(ev(maxPerRun=None)), True),
    ("null gracePeriodSeconds", policy(ev(gracePeriodSeconds=None)), True),
    ("null report.maxItems", policy({"report": {"maxItems": None}}), True),
    ("null in include", policy(sel(namespaces={"include": [None]})), False),
    ("null in whenUnsatisfiable", policy(con(whenUnsatisfiable=[None])), False),
    ("null interval next to cron", policy(sched(interval=None, cron="* * * * *")), True),
    # integers
    ("maxPerRun 5.0", policy(ev(maxPerRun=5.0)), True),
    ("maxPerRun 5.5", policy(ev(maxPerRun=5.5)), False),
    ("maxPerRun 2^63-1", policy(ev(maxPerRun=2**63 - 1)), True),
    ("maxPerRun 2^63", policy(ev(maxPerRun=2**63)), False),
    ("maxPerRun -1", policy(ev(maxPerRun=-1)), False),
    ("maxPerRun true", policy(ev(maxPerRun=True)), False),
    ("maxPerRun '5'", policy(ev(maxPerRun="5")), False),
    ("gracePeriodSeconds 2^63", policy(ev(gracePeriodSeconds=2**63)), False),
    ("maxSkew 2^31 (int32)", policy(con(defaultConstraints=[{**DC, "maxSkew": 2**31}])), False),
    ("maxSkew 2^31-1", policy(con(defaultConstraints=[{**DC, "maxSkew": 2**31 - 1}])), True),
    ("maxSkew 0", policy(con(defaultConstraints=[{**DC, "maxSkew": 0}])), False),
    ("minDomains 1.0", policy(con(defaultConstraints=[{**DC, "minDomains": 1.0}])), True),
    ("report.maxItems 500", policy({"report": {"maxItems": 500}}), True),
    ("report.maxItems 501", policy({"report": {"maxItems": 501}}), False),
    ("report.maxItems 0", policy({"report": {"maxItems": 0}}), False),
    # strings, durations, cron
    ("mode lower-case", policy({"mode": "dryrun"}), False),
    ("mode 5", policy({"mode": 5}), False),
    ("interval 10s", policy(sched(interval="10s")), True),
    ("interval 9s", policy(sched(interval="9s")), False),
    ("interval 3000000h", policy(sched(interval="3000000h")), False),
    ("interval 2000000h", policy(sched(interval="2000000h")), True),
    ("interval of 33 characters", policy(sched(interval="1h" + "0s" * 15 + "1")), False),
    ("interval 1h30m", policy(sched(interval="1h30m")), True),
    ("interval bare number", policy(sched(interval="90")), False),
    ("interval with a space", policy(sched(interval="5 m")), False),
    ("interval and cron", policy(sched(interval="5m", cron="* * * * *")), False),
    ("empty schedule", policy({"schedule": {}}), False),
    ("minPodAge 0s", policy(ev(minPodAge="0s")), True),
    ("minPodAge 3000000h (no rule reads it)", policy(ev(minPodAge="3000000h")), True),
    ("cooldown 1.5h", policy(ev(cooldown="1.5h")), True),
    ("cooldown 1d", policy(ev(cooldown="1d")), False),
    ("cron every 10 minutes", policy(sched(cron="*/10 * * * *")), True),
    ("cron names", policy(sched(cron="0 9 * jan-mar mon-fri")), True),
    ("cron weekday 7", policy(sched(cron="0 0 * * 7")), True),
    ("cron six fields", policy(sched(cron="0 0 * * * *")), False),
    ("cron backwards range", policy(sched(cron="0 5-3 * * *")), False),
    ("cron step without range", policy(sched(cron="5/10 * * * *")), False),
    ("cron superscript digit", policy(sched(cron="\u00b2 * * * *")), False),
    ("cron minute 60", policy(sched(cron="60 * * * *")), False),
    ("cron of 129 characters", policy(sched(cron="0 0 * * *" + " " * 120)), False),
    ("cron with tabs", policy(sched(cron="0\t0\t*\t*\t*")), True),
    ("cron with a no-break space", policy(sched(cron="0\u00a00 * * *")), False),
    ("cron February 30", policy(sched(cron="0 0 30 2 *")), True),
    # selectors
    ("include a 63-character namespace", policy(sel(namespaces={"include": ["a" * 63]})), True),
    ("include a 64-character namespace", policy(sel(namespaces={"include": ["a" * 64]})), False),
    ("include an empty name", policy(sel(namespaces={"include": [""]})), False),
    ("exclude not a list", policy(sel(namespaces={"exclude": "kube-system"})), False),
    ("matchLabels value 1", policy(sel(podSelector={"matchLabels": {"a": 1}})), False),
    (
        "matchLabels value of 64 characters",
        policy(sel(podSelector={"matchLabels": {"a": "b" * 64}})),
        False,
    ),
    ("matchLabels value true", policy(sel(namespaceSelector={"matchLabels": {"a": True}})), False),
    (
        "In without values",
        policy(sel(podSelector={"matchExpressions": [{"key": "a", "operator": "In"}]})),
        False,
    ),
    (
        "Exists with values",
        policy(
            sel(
                podSelector={
                    "matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]
                }
            )
        ),
        False,
    ),
    (
        "Gt in a label selector",
        policy(
            sel(podSelector={"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})
        ),
        False,
    ),
    (
        "empty key",
        policy(sel(podSelector={"matchExpressions": [{"key": "", "operator": "Exists"}]})),
        False,
    ),
    (
        "33 matchExpressions",
        policy(
            sel(
                podSelector={
                    "matchExpressions": [{"key": f"k{i}", "operator": "Exists"} for i in range(33)]
                }
            )
        ),
        False,
    ),
    ("empty podSelector", policy(sel(podSelector={})), True),
    # constraints
    ("whenUnsatisfiable empty", policy(con(whenUnsatisfiable=[])), False),
    ("whenUnsatisfiable twice", policy(con(whenUnsatisfiable=["DoNotSchedule"] * 2)), True),
    ("whenUnsatisfiable a string", policy(con(whenUnsatisfiable="DoNotSchedule")), False),
    ("defaultConstraints duplicate key", policy(con(defaultConstraints=[DC, DC])), False),
    (
        "defaultConstraints missing topologyKey",
        policy(con(defaultConstraints=[{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule"}])),
        False,
    ),
    (
        "minDomains with ScheduleAnyway",
        policy(
            con(defaultConstraints=[{**DC, "whenUnsatisfiable": "ScheduleAnyway", "minDomains": 2}])
        ),
        False,
    ),
    (
        "matchLabelKeys in defaultConstraints",
        policy(con(defaultConstraints=[{**DC, "matchLabelKeys": ["app"]}])),
        False,
    ),
    (
        "empty matchLabelKeys in defaultConstraints",
        policy(con(defaultConstraints=[{**DC, "matchLabelKeys": []}])),
        True,
    ),
    (
        "null labelSelector in defaultConstraints",
        policy(con(defaultConstraints=[{**DC, "labelSelector": None}])),
        True,
    ),
    (
        "topologyKey of 318 characters",
        policy(con(defaultConstraints=[{**DC, "topologyKey": "k" * 318}])),
        False,
    ),
    (
        "nodeTaintsPolicy honor",
        policy(con(defaultConstraints=[{**DC, "nodeTaintsPolicy": "honor"}])),
        False,
    ),
    ("emptySelectorMatchesAll 'true'", policy(con(emptySelectorMatchesAll="true")), False),
    # booleans
    ("requireFit 1", policy(ev(requireFit=1)), False),
    ("protections.localStorage false", policy(ev(protections={"localStorage": False})), True),
    # status (read back from the server)
    ("status with an unknown field", policy({}, status={"bogus": 1}), False),
    ("status with a summary", policy({}, status={"summary": {"nodes": 3}}), True),
]

API_ACCEPTS = {case_id: accepts for case_id, _, accepts in CASES}

# Where the command line's verdict differs from the API server's, on purpose.
EXCEPTIONS = {
    "cron February 30": (
        "the API server's CEL rule checks the grammar only; respread refuses a day of month "
        "that none of the chosen months has, which would never fire"
    ),
}

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
    # names in ASCII letters only: RE2's (?i:sep) would take U+017F (ſ) for s
    ("cron month named with U+017F", policy(sched(cron="0 0 * \u017fep *")), False),
    ("cron weekday named with U+017F", policy(sched(cron="0 0 * * \u017fun")), False),
    ("cron weekday range to U+017F", policy(sched(cron="0 0 * * mon-\u017fat")), False),
    ("cron names in capitals", policy(sched(cron="0 0 * SEP SUN")), True),
    ("cron name with a Kelvin sign", policy(sched(cron="0 0 * \u212aan *")), False),
    # numbers: any leading zeros (cron reads them); a step of at most 18 digits after them
    ("cron value zero-padded to 19 digits", policy(sched(cron="0" * 18 + "5 * * * *")), True),
    ("cron value zero-padded to 60 digits", policy(sched(cron="0" * 59 + "5 * * * *")), True),
    ("cron range zero-padded", policy(sched(cron="0" * 18 + "5-" + "0" * 17 + "10 * * * *")), True),
    ("cron range zero-padded backwards", policy(sched(cron="0" * 17 + "10-5 * * * *")), False),
    ("cron step of 18 digits", policy(sched(cron="*/" + "9" * 18 + " * * * *")), True),
    ("cron step of 19 digits", policy(sched(cron="*/1234567890123456789 * * * *")), False),
    ("cron step zero-padded to 30 digits", policy(sched(cron="*/" + "0" * 29 + "5 * * * *")), True),
    ("cron step of 0 zero-padded", policy(sched(cron="*/" + "0" * 20 + " * * * *")), False),
    # durations as CEL's duration() (Go's ParseDuration) reads them, to the nanosecond
    (
        "interval 9999.9999999999999ms (9.999999999s)",
        policy(sched(interval="9999.9999999999999ms")),
        False,
    ),
    (
        "interval 0.1666666666666666666m (10s to Go)",
        policy(sched(interval="0.1666666666666666666m")),
        True,
    ),
    ("interval 10000ms", policy(sched(interval="10000ms")), True),
    ("interval 9.9999999999s", policy(sched(interval="9.9999999999s")), False),
    ("interval 2^63 ns", policy(sched(interval="2562047h47m16.854775808s")), False),
    ("interval 2^63-1 ns", policy(sched(interval="2562047h47m16.854775807s")), True),
    ("interval 2562047h48m", policy(sched(interval="2562047h48m")), False),
    (
        "readyTimeout 9999.9999999999999ms",
        policy({"remediation": {"surge": {"readyTimeout": "9999.9999999999999ms"}}}),
        False,
    ),
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

HEAD = f"apiVersion: {API_VERSION}\nkind: RebalancePolicy\nmetadata:\n  name: corpus\n"


def yaml_policy(spec: str) -> str:
    return HEAD + "spec:\n" + "".join(f"  {line}\n" for line in spec.splitlines())


# Policies as YAML text: what a value means is kubectl's reading of the text (go-yaml v2, then
# JSON). tests/cluster/test_policy_agreement.py sends each through `kubectl create
# --dry-run=server` (kubectl converting the YAML, as it does for a user), and respread reads
# the same text; a text kubectl cannot convert to JSON at all (.inf) counts as refused.
YAML_CASES: list[tuple[str, str, bool]] = [
    (
        "YAML maxPerRun: 1:20 (a string to kubectl)",
        yaml_policy("eviction: {maxPerRun: 1:20}"),
        False,
    ),
    ("YAML maxPerRun: 0x1F", yaml_policy("eviction: {maxPerRun: 0x1F}"), True),
    ("YAML maxPerRun: 017 (octal 15)", yaml_policy("eviction: {maxPerRun: 017}"), True),
    ("YAML maxPerRun: 0o17", yaml_policy("eviction: {maxPerRun: 0o17}"), True),
    ("YAML maxPerRun: 08 (a float, 8)", yaml_policy("eviction: {maxPerRun: 08}"), True),
    ("YAML maxPerRun: 1e3", yaml_policy("eviction: {maxPerRun: 1e3}"), True),
    ("YAML maxPerRun: 1_000", yaml_policy("eviction: {maxPerRun: 1_000}"), True),
    ("YAML maxPerRun: 1.5", yaml_policy("eviction: {maxPerRun: 1.5}"), False),
    ("YAML maxPerRun: =", yaml_policy("eviction: {maxPerRun: =}"), False),
    ("YAML maxPerRun: 0x_", yaml_policy("eviction: {maxPerRun: 0x_}"), False),
    ("YAML maxPerRun: .inf", yaml_policy("eviction: {maxPerRun: .inf}"), False),
    ("YAML maxPerRun: ~", yaml_policy("eviction: {maxPerRun: ~}"), True),
    ('YAML maxPerRun: !!int ""', yaml_policy('eviction: {maxPerRun: !!int ""}'), False),
    ("YAML maxPerRun: !!int '12'", yaml_policy("eviction: {maxPerRun: !!int '12'}"), True),
    ("YAML maxPerRun: !!float 12", yaml_policy("eviction: {maxPerRun: !!float 12}"), True),
    ("YAML requireFit: yes", yaml_policy("eviction: {requireFit: yes}"), True),
    ("YAML requireFit: n", yaml_policy("eviction: {requireFit: n}"), True),
    ("YAML requireFit: !!bool maybe", yaml_policy("eviction: {requireFit: !!bool maybe}"), False),
    ("YAML mode: on (a boolean)", yaml_policy("mode: on"), False),
    ("YAML mode: !!str DryRun", yaml_policy("mode: !!str DryRun"), True),
    ("YAML cron: !foo tagged", yaml_policy("schedule: {cron: !foo '*/5 * * * *'}"), True),
    ("YAML matchLabels key 1", yaml_policy("selector: {podSelector: {matchLabels: {1: a}}}"), True),
    ("YAML matchLabels key y", yaml_policy("selector: {podSelector: {matchLabels: {y: a}}}"), True),
    (
        "YAML matchLabels value y",
        yaml_policy("selector: {podSelector: {matchLabels: {a: y}}}"),
        False,
    ),
    ("YAML interval: 1:20", yaml_policy("schedule: {interval: 1:20}"), False),
    (
        "YAML a byte order mark after ---",
        "# joined\n---\n\ufeff" + yaml_policy("mode: Enforce"),
        True,
    ),
    (
        "YAML a byte order mark after a first ---",
        "---\n\ufeff" + yaml_policy("mode: Enforce"),
        False,
    ),
    ("YAML merge key", yaml_policy("eviction: {<<: {maxPerRun: 3}, requireFit: false}"), True),
    ("YAML merge of a scalar", yaml_policy("eviction: {<<: 3}"), False),
]

YAML_API_ACCEPTS = {case_id: accepts for case_id, _, accepts in YAML_CASES}

# Where the command line reads YAML text otherwise than kubectl, on purpose.
YAML_EXCEPTIONS = {
    "YAML a byte order mark after a first ---": (
        "kubectl drops a byte order mark that starts a document after ---, except in the first "
        "one, where it reads it into the first key (\\ufeffapiVersion) and refuses the object; "
        "respread drops it there too"
    ),
}

# Where the command line's verdict differs from the API server's, on purpose.
EXCEPTIONS = {
    "cron February 30": (
        "the API server's CEL rule checks the grammar only; respread refuses a day of month "
        "that none of the chosen months has, which would never fire"
    ),
}

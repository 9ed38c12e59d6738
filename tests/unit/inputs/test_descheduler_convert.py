"""`respread convert --from-descheduler`: the descheduler's documented policies for the spread
plugin (descheduler_policies/, copied from its README, examples and Helm chart) become the
RebalancePolicy that asks for the same, with a comment wherever a setting has no equivalent or
reads differently; bad input is refused in one line naming the field."""

from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from respread.cli import main
from respread.core.limits import DEFAULT_LIMITS, printable_lines
from respread.inputs.annotated_yaml import render
from respread.inputs.descheduler import ConversionError, convert, read_policy_text
from respread.inputs.documents import documents_from_text
from respread.inputs.policy import RebalancePolicy, parse_policy
from tests.oracles.descheduler import policy_for

HERE = Path(__file__).resolve().parent
POLICIES = HERE / "descheduler_policies"
CONFORMANCE = HERE.parents[1] / "scenarios" / "conformance" / "descheduler"
SPREAD = "RemovePodsViolatingTopologySpreadConstraint"


def converted(name: str) -> tuple[dict[str, Any], str]:
    """The one RebalancePolicy a documented policy converts to, and its notes joined."""
    path = POLICIES / name
    [conversion] = convert(read_policy_text(path.read_text(), name, DEFAULT_LIMITS))
    return conversion.manifest, "\n".join(n.text for n in conversion.notes)


def field(manifest: dict[str, Any], dotted: str) -> Any:
    value: Any = manifest
    for key in dotted.split("."):
        value = value[key]
    return value


# file -> (fields of the converted manifest, phrases its notes must hold)
DOCUMENTED: dict[str, tuple[dict[str, Any], list[str]]] = {
    "readme-spread-plugin.yaml": (
        {
            "metadata.name": "profilename",
            "spec.mode": "DryRun",
            "spec.constraints.whenUnsatisfiable": ["DoNotSchedule"],
            "spec.selector.namespaces": {"include": [], "exclude": []},
            "spec.eviction.requireFit": True,  # topologyBalanceNodeFit defaults to true
            "spec.eviction.maxPerRun": None,
            "spec.eviction.maxPerWorkload": None,
            "spec.eviction.minPodAge": "0s",
            "spec.eviction.cooldown": "0s",
            "spec.eviction.protections": {
                "localStorage": True,
                "persistentVolumeClaims": False,
                "systemCritical": True,
            },
        },
        ["minDomains", "counts only the pods its filters let it evict", "DryRun"],
    ),
    "examples-topology-spread-constraint.yaml": (
        {"spec.constraints.whenUnsatisfiable": ["DoNotSchedule", "ScheduleAnyway"]},
        ["minDomains"],
    ),
    "examples-policy.yaml": (
        {"spec.constraints.whenUnsatisfiable": ["DoNotSchedule", "ScheduleAnyway"]},
        [
            "also enables LowNodeUtilization, RemoveDuplicates, RemovePodsHavingTooManyRestarts,"
            " RemovePodsViolatingInterPodAntiAffinity: not converted"
        ],
    ),
    "readme-example-policy.yaml": (
        {
            "spec.eviction.maxPerRun": 5000,
            "spec.eviction.maxPerNode": 5000,
            "spec.eviction.maxPerNamespace": 5000,
            "spec.eviction.gracePeriodSeconds": 60,
            "spec.eviction.requireFit": True,
        },
        [
            "nodeSelector 'node=node1': no equivalent",
            "metricsProviders: not used",
            "minReplicas 2: no equivalent",
        ],
    ),
    "readme-pvc-storage-classes.yaml": (
        {"spec.eviction.protections.persistentVolumeClaims": True},
        ["from the DefaultEvictor's PodsWithPVC", "'storage-class-0', 'storage-class-1'"],
    ),
    "readme-namespace-filtering.yaml": (
        {"spec.selector.namespaces": {"include": ["namespace1", "namespace2"], "exclude": []}},
        [],
    ),
    "readme-label-filtering.yaml": (
        {
            "spec.selector.podSelector": {
                "matchLabels": {"component": "redis"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["cache"]},
                    {"key": "environment", "operator": "NotIn", "values": ["dev"]},
                ],
            }
        },
        [],
    ),
    "readme-priority-filtering.yaml": (
        {"spec.eviction.protections.systemCritical": True},
        ["priorityThreshold value 10000: no equivalent"],
    ),
    "readme-node-fit.yaml": ({"spec.eviction.requireFit": True}, []),
    "chart-default-configmap.yaml": (
        {
            "metadata.name": "default",
            "spec.eviction.protections": {
                "localStorage": False,  # defaultDisabled: PodsWithLocalStorage
                "persistentVolumeClaims": True,  # extraEnabled: PodsWithPVC
                "systemCritical": True,
            },
        },
        ["also enables LowNodeUtilization, RemoveDuplicates", "PodsWithLocalStorage"],
    ),
    "readme-v1alpha1-spread.yaml": (
        {
            "metadata.name": "descheduler",
            "spec.constraints.whenUnsatisfiable": ["DoNotSchedule"],
            "spec.eviction.requireFit": True,
        },
        [],
    ),
    "readme-v1alpha1-policy.yaml": (
        {
            "spec.constraints.whenUnsatisfiable": ["DoNotSchedule", "ScheduleAnyway"],
            "spec.selector.namespaces": {"include": [], "exclude": ["namespace1"]},
            "spec.eviction.maxPerNode": 40,
            "spec.eviction.protections": {
                "localStorage": False,  # evictLocalStoragePods: true
                "persistentVolumeClaims": False,
                "systemCritical": False,  # evictSystemCriticalPods: true
            },
        },
        [
            "nodeSelector 'prod=dev': no equivalent",
            "priorityThreshold name 'priorityclass1': no equivalent",
            "also enables RemoveDuplicates",
        ],
    ),
}


def test_every_documented_policy_is_tested() -> None:
    assert sorted(DOCUMENTED) == sorted(p.name for p in POLICIES.glob("*.yaml"))


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_a_documented_policy_converts_to_what_it_asks_for(name: str) -> None:
    manifest, notes = converted(name)
    fields, phrases = DOCUMENTED[name]
    for dotted, want in fields.items():
        assert field(manifest, dotted) == want, dotted
    for phrase in phrases:
        assert phrase in notes, phrase
    # respread's parser (the CRD's schema and rules) accepts it, in DryRun.
    assert parse_policy(manifest).mode == "DryRun"
    assert manifest["metadata"]["annotations"]["respread.io/converted-from"].startswith(
        "DeschedulerPolicy descheduler/"
    )


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_the_written_yaml_reads_back_as_the_manifest_with_its_notes_as_comments(
    name: str,
) -> None:
    path = POLICIES / name
    [conversion] = convert(read_policy_text(path.read_text(), name, DEFAULT_LIMITS))
    text = render(conversion.manifest, [(n.path, n.text) for n in conversion.notes])
    assert yaml.safe_load(text) == conversion.manifest
    comments = " ".join(
        line.strip().removeprefix("# ") for line in text.splitlines() if line.lstrip()[:1] == "#"
    )
    for note in conversion.notes:
        assert " ".join(note.text.split()) in comments


# --------------------------------------------------------------------------- the oracle's mapping


def as_policy(args: dict[str, Any]) -> dict[str, Any]:
    """A conformance row's plugin and evictor args as the DeschedulerPolicy that runs them."""
    plugin = {k: v for k, v in args.items() if k != "evictor"}
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        "profiles": [
            {
                "name": "conformance",
                "pluginConfig": [
                    {"name": "DefaultEvictor", "args": args.get("evictor", {})},
                    {"name": SPREAD, "args": plugin},
                ],
                "plugins": {"balance": {"enabled": [SPREAD]}},
            }
        ],
    }


ROWS = sorted(p.name for p in CONFORMANCE.iterdir() if (p / "expect.yaml").is_file())


@pytest.mark.parametrize("row", ROWS)
def test_the_conversion_equals_the_policy_the_descheduler_oracle_compares_against(
    row: str,
) -> None:
    """tests/oracles/descheduler.policy_for is the mapping the differential tests validate
    against the descheduler itself; the converter must give the same policy for every
    conformance row's arguments."""
    args = yaml.safe_load((CONFORMANCE / row / "expect.yaml").read_text())["args"]
    [conversion] = convert(as_policy(args))
    ours, oracle = parse_policy(conversion.manifest), policy_for(args)
    differ = [
        f.name
        for f in dataclasses.fields(RebalancePolicy)
        if f.name != "name" and getattr(ours, f.name) != getattr(oracle, f.name)
    ]
    assert differ == []


# --------------------------------------------------------------------------- the mapping's rules


def policy(spread_args: Any = None, evictor: Any = None, **top: Any) -> dict[str, Any]:
    configs: list[dict[str, Any]] = [{"name": SPREAD, "args": spread_args or {}}]
    if evictor is not None:
        configs.append({"name": "DefaultEvictor", "args": evictor})
    return {
        "apiVersion": "descheduler/v1alpha2",
        "kind": "DeschedulerPolicy",
        **top,
        "profiles": [
            {"name": "p", "pluginConfig": configs, "plugins": {"balance": {"enabled": [SPREAD]}}}
        ],
    }


def spec_of(doc: dict[str, Any]) -> dict[str, Any]:
    [conversion] = convert(doc)
    spec: dict[str, Any] = conversion.manifest["spec"]
    return spec


PROTECTION_CASES = [
    ({"podProtections": {"defaultDisabled": ["SystemCriticalPods"]}}, "systemCritical", False),
    ({"podProtections": {"extraEnabled": ["PodsWithPVC"]}}, "persistentVolumeClaims", True),
    ({"evictLocalStoragePods": True}, "localStorage", False),
    ({"evictSystemCriticalPods": True}, "systemCritical", False),
    ({"ignorePvcPods": True}, "persistentVolumeClaims", True),
    ({"evictLocalStoragePods": False}, "localStorage", True),
]


@pytest.mark.parametrize(("evictor", "protection", "value"), PROTECTION_CASES)
def test_the_evictors_protections_map_onto_respreads(
    evictor: dict[str, Any], protection: str, value: bool
) -> None:
    assert spec_of(policy(evictor=evictor))["eviction"]["protections"][protection] is value


@pytest.mark.parametrize(
    ("evictor", "phrase"),
    [
        ({"podProtections": {"defaultDisabled": ["DaemonSetPods"]}}, "never evicts them"),
        ({"evictFailedBarePods": True}, "never evicts bare pods"),
        ({"podProtections": {"extraEnabled": ["PodsWithoutPDB"]}}, "PodDisruptionBudget"),
        ({"podProtections": {"extraEnabled": ["PodsWithResourceClaims"]}}, "ResourceClaims"),
        ({"noEvictionPolicy": "Mandatory"}, 'respread.io/evict: "false"'),
        ({"nodeSelector": "pool=a"}, "nodeSelector 'pool=a'"),
        ({"unheardOf": 1}, "unheardOf is not a field the descheduler knows"),
    ],
)
def test_settings_without_an_equivalent_are_noted(evictor: dict[str, Any], phrase: str) -> None:
    [conversion] = convert(policy(evictor=evictor))
    assert any(phrase in n.text for n in conversion.notes), [n.text for n in conversion.notes]


def test_require_fit_follows_either_fit_check() -> None:
    off = {"topologyBalanceNodeFit": False}
    assert spec_of(policy(off))["eviction"]["requireFit"] is False
    assert spec_of(policy(off, {"nodeFit": True}))["eviction"]["requireFit"] is True
    assert spec_of(policy({}, {"nodeFit": False}))["eviction"]["requireFit"] is True


def test_two_pod_selectors_must_both_match() -> None:
    spec = spec_of(
        policy(
            {"labelSelector": {"matchLabels": {"app": "a"}}},
            {"labelSelector": {"matchLabels": {"app": "b"}}},
        )
    )
    assert spec["selector"]["podSelector"] == {
        "matchExpressions": [
            {"key": "app", "operator": "In", "values": ["a"]},
            {"key": "app", "operator": "In", "values": ["b"]},
        ]
    }


def test_the_evictors_namespace_selector_and_min_pod_age_carry_over() -> None:
    selector = {"matchLabels": {"team": "web"}}
    spec = spec_of(policy(evictor={"namespaceLabelSelector": selector, "minPodAge": "1h30m"}))
    assert spec["selector"]["namespaceSelector"] == selector
    assert spec["eviction"]["minPodAge"] == "1h30m"


def test_one_policy_per_profile_that_enables_the_plugin_and_name_overrides_one() -> None:
    doc = policy()
    other = copy.deepcopy(doc["profiles"][0]) | {"name": "Second_Profile"}
    off = {"name": "off", "pluginConfig": [], "plugins": {"deschedule": {"enabled": ["X"]}}}
    doc["profiles"] += [other, off]
    names = [c.manifest["metadata"]["name"] for c in convert(doc)]
    assert names == ["p", "second-profile"]
    assert convert(policy(), "mine")[0].manifest["metadata"]["name"] == "mine"
    with pytest.raises(ConversionError, match="--name names one policy, but 2 profiles"):
        convert(doc, "mine")


# --------------------------------------------------------------------------- bad input

BAD: list[tuple[str, Any, str]] = [
    ("not a policy", {"kind": "ConfigMap"}, "kind: expected DeschedulerPolicy"),
    ("unknown version", {**policy(), "apiVersion": "descheduler/v1"}, "apiVersion: expected"),
    ("profiles not a list", {**policy(), "profiles": {}}, "profiles: expected a list"),
    (
        "plugin not enabled",
        {**policy(), "profiles": [{"name": "p", "pluginConfig": [], "plugins": {}}]},
        "profiles: no profile enables RemovePodsViolatingTopologySpreadConstraint",
    ),
    (
        "bad constraint",
        policy({"constraints": ["DoNotSchedul"]}),
        "profiles[0].pluginConfig[0].args.constraints[0]: 'DoNotSchedul' is not one of",
    ),
    (
        "include and exclude",
        policy({"namespaces": {"include": ["a"], "exclude": ["b"]}}),
        "profiles[0].pluginConfig[0].args.namespaces: only one of include and exclude",
    ),
    (
        "namespaces not strings",
        policy({"namespaces": {"include": [1]}}),
        "profiles[0].pluginConfig[0].args.namespaces.include[0]: expected a non-empty string",
    ),
    (
        "fit not a bool",
        policy({"topologyBalanceNodeFit": "yes"}),
        "args.topologyBalanceNodeFit: expected true or false, got 'yes'",
    ),
    (
        "bad label selector",
        policy({"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}),
        "args.labelSelector.matchExpressions[0].operator",
    ),
    (
        "negative cap",
        policy(maxNoOfPodsToEvictTotal=-1),
        "maxNoOfPodsToEvictTotal: expected a non-negative integer, got -1",
    ),
    (
        "unknown protection",
        policy(evictor={"podProtections": {"defaultDisabled": ["PodsWithPVC"]}}),
        "pluginConfig[1].args.podProtections.defaultDisabled[0]: 'PodsWithPVC' is not one of",
    ),
    (
        "deprecated and new together",
        policy(
            evictor={"ignorePvcPods": True, "podProtections": {"extraEnabled": ["PodsWithPVC"]}}
        ),
        "pluginConfig[1].args: cannot use the deprecated",
    ),
    (
        "both thresholds",
        policy(evictor={"priorityThreshold": {"name": "x", "value": 1}}),
        "args.priorityThreshold: only one of name and value",
    ),
    (
        "bad min pod age",
        policy(evictor={"minPodAge": "5 minutes"}),
        "pluginConfig[1].args.minPodAge: expected a duration",
    ),
    (
        "bad no-eviction policy",
        policy(evictor={"noEvictionPolicy": "Always"}),
        "args.noEvictionPolicy: 'Always' is not Preferred or Mandatory",
    ),
    (
        "v1alpha1 strategy off",
        {"apiVersion": "descheduler/v1alpha1", "kind": "DeschedulerPolicy", "strategies": {}},
        "strategies.RemovePodsViolatingTopologySpreadConstraint: not enabled",
    ),
    (
        "v1alpha1 bad param",
        {
            "apiVersion": "descheduler/v1alpha1",
            "kind": "DeschedulerPolicy",
            "strategies": {SPREAD: {"enabled": True, "params": {"includeSoftConstraints": 1}}},
        },
        f"strategies.{SPREAD}.params.includeSoftConstraints: expected true or false",
    ),
]


@pytest.mark.parametrize(("doc", "message"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_is_one_line_naming_the_field(doc: Any, message: str) -> None:
    with pytest.raises(ConversionError) as err:
        convert(doc)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [", "src: not valid YAML at line 2"),
        ("kind: Pod\n", "src: expected one DeschedulerPolicy (or a ConfigMap"),
        ("kind: ConfigMap\ndata: {}\n", "src: ConfigMap data: has no policy.yaml key"),
        ("{kind: DeschedulerPolicy}\n---\n{kind: DeschedulerPolicy}\n", "found 2"),
    ],
)
def test_a_text_without_one_policy_is_refused(text: str, message: str) -> None:
    with pytest.raises(ConversionError, match=re.escape(message)):
        read_policy_text(text, "src", DEFAULT_LIMITS)


HEAD = "apiVersion: descheduler/v1alpha2\nkind: DeschedulerPolicy\n"
PROFILE = f"profiles:\n- name: p\n  plugins:\n    balance:\n      enabled: [{SPREAD}]\n"
ARGS = f"  pluginConfig:\n  - name: {SPREAD}\n    args:\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        # kubectl (and the descheduler, with sigs.k8s.io/yaml) read 1:20 as a string, not 80.
        (HEAD + "maxNoOfPodsToEvictTotal: 1:20\n" + PROFILE, "expected a non-negative integer"),
        (HEAD + "maxNoOfPodsToEvictTotal: !!int ''\n" + PROFILE, "src: maxNoOfPodsToEvictTotal:"),
        (
            "kind: ConfigMap\ndata:\n  policy.yaml: |\n"
            "    kind: DeschedulerPolicy\n    x: !!bool maybe\n",
            "src (ConfigMap policy.yaml): x: cannot decode !!str 'maybe' as a !!bool at line 2",
        ),
    ],
    ids=["sexagesimal", "int-empty", "bool-maybe-in-configmap"],
)
def test_a_policy_is_read_as_kubectl_reads_it(text: str, message: str) -> None:
    with pytest.raises(ConversionError, match=re.escape(message)) as err:
        convert(read_policy_text(text, "src", DEFAULT_LIMITS))
    assert "\n" not in str(err.value)


def test_what_kubectl_writes_unquoted_stays_a_string() -> None:
    text = HEAD + PROFILE + ARGS + "      namespaces:\n        exclude: [=, 0x_, -0b_]\n"
    [conversion] = convert(read_policy_text(text, "src", DEFAULT_LIMITS))
    namespaces = conversion.manifest["spec"]["selector"]["namespaces"]
    assert namespaces["exclude"] == ["=", "0x_", "-0b_"]
    written = render(conversion.manifest, [])
    [(_, again)] = documents_from_text(written, "out")
    assert again == conversion.manifest


# --------------------------------------------------------------------------- the command


def test_the_command_writes_commented_yaml(capsys: pytest.CaptureFixture[str]) -> None:
    source = POLICIES / "readme-example-policy.yaml"
    assert main(["convert", "--from-descheduler", str(source), "--name", "from-descheduler"]) == 0
    out = capsys.readouterr().out
    doc = yaml.safe_load(out)
    assert doc["metadata"]["name"] == "from-descheduler"
    assert "  # from maxNoOfPodsToEvictTotal: at most 5000 per scan" in out


def test_the_command_writes_one_document_per_profile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = policy()
    doc["profiles"].append(copy.deepcopy(doc["profiles"][0]) | {"name": "q"})
    source = tmp_path / "policy.yaml"
    source.write_text(yaml.safe_dump(doc))
    assert main(["convert", "--from-descheduler", str(source)]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["metadata"]["name"] for d in docs] == ["p", "q"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "respread: error: cannot read {path}: No such file or directory"),
        ("kind: DeschedulerPolicy\napiVersion: x\n", "cannot convert {path}: apiVersion:"),
        (b"\xff", "respread: error: cannot read {path}: not UTF-8 text"),
    ],
)
def test_the_command_refuses_bad_input_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes | None, message: str
) -> None:
    path = tmp_path / "policy.yaml"
    if isinstance(content, str):
        path.write_text(content)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    assert main(["convert", "--from-descheduler", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert message.format(path=path) in err


# --------------------------------------------------------------------------- the YAML writer

label_values = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@given(
    st.dictionaries(
        label_values, label_values | st.integers() | st.booleans() | st.none(), max_size=5
    ),
    st.lists(st.text(max_size=120), max_size=3),
)
def test_any_mapping_reads_back_unchanged_with_its_notes(
    values: dict[str, Any], notes: list[str]
) -> None:
    document = {"spec": {"selector": {"matchLabels": values, "empty": {}}, "list": [1, "x"]}}
    text = render(document, [(("spec", "selector"), n) for n in notes] + [((), "head")])
    assert yaml.safe_load(text) == document
    assert [doc for _, doc in documents_from_text(text, "out")] == [document]  # and kubectl
    # What the command prints (escaped for a terminal) means the same.
    assert yaml.safe_load(printable_lines(text)) == document

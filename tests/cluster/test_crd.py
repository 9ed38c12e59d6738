"""The RebalancePolicy CRD and the deploy/ manifests on a real kube-apiserver.

The CRD must agree with respread.inputs.policy (the parser the operator runs): the API server fills
in exactly the parser's defaults, and refuses, naming the field, what the parser refuses. Its status
schema must hold what respread.report.status writes without pruning a field. The deploy/ RBAC must
let the operator's service account do its work and nothing more, and its pod must pass the
"restricted" Pod Security admission.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import secrets
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_helpers import wait_for
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.analysis.groups import analyze
from respread.inputs.objects import load_texts
from respread.inputs.policy import (
    DEFAULT_POLICY,
    PolicyError,
    RebalancePolicy,
    Schedule,
    parse_policy,
)
from respread.remedies.evict.planner import plan
from respread.report.build import build_report
from respread.report.contract import status_json
from respread.report.status import build_status

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
GROUP, VERSION, PLURAL, KIND = "respread.io", "v1alpha1", "rebalancepolicies", "RebalancePolicy"
CRD_NAME = f"{PLURAL}.{GROUP}"
NAMESPACE = "respread-system"
SERVICE_ACCOUNT = f"system:serviceaccount:{NAMESPACE}:respread"
FIELD_MANAGER = "respread-test-crd"

# What the API server stores for `spec: {}`: every default of the CRD, spelled out.
DEFAULTED_SPEC: dict[str, Any] = {
    "mode": "DryRun",
    "schedule": {"interval": "5m"},
    "selector": {"namespaces": {"include": [], "exclude": ["kube-system"]}},
    "constraints": {
        "whenUnsatisfiable": ["DoNotSchedule"],
        "defaultConstraints": [],
        "emptySelectorMatchesAll": False,
    },
    "eviction": {
        "maxPerRun": 10,
        "maxPerWorkload": 1,
        "requireFit": True,
        "minPodAge": "5m",
        "cooldown": "10m",
        "protections": {
            "localStorage": True,
            "persistentVolumeClaims": False,
            "systemCritical": True,
        },
    },
    "report": {"maxItems": 20},
    "remediation": {
        "evict": True,
        "deletionCost": {"enabled": False, "takeOver": False, "maxPatchesPerScan": 50},
        "surge": {
            "enabled": False,
            "when": "WhenEvictionBlocked",
            "maxSurge": 3,
            "readyTimeout": "5m",
            "allowAutoscaled": False,
        },
    },
    "outages": {
        "gracePeriod": "5m",
        "counting": "Scheduler",
        "recovery": {"maxShare": 25, "interval": "5m"},
    },
}


# --------------------------------------------------------------------------- plumbing


class Kubectl:
    """The kubectl binary, pointed at the test cluster, with a private discovery cache."""

    def __init__(self, binary: str, kubeconfig: Path, cache: Path) -> None:
        self.base = [binary, f"--kubeconfig={kubeconfig}", f"--cache-dir={cache}"]

    def __call__(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [*self.base, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"kubectl {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}{proc.stdout}"
            )
        return proc


@pytest.fixture(scope="module")
def kubectl(kubeconfig: Path, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not on PATH")
    return Kubectl(binary, kubeconfig, tmp_path_factory.mktemp("kubectl-cache"))


@pytest.fixture(scope="module")
def kustomized(kubectl: Kubectl) -> list[dict[str, Any]]:
    """The objects `kubectl kustomize deploy/` renders (needs no cluster)."""
    out = kubectl("kustomize", str(REPO / "deploy")).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


@pytest.fixture(scope="module")
def custom(api_client: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api_client)


@pytest.fixture(scope="module")
def crds(kubectl: Kubectl, custom: client.CustomObjectsApi) -> None:
    """crds/ applied (server-side, idempotent: other modules may have created them too) and
    served. Left in place afterwards: the operator's tests need the same CRDs."""
    kubectl(
        "apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}",
        "-k", str(REPO / "crds"),
    )  # fmt: skip
    kubectl(
        "wait", "--for=condition=Established", "--timeout=60s",
        f"crd/{CRD_NAME}",
    )  # fmt: skip
    wait_for(
        lambda: custom.list_cluster_custom_object(GROUP, VERSION, PLURAL) is not None,
        30,
        "rebalancepolicies to be served",
    )


class Policies:
    """Creates RebalancePolicy objects with unique names; deletes them afterwards."""

    def __init__(self, custom: client.CustomObjectsApi, prefix: str) -> None:
        self.custom = custom
        self.prefix = prefix
        self.names: list[str] = []

    def manifest(self, spec: Mapping[str, Any] | None, name: str | None = None) -> dict[str, Any]:
        name = name or f"{self.prefix}-{secrets.token_hex(3)}"
        doc: dict[str, Any] = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": KIND,
            "metadata": {"name": name},
        }
        if spec is not None:
            doc["spec"] = copy.deepcopy(dict(spec))
        return doc

    def create(self, doc: Mapping[str, Any]) -> dict[str, Any]:
        created: dict[str, Any] = self.custom.create_cluster_custom_object(
            GROUP, VERSION, PLURAL, dict(doc)
        )
        self.names.append(created["metadata"]["name"])
        return created

    def get(self, name: str) -> dict[str, Any]:
        obj: dict[str, Any] = self.custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, name)
        return obj

    def patch_status(self, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        obj: dict[str, Any] = self.custom.patch_cluster_custom_object_status(
            GROUP, VERSION, PLURAL, name, dict(body)
        )
        return obj

    def put_status(self, name: str, status: Mapping[str, Any]) -> dict[str, Any]:
        """Replace the whole status (PUT /status): unlike a merge patch, keeps explicit nulls."""
        obj = self.get(name)
        obj["status"] = dict(status)
        replaced: dict[str, Any] = self.custom.replace_cluster_custom_object_status(
            GROUP, VERSION, PLURAL, name, obj
        )
        return replaced

    def cleanup(self) -> None:
        for name in self.names:
            try:
                self.custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)
            except ApiException as exc:
                if exc.status != 404:
                    raise


@pytest.fixture
def policies(crds: None, custom: client.CustomObjectsApi) -> Iterator[Policies]:
    made = Policies(custom, f"t-{secrets.token_hex(2)}")
    yield made
    made.cleanup()


def refusal(err: ApiException) -> str:
    """The API server's message for a refused request."""
    try:
        return str(json.loads(err.body)["message"])
    except (TypeError, ValueError, KeyError):
        return str(err.body)


def same_policy(a: RebalancePolicy, b: RebalancePolicy) -> list[str]:
    """The fields (other than name and generation) on which two parsed policies differ."""
    return [
        f.name
        for f in dataclasses.fields(RebalancePolicy)
        if f.name not in ("name", "generation") and getattr(a, f.name) != getattr(b, f.name)
    ]


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# --------------------------------------------------------------------------- the CRD itself


def test_crd_is_established_structural_and_named_as_documented(
    crds: None, api_client: client.ApiClient
) -> None:
    crd = client.ApiextensionsV1Api(api_client).read_custom_resource_definition(CRD_NAME)
    conditions = {c.type: c.status for c in crd.status.conditions or []}
    assert conditions.get("Established") == "True"
    assert conditions.get("NamesAccepted") == "True"
    assert "NonStructuralSchema" not in conditions
    assert crd.spec.group == GROUP
    assert crd.spec.scope == "Cluster"
    names = crd.spec.names
    assert (names.kind, names.plural, names.singular) == (KIND, PLURAL, "rebalancepolicy")
    assert names.short_names == ["rbp"]
    [version] = crd.spec.versions
    assert (version.name, version.served, version.storage) == (VERSION, True, True)
    assert version.subresources.status is not None
    assert [c.name for c in version.additional_printer_columns] == [
        "Mode", "Violations", "Planned", "Evicted", "Scan Evicted", "Next Eviction", "Last Scan",
        "Age",
    ]  # fmt: skip


# --------------------------------------------------------------------------- defaults


@pytest.mark.parametrize("spec", [{}, None], ids=["empty-spec", "no-spec"])
def test_the_api_server_fills_in_exactly_the_parsers_defaults(
    policies: Policies, spec: dict[str, Any] | None
) -> None:
    stored = policies.create(policies.manifest(spec))
    # Every default is in the stored object (so the operator and `kubectl get -o yaml` see it),
    assert stored["spec"] == DEFAULTED_SPEC
    # and read back through the operator's parser it is, field by field, DEFAULT_POLICY.
    parsed = parse_policy(stored)
    for f in dataclasses.fields(RebalancePolicy):
        if f.name in ("name", "generation"):
            continue
        assert getattr(parsed, f.name) == getattr(DEFAULT_POLICY, f.name), f.name
    assert parsed.name == stored["metadata"]["name"]
    assert parsed.generation == 1


def test_explicit_nulls_and_a_cron_schedule_are_kept_not_defaulted(policies: Policies) -> None:
    stored = policies.create(
        policies.manifest(
            {
                "schedule": {"cron": "*/10 * * * *"},
                "eviction": {"maxPerRun": None, "maxPerWorkload": None, "gracePeriodSeconds": 0},
            }
        )
    )
    # No interval defaulted next to the cron (the default is on the whole `schedule`).
    assert stored["spec"]["schedule"] == {"cron": "*/10 * * * *"}
    assert stored["spec"]["eviction"]["maxPerRun"] is None
    parsed = parse_policy(stored)
    assert parsed.schedule == Schedule(interval=None, cron="*/10 * * * *")
    assert parsed.eviction.max_per_run is None  # null: no cap
    assert parsed.eviction.max_per_workload is None
    assert parsed.eviction.grace_period_seconds == 0


def test_the_example_policy_is_accepted_and_spells_out_the_defaults(policies: Policies) -> None:
    example = yaml.safe_load((REPO / "deploy" / "example-policy.yaml").read_text())
    assert example["metadata"]["name"] == "default"
    assert example["spec"]["mode"] == "DryRun"
    example["metadata"]["name"] = f"{policies.prefix}-example"
    stored = policies.create(example)
    assert same_policy(parse_policy(stored), DEFAULT_POLICY) == []


VALID_SPECS: dict[str, dict[str, Any]] = {
    "interval-10s": {"schedule": {"interval": "10s"}},
    "interval-compound": {"schedule": {"interval": "1h30m"}},
    "interval-fraction": {"schedule": {"interval": "1.5h"}},
    "cron-names-lists-steps": {"schedule": {"cron": "0,30 8-18/2 * jan-DEC mon-fri"}},
    "cron-sunday-as-7": {"schedule": {"cron": "0 0 * * 7"}},
    "cron-weekdays-up-to-sunday": {"schedule": {"cron": "0 0 * * 5-7"}},
    "cron-step-over-a-range": {"schedule": {"cron": "0-30/10 */90 * * *"}},
    "enforce": {"mode": "Enforce"},
    "durations-ms-and-zero": {"eviction": {"minPodAge": "0s", "cooldown": "250ms"}},
    "caps-zero": {
        "eviction": {"maxPerRun": 0, "maxPerNode": 0, "maxPerNamespace": 0, "maxPerWorkload": 0}
    },
    "caps-large": {"eviction": {"maxPerRun": 1000, "maxPerNode": 3, "maxPerNamespace": 50}},
    "protections-flipped": {
        "eviction": {
            "requireFit": False,
            "protections": {
                "localStorage": False,
                "persistentVolumeClaims": True,
                "systemCritical": False,
            },
        }
    },
    "remediation-deletion-cost": {
        "remediation": {
            "evict": False,
            "deletionCost": {"enabled": True, "takeOver": True, "maxPatchesPerScan": 1000},
        }
    },
    "remediation-surge": {
        "remediation": {
            "surge": {
                "enabled": True,
                "when": "Always",
                "maxSurge": 100,
                "readyTimeout": "10s",
                "allowAutoscaled": True,
            }
        }
    },
    "report-bounds-low": {"report": {"maxItems": 1}},
    "report-bounds-high": {"report": {"maxItems": 500}},
    "soft-constraints": {"constraints": {"whenUnsatisfiable": ["DoNotSchedule", "ScheduleAnyway"]}},
    "default-constraints": {
        "constraints": {
            "defaultConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "minDomains": 3,
                    "nodeAffinityPolicy": "Ignore",
                    "nodeTaintsPolicy": "Honor",
                },
                {
                    "maxSkew": 2,
                    "topologyKey": "kubernetes.io/hostname",
                    "whenUnsatisfiable": "ScheduleAnyway",
                },
            ],
            "emptySelectorMatchesAll": True,
        }
    },
    "selectors": {
        "selector": {
            "namespaces": {"include": ["shop", "web"], "exclude": []},
            "namespaceSelector": {"matchLabels": {"team": "a"}},
            "podSelector": {
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["web", "api"]},
                    {"key": "canary", "operator": "DoesNotExist"},
                ]
            },
        }
    },
}


@pytest.mark.parametrize("spec", list(VALID_SPECS.values()), ids=list(VALID_SPECS))
def test_valid_policies_are_accepted_and_mean_the_same_after_storage(
    policies: Policies, spec: dict[str, Any]
) -> None:
    doc = policies.manifest(spec)
    submitted = parse_policy(doc)  # the parser accepts it,
    stored = policies.create(doc)  # so does the API server,
    # and defaulting changed nothing the parser would not have assumed.
    assert same_policy(parse_policy(stored), submitted) == []


# --------------------------------------------------------------------------- refusals

# (spec, the field the refusal must name). Both the API server and respread.inputs.policy refuse
# each; the API server's message names the field, and the parser's PolicyError.field starts with it.
INVALID_SPECS: dict[str, tuple[dict[str, Any], str]] = {
    "interval-and-cron": (
        {"schedule": {"interval": "5m", "cron": "*/5 * * * *"}},
        "spec.schedule",
    ),
    "mode-bogus": ({"mode": "Bogus"}, "spec.mode"),
    "max-per-run-negative": ({"eviction": {"maxPerRun": -1}}, "spec.eviction.maxPerRun"),
    "min-pod-age-bad-unit": ({"eviction": {"minPodAge": "5x"}}, "spec.eviction.minPodAge"),
    "report-max-items-zero": ({"report": {"maxItems": 0}}, "spec.report.maxItems"),
    "when-unsatisfiable-sometimes": (
        {"constraints": {"whenUnsatisfiable": ["Sometimes"]}},
        "spec.constraints.whenUnsatisfiable",
    ),
    "when-unsatisfiable-empty": (
        {"constraints": {"whenUnsatisfiable": []}},
        "spec.constraints.whenUnsatisfiable",
    ),
    "report-max-items-too-many": ({"report": {"maxItems": 501}}, "spec.report.maxItems"),
    "deletion-cost-patches-zero": (
        {"remediation": {"deletionCost": {"maxPatchesPerScan": 0}}},
        "spec.remediation.deletionCost.maxPatchesPerScan",
    ),
    "evict-not-bool": ({"remediation": {"evict": "no"}}, "spec.remediation.evict"),
    "surge-max-zero": (
        {"remediation": {"surge": {"maxSurge": 0}}},
        "spec.remediation.surge.maxSurge",
    ),
    "surge-when-bogus": (
        {"remediation": {"surge": {"when": "Sometimes"}}},
        "spec.remediation.surge.when",
    ),
    "surge-timeout-below-10s": (
        {"remediation": {"surge": {"readyTimeout": "5s"}}},
        "spec.remediation.surge.readyTimeout",
    ),
    "interval-below-10s": ({"schedule": {"interval": "5s"}}, "spec.schedule.interval"),
    "interval-no-unit": ({"schedule": {"interval": "300"}}, "spec.schedule.interval"),
    "cron-three-fields": ({"schedule": {"cron": "* * *"}}, "spec.schedule.cron"),
    "cron-minute-60": ({"schedule": {"cron": "60 * * * *"}}, "spec.schedule.cron"),
    "cron-step-zero": ({"schedule": {"cron": "*/0 * * * *"}}, "spec.schedule.cron"),
    "cron-weekday-8": ({"schedule": {"cron": "0 0 * * 8"}}, "spec.schedule.cron"),
    "cron-backwards-range": ({"schedule": {"cron": "5-3 * * * *"}}, "spec.schedule.cron"),
    "cron-backwards-names": ({"schedule": {"cron": "0 0 * * fri-MON"}}, "spec.schedule.cron"),
    "cron-backwards-months": ({"schedule": {"cron": "0 0 1 12-jan *"}}, "spec.schedule.cron"),
    "cron-step-on-a-value": ({"schedule": {"cron": "5/10 * * * *"}}, "spec.schedule.cron"),
    "cron-empty-step": ({"schedule": {"cron": "5/ * * * *"}}, "spec.schedule.cron"),
    "schedule-empty": ({"schedule": {}}, "spec.schedule"),
    "interval-bare-number": ({"schedule": {"interval": 300}}, "spec.schedule.interval"),
    "cooldown-bare-number": ({"eviction": {"cooldown": 90}}, "spec.eviction.cooldown"),
    "cooldown-no-unit": ({"eviction": {"cooldown": "10"}}, "spec.eviction.cooldown"),
    "max-per-workload-negative": (
        {"eviction": {"maxPerWorkload": -1}},
        "spec.eviction.maxPerWorkload",
    ),
    "max-per-node-negative": ({"eviction": {"maxPerNode": -3}}, "spec.eviction.maxPerNode"),
    "grace-period-negative": (
        {"eviction": {"gracePeriodSeconds": -1}},
        "spec.eviction.gracePeriodSeconds",
    ),
    "protection-not-bool": (
        {"eviction": {"protections": {"localStorage": "yes"}}},
        "spec.eviction.protections.localStorage",
    ),
    "default-constraint-with-selector": (
        {
            "constraints": {
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": "web"}},
                    }
                ]
            }
        },
        "spec.constraints.defaultConstraints[0].labelSelector",
    ),
    "default-constraint-min-domains-soft": (
        {
            "constraints": {
                "defaultConstraints": [
                    {
                        "maxSkew": 1,
                        "topologyKey": "zone",
                        "whenUnsatisfiable": "ScheduleAnyway",
                        "minDomains": 2,
                    }
                ]
            }
        },
        "spec.constraints.defaultConstraints[0].minDomains",
    ),
    "default-constraint-max-skew-zero": (
        {
            "constraints": {
                "defaultConstraints": [
                    {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}
                ]
            }
        },
        "spec.constraints.defaultConstraints[0].maxSkew",
    ),
    "default-constraint-duplicate-pair": (
        {
            "constraints": {
                "defaultConstraints": [
                    {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                    {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
                ]
            }
        },
        "spec.constraints.defaultConstraints",
    ),
    "pod-selector-in-without-values": (
        {"selector": {"podSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}},
        "spec.selector.podSelector.matchExpressions[0]",
    ),
    "namespace-selector-bad-operator": (
        {
            "selector": {
                "namespaceSelector": {
                    "matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]
                }
            }
        },
        "spec.selector.namespaceSelector.matchExpressions[0].operator",
    ),
}


@pytest.mark.parametrize(("spec", "field"), list(INVALID_SPECS.values()), ids=list(INVALID_SPECS))
def test_invalid_policies_are_refused_with_422_naming_the_field(
    policies: Policies, spec: dict[str, Any], field: str
) -> None:
    doc = policies.manifest(spec)
    with pytest.raises(ApiException) as refused:
        policies.create(doc)
    assert refused.value.status == 422, refused.value.body
    message = refusal(refused.value)
    assert re.search(re.escape(field) + r"(?![\w.])", message), message
    # The operator's parser refuses it too, on the same field.
    with pytest.raises(PolicyError) as rejected:
        parse_policy(doc)
    assert rejected.value.field.startswith(field), rejected.value


# --------------------------------------------------------------------------- status


def test_status_is_a_subresource(policies: Policies, custom: client.CustomObjectsApi) -> None:
    name = policies.create(policies.manifest({}))["metadata"]["name"]
    status = {
        "observedGeneration": 1,
        "lastScanTime": now_rfc3339(),
        "summary": {"nodes": 3, "pods": 9, "violations": 1, "plannedEvictions": 1},
        "violationsTotal": 1,
        "planTotal": 1,
    }
    # Written through /status: stored as is, and the generation does not move.
    written = policies.patch_status(name, {"status": status})
    assert written["status"] == status
    assert written["metadata"]["generation"] == 1

    # A status in an update of the main resource is ignored; the spec change is not.
    obj = policies.get(name)
    obj["spec"]["mode"] = "Enforce"
    obj["status"] = {"observedGeneration": 99, "summary": {"violations": 42}}
    updated = custom.replace_cluster_custom_object(GROUP, VERSION, PLURAL, name, obj)
    assert updated["spec"]["mode"] == "Enforce"
    assert updated["status"] == status
    assert updated["metadata"]["generation"] == 2
    patched = custom.patch_cluster_custom_object(
        GROUP, VERSION, PLURAL, name, {"status": {"summary": {"violations": 7}}}
    )
    assert patched["status"] == status

    # And a spec in a write to /status is ignored.
    after = policies.patch_status(
        name, {"spec": {"mode": "DryRun"}, "status": {"observedGeneration": 2}}
    )
    assert after["spec"]["mode"] == "Enforce"
    assert after["status"]["observedGeneration"] == 2
    assert after["metadata"]["generation"] == 2


EXAMPLES = sorted(p.parent.name for p in (REPO / "examples").glob("*/cluster.yaml"))


@pytest.mark.parametrize("example", EXAMPLES)
def test_the_status_the_operator_builds_is_stored_without_loss(
    policies: Policies, example: str
) -> None:
    """respread.report.status output for each bundled example: valid, and nothing pruned."""
    path = REPO / "examples" / example / "cluster.yaml"
    now = datetime(2026, 11, 22, 10, 0, tzinfo=UTC)
    loaded = load_texts([(str(path), path.read_text())], taken_at=now.timestamp())
    analysis = analyze(loaded.state, DEFAULT_POLICY)
    report = build_report(
        analysis, plan(analysis, DEFAULT_POLICY, now=now.timestamp()), DEFAULT_POLICY
    )
    status = status_json(build_status(report, DEFAULT_POLICY, now.strftime("%Y-%m-%dT%H:%M:%SZ")))
    assert status["violations"], "every example has a violation to report"

    name = policies.create(policies.manifest({}))["metadata"]["name"]
    assert policies.put_status(name, status)["status"] == status
    assert policies.get(name)["status"] == status


def test_every_status_field_of_the_schema_round_trips(policies: Policies) -> None:
    ts = "2026-11-22T10:00:00Z"
    status = {
        "observedGeneration": 3,
        "lastScanTime": ts,
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "Scanning", "message": "ok",
             "lastTransitionTime": ts, "observedGeneration": 3},
            {"type": "ScanSucceeded", "status": "False", "reason": "ScanFailed",
             "message": "x" * 1024, "lastTransitionTime": ts, "observedGeneration": 3},
        ],
        "summary": {
            "nodes": 6, "pods": 9, "constraintGroups": 2, "violations": 1, "unfixable": 0,
            "plannedEvictions": 1, "deferredEvictions": 1, "blocked": 0, "skipped": 2,
            "evicted": 1, "failed": 0, "waiting": 0, "partlyFixable": 0,
        },
        "violationsTotal": 1,
        "planTotal": 2,
        "evictedTotal": 7,
        "nextEvictionTime": ts,
        "violations": [{
            "namespace": "shop",
            "workload": {"kind": "Deployment", "name": "web"},
            "topologyKey": "topology.kubernetes.io/zone",
            "matchLabels": {"pod-template-hash": "7c9d5f"},
            "whenUnsatisfiable": "DoNotSchedule",
            "maxSkew": 1, "minDomains": 1, "skew": 3, "globalMinimum": 1,
            "domains": {"count": 3, "max": {"name": "zone-a", "pods": 4},
                        "min": {"name": "zone-b", "pods": 1}},
            "pods": 6, "violatingPods": 4, "minimumMoves": None, "violatingPodsAfterRun": 2,
            "fromDefaultConstraints": True,
            "cause": "ScaleDown", "causeMessage": "web scaled from 9 to 6 replicas",
            "since": ts, "fixable": True, "verdict": "Fixable", "remedy": "Evict",
            "incomplete": True,
            "message": "fixable by eviction (2 moves)",
        }],
        "plan": [
            {"namespace": "shop", "pod": "web-1", "node": "n1",
             "workload": {"kind": "Deployment", "name": "web"},
             "fromDomain": {"topology.kubernetes.io/zone": "zone-a"},
             "toDomain": {"topology.kubernetes.io/zone": "zone-b"},
             "predictedNode": "n3", "state": "Evicted", "reason": "zone-a: 3 + 1 - 1 > 1"},
            {"namespace": "shop", "pod": "web-2", "node": "n2",
             "workload": {"kind": "Deployment", "name": "web"},
             "fromDomain": {"topology.kubernetes.io/zone": "zone-a"},
             "toDomain": {"topology.kubernetes.io/zone": "zone-c"},
             "predictedNode": "n5", "state": "Deferred", "reason": "maxPerWorkload 1",
             "deferredBy": "maxPerWorkload 1"},
        ],
        "cooldowns": [
            {"namespace": "shop", "workload": {"kind": "Deployment", "name": "web"},
             "lastEvictionTime": ts, "backoffLevel": 1, "backoffUntil": ts,
             "pendingReview": [{"topologyKey": "topology.kubernetes.io/zone",
                                "skewAtEviction": 3}]},
        ],
    }  # fmt: skip
    name = policies.create(policies.manifest({}))["metadata"]["name"]
    assert policies.put_status(name, status)["status"] == status


BAD_STATUSES: dict[str, tuple[dict[str, Any], str]] = {
    "nine-conditions": (
        {"conditions": [{"type": f"T{i}", "status": "True"} for i in range(9)]},
        "status.conditions",
    ),
    "duplicate-condition-type": (
        {"conditions": [{"type": "Ready", "status": "True"}] * 2},
        "status.conditions[1]",
    ),
    "condition-status-maybe": (
        {"conditions": [{"type": "Ready", "status": "Maybe"}]},
        "status.conditions[0].status",
    ),
    "plan-state-bogus": ({"plan": [{"pod": "p", "state": "Bogus"}]}, "status.plan[0].state"),
    "violation-cause-bogus": (
        {"violations": [{"cause": "Gremlins"}]},
        "status.violations[0].cause",
    ),
    "too-many-violations": ({"violations": [{}] * 501}, "status.violations"),
    "violation-remedy-bogus": (
        {"violations": [{"remedy": "Teleport"}]},
        "status.violations[0].remedy",
    ),
    "violation-verdict-bogus": (
        {"violations": [{"verdict": "Maybe"}]},
        "status.violations[0].verdict",
    ),
    "message-too-long": ({"violations": [{"message": "x" * 1025}]}, "status.violations[0].message"),
    "scan-time-not-a-time": ({"lastScanTime": "yesterday"}, "status.lastScanTime"),
}


@pytest.mark.parametrize(("status", "field"), list(BAD_STATUSES.values()), ids=list(BAD_STATUSES))
def test_an_unbounded_or_malformed_status_is_refused(
    policies: Policies, status: dict[str, Any], field: str
) -> None:
    name = policies.create(policies.manifest({}))["metadata"]["name"]
    with pytest.raises(ApiException) as refused:
        policies.put_status(name, status)
    assert refused.value.status == 422, refused.value.body
    assert field in refusal(refused.value)


# --------------------------------------------------------------------------- kubectl get


def columns(line: str) -> list[str]:
    return re.split(r"\s{2,}", line.strip())


def test_kubectl_get_shows_the_printer_columns(policies: Policies, kubectl: Kubectl) -> None:
    name = policies.create(policies.manifest({}))["metadata"]["name"]
    due = "2030-01-01T00:10:00Z"
    policies.patch_status(
        name,
        {"status": {"lastScanTime": now_rfc3339(), "evictedTotal": 5, "nextEvictionTime": due,
                    "summary": {"violations": 2, "plannedEvictions": 1, "evicted": 0}}},
    )  # fmt: skip
    for resource in (PLURAL, "rbp"):  # the short name works too
        header, row = kubectl("get", resource, name).stdout.splitlines()
        assert columns(header) == [
            "NAME", "MODE", "VIOLATIONS", "PLANNED", "EVICTED", "SCAN EVICTED", "NEXT EVICTION",
            "LAST SCAN", "AGE",
        ]  # fmt: skip
        cells = columns(row)
        # since the policy was created, beside the last scan's; the due time as a time
        assert cells[:7] == [name, "DryRun", "2", "1", "5", "0", due], row
        assert all(re.fullmatch(r"\d+[smhd]\S*", age) for age in cells[7:]), row


# --------------------------------------------------------------------------- deploy/


@pytest.fixture(scope="module")
def deploy_rbac(kubectl: Kubectl, kustomized: list[dict[str, Any]]) -> None:
    """deploy/'s Namespace, ServiceAccount, ClusterRole and binding, applied as rendered.
    Left in place: they are exactly what deploy/ installs, and the operator's tests may run
    as the same service account."""
    wanted = {
        "Namespace",
        "ServiceAccount",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
    }
    docs = [d for d in kustomized if d["kind"] in wanted]
    assert {d["kind"] for d in docs} == wanted
    kubectl(
        "apply", "--server-side", "--force-conflicts", f"--field-manager={FIELD_MANAGER}",
        "-f", "-", stdin=yaml.safe_dump_all(docs),
    )  # fmt: skip


READ_KINDS = (
    "pods", "services", "replicationcontrollers", "deployments.apps", "replicasets.apps",
    "statefulsets.apps", "daemonsets.apps", "jobs.batch", "poddisruptionbudgets.policy",
)  # fmt: skip
ALLOWED = [
    *(("list", kind, "--all-namespaces") for kind in READ_KINDS),
    ("watch", "pods", "--all-namespaces"),
    ("watch", "nodes"),
    ("list", "namespaces"),
    ("create", "pods", "--subresource=eviction", "-n", "default"),
    ("create", "events", "-n", "default"),
    ("patch", "events.events.k8s.io", "-n", "default"),
    ("patch", "pods", "-n", "default"),  # the pod-deletion-cost annotation
    ("watch", "rebalancepolicies.respread.io"),
    ("patch", "rebalancepolicies.respread.io"),
    ("patch", "rebalancepolicies.respread.io", "--subresource=status"),
    ("update", "rebalancepolicies.respread.io", "--subresource=status"),
    ("watch", "customresourcedefinitions.apiextensions.k8s.io"),
    ("create", "leases.coordination.k8s.io", "-n", NAMESPACE),
    ("get", "leases.coordination.k8s.io/respread", "-n", NAMESPACE),
    ("update", "leases.coordination.k8s.io/respread", "-n", NAMESPACE),
    ("create", "configmaps", "-n", NAMESPACE),  # the eviction ledger
    ("get", "configmaps/respread-evictions", "-n", NAMESPACE),
    ("patch", "configmaps/respread-evictions", "-n", NAMESPACE),
]
DENIED = [
    ("delete", "pods", "-n", "default"),
    ("create", "pods", "-n", "default"),
    ("update", "pods", "--subresource=status", "-n", "default"),
    ("update", "deployments.apps", "-n", "default"),
    ("patch", "deployments.apps", "--subresource=scale", "-n", "default"),
    ("delete", "poddisruptionbudgets.policy", "-n", "default"),
    ("patch", "nodes"),
    ("get", "secrets", "-n", "default"),
    ("create", "rebalancepolicies.respread.io"),
    ("delete", "rebalancepolicies.respread.io"),
    ("delete", "customresourcedefinitions.apiextensions.k8s.io"),
    ("update", "leases.coordination.k8s.io/kube-scheduler", "-n", NAMESPACE),
    ("get", "leases.coordination.k8s.io/respread", "-n", "kube-system"),
    ("delete", "leases.coordination.k8s.io/respread", "-n", NAMESPACE),
    ("get", "configmaps/kube-root-ca.crt", "-n", NAMESPACE),
    ("get", "configmaps/respread-evictions", "-n", "default"),
    ("delete", "configmaps/respread-evictions", "-n", NAMESPACE),
    ("create", "configmaps", "-n", "default"),
]


@pytest.mark.parametrize(
    ("query", "allowed"),
    [(r, True) for r in ALLOWED] + [(r, False) for r in DENIED],
    ids=[" ".join(r) for r in ALLOWED] + [f"not {' '.join(r)}" for r in DENIED],
)
def test_the_service_account_may_do_its_work_and_nothing_more(
    deploy_rbac: None, crds: None, kubectl: Kubectl, query: tuple[str, ...], allowed: bool
) -> None:
    proc = kubectl("auth", "can-i", *query, f"--as={SERVICE_ACCOUNT}", check=False)
    answer = proc.stdout.strip()
    assert answer == ("yes" if allowed else "no"), proc.stderr


def pod_from_template(kustomized: list[dict[str, Any]], name: str) -> dict[str, Any]:
    [deployment] = [d for d in kustomized if d["kind"] == "Deployment"]
    template = deployment["spec"]["template"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": template["metadata"]["labels"],
        },
        "spec": copy.deepcopy(template["spec"]),
    }


def test_the_operator_pod_passes_restricted_pod_security(
    deploy_rbac: None, kubectl: Kubectl, kustomized: list[dict[str, Any]]
) -> None:
    pod = pod_from_template(kustomized, "psa-check")
    container = pod["spec"]["containers"][0]
    assert container["args"][:2] == ["run", "--leader-elect"]
    assert {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}} in (
        container["env"]
    )
    proc = kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(pod), check=False)
    assert proc.returncode == 0, proc.stderr

    # The namespace really enforces "restricted": the same pod without its hardening is refused.
    del pod["spec"]["securityContext"], container["securityContext"]
    proc = kubectl("create", "--dry-run=server", "-f", "-", stdin=json.dumps(pod), check=False)
    assert proc.returncode != 0
    assert 'violates PodSecurity "restricted' in proc.stderr, proc.stderr


def test_the_whole_deploy_directory_passes_a_server_dry_run(
    deploy_rbac: None, crds: None, kubectl: Kubectl, kustomized: list[dict[str, Any]]
) -> None:
    """Every object of `kubectl kustomize deploy/` is valid for the API server (a dry run: no
    operator Deployment or `default` policy is left behind to interfere with other tests)."""
    kinds = sorted(d["kind"] for d in kustomized)
    # (Two Roles: the leader election Lease's and the eviction ledger's.)
    assert kinds == sorted([
        "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Deployment",
        "Namespace", "PodDisruptionBudget", "RebalancePolicy", "Role", "Role", "RoleBinding",
        "RoleBinding", "Service", "ServiceAccount",
    ])  # fmt: skip
    for d in kustomized:  # cluster-scoped custom objects carry no namespace
        if d["kind"] == "RebalancePolicy":
            assert "namespace" not in d["metadata"], d
    proc = kubectl(
        "apply", "--dry-run=server", "-f", "-", stdin=yaml.safe_dump_all(kustomized), check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"rebalancepolicy.respread.io/default \w+ \(server dry run\)", proc.stdout)


def test_the_operators_budget_covers_its_replicas_one_at_a_time(
    kustomized: list[dict[str, Any]],
) -> None:
    [deployment] = [d for d in kustomized if d["kind"] == "Deployment"]
    [budget] = [d for d in kustomized if d["kind"] == "PodDisruptionBudget"]
    assert budget["metadata"]["namespace"] == deployment["metadata"]["namespace"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    selector = budget["spec"]["selector"]["matchLabels"]
    assert selector.items() <= labels.items()
    assert budget["spec"]["maxUnavailable"] == 1 < deployment["spec"]["replicas"]

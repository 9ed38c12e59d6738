"""`respread plan --kubeconfig K --policy-name P`: the policy, its memory and the other policies
read from the cluster, as the operator holds them (the API server replaced by the objects it
would answer with)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client.exceptions import ApiException

from respread.analysis.causes import Attribution, Cause
from respread.analysis.groups import WorkloadRef
from respread.cli import UsageError, main, policy_scope
from respread.core.timestamps import parse_rfc3339
from respread.kube import client as kube_client
from respread.kube import ledger, reader
from respread.kube.client import KubeError
from respread.kube.ledger import LedgerObject
from respread.pipeline import NO_MEMORY
from respread.remedies.evict.ledger import LEDGER, Recorded, key_of, render_entries
from respread.runtime.memory import PolicyMemory
from tests.unit.test_cli import ALL, NOW, ZONE

SERVER = "https://127.0.0.1:6443"
KEY = ("shop", "ReplicaSet", "web", ZONE, "")
CARRIED = "ReplicaSet shop/web went from 6 to 3 pods since the previous scan"


def policy(name: str, spec: dict[str, Any] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "respread.io/v1alpha1",
        "kind": "RebalancePolicy",
        "metadata": {"name": name, "generation": 1, **meta},
        "spec": spec or {},
    }


def remembering(name: str) -> dict[str, Any]:
    """A policy whose status says the violation was a scale-down, and that the ReplicaSet
    lost a pod to an eviction a minute before NOW (in cooldown)."""
    return {
        **policy(name),
        "status": {
            "violations": [
                {
                    "namespace": "shop",
                    "workload": {"kind": "ReplicaSet", "name": "web"},
                    "topologyKey": ZONE,
                    "cause": "ScaleDown",
                    "causeMessage": CARRIED,
                    "since": "2026-11-22T09:00:00Z",
                }
            ],
            "cooldowns": [
                {
                    "namespace": "shop",
                    "workload": {"kind": "ReplicaSet", "name": "web"},
                    "backoffLevel": 0,
                    "lastEvictionTime": "2026-11-22T09:59:00Z",
                }
            ],
        },
    }


class FakeApi:
    class configuration:  # noqa: N801 (the client's attribute)
        host = SERVER


def cluster(monkeypatch: pytest.MonkeyPatch, policies: Callable[[], list[dict[str, Any]]]) -> None:
    """The API server answers with the CLI test's snapshot and these RebalancePolicies."""

    def read_policies(api: object) -> list[dict[str, Any]]:
        return policies()

    monkeypatch.setattr(kube_client, "api_client", lambda kubeconfig=None, context=None: FakeApi())
    monkeypatch.setattr(reader, "read_policies", read_policies)
    monkeypatch.setattr(reader, "read_cluster", lambda api, progress=None: [("x", d) for d in ALL])


def plan(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(["plan", "--kubeconfig", "k", "--now", NOW, "-q", "-o", "json", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_policy_named_is_planned_with_its_memory(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster(monkeypatch, lambda: [policy("a"), remembering("p")])
    code, out, err = plan(capsys, "--policy-name", "p")
    assert code == 0, err
    report = json.loads(out)
    assert report["policy"]["name"] == "p"
    (v,) = report["violations"]
    assert (v["cause"], v["causeMessage"]) == ("ScaleDown", CARRIED)
    assert report["evictions"] == []  # the ReplicaSet is in cooldown
    assert "cooldown" in report["deferred"][0]["deferredBy"]

    code, out, err = plan(capsys)  # without: the defaults, no memory
    assert code == 0, err
    report = json.loads(out)
    assert report["violations"][0]["cause"] == "Unknown"
    assert len(report["evictions"]) == 1


def test_an_enforce_policy_is_planned_with_the_eviction_ledger(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """As the operator plans it: the ledger in the operator's namespace holds the ReplicaSet
    another policy evicted from a minute ago; a ledger that cannot be read is warned about."""
    cluster(monkeypatch, lambda: [policy("p", {"mode": "Enforce"})])
    at = parse_rfc3339(NOW) - 60
    entry = Recorded("web-x", "uid-x", "other", "other@1", at, at + 600)
    data = {key_of(WorkloadRef("shop", "ReplicaSet", "web")): render_entries([entry])}
    read: list[tuple[str, str]] = []

    def read_ledger(api: object, namespace: str, name: str) -> LedgerObject:
        read.append((namespace, name))
        return LedgerObject(data, "7")

    monkeypatch.setattr(ledger, "read_ledger", read_ledger)
    code, out, err = plan(capsys, "--policy-name", "p", "--operator-namespace", "ops")
    assert code == 0, err
    report = json.loads(out)
    assert report["evictions"] == []
    assert report["deferred"][0]["deferredBy"].startswith(
        "cooldown: RebalancePolicy other evicted web-x 60s ago"
    )
    assert read == [("ops", LEDGER)]

    def forbidden(api: object, namespace: str, name: str) -> LedgerObject:
        raise KubeError(f"reading ConfigMap {namespace}/{name} failed: HTTP 403 Forbidden")

    monkeypatch.setattr(ledger, "read_ledger", forbidden)
    code = main(["plan", "--kubeconfig", "k", "--now", NOW, "-o", "json", "--policy-name", "p"])
    out, err = capsys.readouterr()
    assert code == 0 and len(json.loads(out)["evictions"]) == 1
    assert "respread-system/respread-evictions failed: HTTP 403" in err
    assert "planned without the eviction ledger" in err


def test_a_dry_run_policy_reads_no_ledger(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cluster(monkeypatch, lambda: [policy("p")])

    def unexpected(*args: object) -> LedgerObject:
        raise AssertionError("DryRun defers nothing for the ledger: it is not read")

    monkeypatch.setattr(ledger, "read_ledger", unexpected)
    code, out, err = plan(capsys, "--policy-name", "p")
    assert code == 0, err
    assert len(json.loads(out)["evictions"]) == 1


def test_the_memory_is_the_one_a_new_leader_reads() -> None:
    body = remembering("p")
    scope = policy_scope([body], "p", SERVER)
    assert scope.memory == PolicyMemory.from_status(body["status"]).scan
    assert scope.memory.causes[KEY] == Attribution(Cause.SCALE_DOWN, CARRIED)
    assert scope.memory.holds
    assert policy_scope([policy("p")], "p", SERVER).memory.causes == {}
    assert scope.memory != NO_MEMORY


def test_the_other_policies_are_those_the_operator_schedules() -> None:
    deleting = policy("d", deletionTimestamp="2026-11-22T09:00:00Z")
    invalid = policy("i", {"mode": "Sometimes"})
    enforce = policy("e", {"mode": "Enforce"})
    scope = policy_scope([deleting, invalid, policy("p"), enforce], "p", SERVER)
    assert scope.policy.name == "p"
    assert [o.name for o in scope.others] == ["e"]


ERRORS = [
    ("not in the cluster", ["--policy-name", "nope"], "RebalancePolicy 'nope' not found at"),
    ("invalid in the cluster", ["--policy-name", "i"], "spec.mode"),
    ("with --policy", ["--policy-name", "p", "--policy", "x.yaml"], "reads the policy from a live"),
]


@pytest.mark.parametrize(("args", "needle"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS])
def test_errors_are_one_line(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    needle: str,
) -> None:
    cluster(monkeypatch, lambda: [policy("p"), policy("i", {"mode": "Sometimes"})])
    code, out, err = plan(capsys, *args)
    assert (code, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith("respread: error:") and needle in line, line


def test_policy_name_needs_a_live_cluster(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code = main(["plan", "--snapshot", str(tmp_path), "--policy-name", "p"])
    (line,) = capsys.readouterr().err.splitlines()
    assert code == 2 and "--policy-name" in line and "--kubeconfig" in line


def test_no_crd_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_found(*args: object, **kwargs: object) -> None:
        raise ApiException(status=404, reason="Not Found")

    monkeypatch.setattr(reader, "get_json", not_found)
    with pytest.raises(KubeError, match=r"^the RebalancePolicy CRD is not installed at "):
        reader.read_policies(FakeApi())  # type: ignore[arg-type]


def test_a_policy_missing_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="RebalancePolicy 'nope' not found at " + SERVER):
        policy_scope([policy("p")], "nope", SERVER)


def test_explain_answers_as_the_operator_would_for_the_policy_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The ReplicaSet had an eviction a minute before NOW: with the policy's memory the pod
    waits for the cooldown (with its end); with the defaults and no memory it goes now."""
    cluster(monkeypatch, lambda: [remembering("p")])
    argv = ["explain", "--kubeconfig", "k", "--now", NOW, "-q", "-o", "json", "shop/web-1"]
    assert main([*argv, "--policy-name", "p"]) == 0
    move = json.loads(capsys.readouterr().out)["move"]
    assert move["verdict"] == "Later"
    cooldown = next(r for r in move["reasons"] if r["kind"] == "Cooldown")
    assert cooldown["until"] == "2026-11-22T10:09:00Z"
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["move"] == {
        "verdict": "Now",
        "step": 1,
        "predictedNode": "n2",
        "reasons": [],
    }

"""The `respread` command line (design.md, "The command line"): plan and explain on snapshots.

The snapshot: nodes n1 (zone z1) and n2 (zone z2); ReplicaSet shop/web with three replicas, all
on n1, each with a hard zone constraint of maxSkew 1. Skew 3 > 1: one violation, fixed by one
move (2/1), and the default policy (maxPerWorkload 1) plans exactly that one eviction.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from respread.cli import main
from respread.core.model import OwnerRef
from tests.support.builders import WEB, hard, pod, replica_set, zone_node
from tests.support.constants import NOW, ZONE
from tests.support.manifests import Json, manifest
from tests.support.tables import cases

CREATED = 1767225600.0  # 2026-01-01T00:00:00Z
SPREAD = (hard(ZONE, WEB),)


def node_doc(name: str, zone: str) -> Json:
    return manifest(zone_node(name, zone))


def pod_doc(name: str, node: str, max_skew: int = 1, owner: str = "ReplicaSet/web") -> Json:
    """A pod of shop/web bound to ``node``, spread by zone (maxSkew 0 makes it malformed)."""
    kind, owner_name = owner.split("/")
    spread = (hard(ZONE, WEB, max_skew=max_skew),)
    owned = OwnerRef(kind, owner_name)
    return manifest(
        pod(
            name,
            node,
            {"app": "web"},
            constraints=spread,
            namespace="shop",
            owner=owned,
            created=CREATED,
        )
    )


REPLICASET = manifest(replica_set("web", 3, namespace="shop", constraints=SPREAD, created=CREATED))
NODES = [node_doc("n1", "z1"), node_doc("n2", "z2")]
PODS = [pod_doc("web-1", "n1"), pod_doc("web-2", "n1"), pod_doc("web-3", "n1")]
ALL = [*NODES, REPLICASET, *PODS]


@pytest.fixture
def snapshot(tmp_path: Path) -> Path:
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(ALL), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def policy_yaml(path: Path, name: str, spec: dict[str, Any]) -> Path:
    """A RebalancePolicy file: ``name`` with ``spec``."""
    doc = {
        "apiVersion": "respread.io/v1alpha1",
        "kind": "RebalancePolicy",
        "metadata": {"name": name},
        "spec": spec,
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def plan_json(capsys: pytest.CaptureFixture[str], *snapshot_args: str) -> dict[str, Any]:
    code, out, err = run(capsys, "plan", *snapshot_args, "--now", NOW, "-o", "json")
    assert code == 0, err
    return json.loads(out)  # type: ignore[no-any-return]


# --------------------------------------------------------------------------------------------
# plan


def test_plan_text(capsys: pytest.CaptureFixture[str], snapshot: Path) -> None:
    code, out, err = run(capsys, "plan", "--snapshot", str(snapshot), "--now", NOW)
    assert code == 0
    assert err == ""
    assert out.strip()
    assert ZONE in out
    assert "shop/web" in out
    assert any(f"shop/web-{i}" in out for i in (1, 2, 3))  # the planned eviction
    assert not out.lstrip().startswith("{")


def test_plan_json_report(capsys: pytest.CaptureFixture[str], snapshot: Path) -> None:
    report = plan_json(capsys, "--snapshot", str(snapshot))
    assert report["apiVersion"] == "respread.io/v1alpha1"
    assert report["kind"] == "RebalanceReport"
    summary = report["summary"]
    for key in (
        "nodes",
        "pods",
        "constraintGroups",
        "violations",
        "unfixable",
        "plannedEvictions",
        "blocked",
    ):
        assert key in summary, key
    assert summary["nodes"] == 2
    assert summary["pods"] == 3
    assert summary["violations"] == 1
    assert summary["unfixable"] == 0
    assert summary["plannedEvictions"] == 1
    assert summary["blocked"] == 0

    (violation,) = report["violations"]
    assert violation["namespace"] == "shop"
    assert violation["topologyKey"] == ZONE
    assert violation["maxSkew"] == 1
    assert violation["domains"] == {"z1": 3, "z2": 0}
    assert violation["globalMinimum"] == 0

    (eviction,) = report["evictions"]
    assert eviction["namespace"] == "shop"
    assert eviction["pod"] in {"web-1", "web-2", "web-3"}
    assert eviction["node"] == "n1"
    assert eviction["fromDomain"] == {ZONE: "z1"}
    assert eviction["toDomain"] == {ZONE: "z2"}
    assert eviction["reason"]
    assert report["skipped"] == []
    assert report["predicted"]["violations"] == 0


def test_plan_yaml_is_the_json_report(capsys: pytest.CaptureFixture[str], snapshot: Path) -> None:
    as_json = plan_json(capsys, "--snapshot", str(snapshot))
    code, out, err = run(capsys, "plan", "--snapshot", str(snapshot), "--now", NOW, "-o", "yaml")
    assert code == 0, err
    assert yaml.safe_load(out) == as_json


def test_plan_balanced_snapshot_has_no_violation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "balanced.yaml"
    path.write_text(
        yaml.safe_dump_all([*NODES, REPLICASET, pod_doc("web-1", "n1"), pod_doc("web-2", "n2")])
    )
    report = plan_json(capsys, "--snapshot", str(path))
    assert report["summary"]["violations"] == 0
    assert report["summary"]["plannedEvictions"] == 0
    assert report["violations"] == []
    assert report["evictions"] == []


def test_plan_reads_a_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    folder = tmp_path / "snap"
    (folder / "workloads").mkdir(parents=True)
    (folder / "nodes.yaml").write_text(yaml.safe_dump_all(NODES))
    (folder / "workloads" / "rs.yml").write_text(yaml.safe_dump(REPLICASET))
    (folder / "pods.json").write_text(json.dumps({"kind": "PodList", "items": PODS}))
    (folder / "README.txt").write_text("not a manifest: kind: Pod")
    report = plan_json(capsys, "--snapshot", str(folder))
    assert report["summary"]["nodes"] == 2
    assert report["summary"]["pods"] == 3
    assert report["summary"]["violations"] == 1


def test_plan_reads_several_snapshots(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    nodes, pods = tmp_path / "nodes.yaml", tmp_path / "pods.yaml"
    nodes.write_text(yaml.safe_dump_all(NODES))
    pods.write_text(yaml.safe_dump_all([REPLICASET, *PODS]))
    report = plan_json(capsys, "--snapshot", str(nodes), "--snapshot", str(pods))
    assert (report["summary"]["nodes"], report["summary"]["pods"]) == (2, 3)


def test_plan_reads_stdin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = json.dumps({"apiVersion": "v1", "kind": "List", "items": ALL})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    report = plan_json(capsys, "--snapshot", "-")
    assert report["summary"]["nodes"] == 2
    assert report["summary"]["pods"] == 3
    assert report["summary"]["plannedEvictions"] == 1


def test_plan_with_policy_file(
    capsys: pytest.CaptureFixture[str], snapshot: Path, tmp_path: Path
) -> None:
    policy = policy_yaml(tmp_path / "policy.yaml", "none", {"eviction": {"maxPerRun": 0}})
    report = plan_json(capsys, "--snapshot", str(snapshot), "--policy", str(policy))
    assert report["summary"]["violations"] == 1
    assert report["summary"]["plannedEvictions"] == 0
    assert report["evictions"] == []


def test_plan_excluded_namespace_is_not_planned(
    capsys: pytest.CaptureFixture[str], snapshot: Path, tmp_path: Path
) -> None:
    spec = {"selector": {"namespaces": {"exclude": ["shop"]}}}
    policy = policy_yaml(tmp_path / "policy.yaml", "skip-shop", spec)
    report = plan_json(capsys, "--snapshot", str(snapshot), "--policy", str(policy))
    assert report["summary"]["plannedEvictions"] == 0


# --------------------------------------------------------------------------------------------
# Errors: exit status 2, one line on stderr, no traceback


def write(path: Path, docs: list[Any]) -> Path:
    path.write_text(yaml.safe_dump_all(docs))
    return path


def bad_policy(tmp: Path) -> Path:
    spec = {"eviction": {"maxPerRun": -1}}
    doc = {"apiVersion": "respread.io/v1alpha1", "kind": "RebalancePolicy", "spec": spec}
    return write(tmp / "policy.yaml", [doc])


def configmap_policy(tmp: Path) -> Path:
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}}
    return write(tmp / "policy.yaml", [doc])


def two_policies(tmp: Path) -> Path:
    doc = {"apiVersion": "respread.io/v1alpha1", "kind": "RebalancePolicy"}
    return write(tmp / "policy.yaml", [doc, doc])


POLICY_HEAD = {
    "apiVersion": "respread.io/v1alpha1",
    "kind": "RebalancePolicy",
    "metadata": {"name": "p"},
}
ALIAS_BOMB = (
    b"a: &a [x, x, x, x, x, x, x, x, x]\n"
    + b"".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n".encode()
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    )
    + b"kind: RebalancePolicy\n"
)
NOT_UTF8_POLICY = b"kind: RebalancePolicy\nx: \xff\n"


def raw(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


Argv = Callable[[Path, Path], list[str]]


def on_snapshot(command: str, *args: str, policy: Callable[[Path], Path] | None = None) -> Argv:
    """``<command> --snapshot <the snapshot> [--policy <policy(tmp_path)>] <args>``."""

    def argv(tmp: Path, snap: Path) -> list[str]:
        policy_args = ["--policy", str(policy(tmp))] if policy else []
        return [command, "--snapshot", str(snap), *policy_args, *args]

    return argv


def cron_policy(tmp: Path) -> Path:
    spec = {"schedule": {"cron": "*/\u00b2 * * * *"}}  # a superscript two
    return write(tmp / "p.yaml", [{**POLICY_HEAD, "spec": spec}])


ERRORS = [
    # (id, argv builder from (tmp_path, snapshot path), text the error line must contain)
    (
        "missing snapshot file",
        lambda tmp, snap: ["plan", "--snapshot", str(tmp / "nope.yaml")],
        "nope.yaml",
    ),
    (
        "empty snapshot directory",
        lambda tmp, snap: ["plan", "--snapshot", str((tmp / "empty").resolve())],
        "empty",
    ),
    (
        "snapshot with no Node and no Pod",
        lambda tmp, snap: [
            "plan",
            "--snapshot",
            str(write(tmp / "cm.yaml", [{"kind": "ConfigMap", "metadata": {"name": "x"}}])),
        ],
        "",
    ),
    (
        "invalid policy names the field",
        on_snapshot("plan", policy=bad_policy),
        "spec.eviction.maxPerRun",
    ),
    (
        "policy file without a RebalancePolicy",
        on_snapshot("plan", policy=configmap_policy),
        "RebalancePolicy",
    ),
    (
        "policy file with two RebalancePolicies",
        on_snapshot("plan", policy=two_policies),
        "RebalancePolicy",
    ),
    ("missing policy file", on_snapshot("plan", policy=lambda tmp: tmp / "p.yaml"), "p.yaml"),
    ("bad --now", on_snapshot("plan", "--now", "yesterday"), "yesterday"),
    ("explain: POD without namespace", on_snapshot("explain", "web-1"), "web-1"),
    ("explain: too many slashes", on_snapshot("explain", "shop/web-1/x"), "shop/web-1/x"),
    ("explain: empty namespace", on_snapshot("explain", "/web-1"), "/web-1"),
    ("explain: empty pod name", on_snapshot("explain", "shop/"), "shop/"),
    ("explain: pod not in the snapshot", on_snapshot("explain", "shop/web-9"), "shop/web-9"),
    ("explain: pod in another namespace", on_snapshot("explain", "default/web-1"), "default/web-1"),
    (
        "explain: invalid policy",
        on_snapshot("explain", "shop/web-1", policy=bad_policy),
        "spec.eviction.maxPerRun",
    ),
    ("explain: -o without a value", on_snapshot("explain", "-o"), "-o"),
    ("explain: -o json but no pod", on_snapshot("explain", "-o", "json"), "NAMESPACE/POD"),
    ("explain: a pod that looks like an option", on_snapshot("explain", "--", "-o/x"), "-o/x"),
    (
        "snapshot over --max-snapshot-size",
        on_snapshot("plan", "--max-snapshot-size", "1Ki"),
        "--max-snapshot-size",
    ),
    ("bad --max-snapshot-size", on_snapshot("plan", "--max-snapshot-size", "lots"), "lots"),
    (
        "non-UTF-8 snapshot",
        lambda tmp, snap: ["plan", "--snapshot", str(raw(tmp / "latin1.yaml", b"a: \xe9\n"))],
        "latin1.yaml: not UTF-8 text (byte 0xe9 at offset 3)",
    ),
    (
        "non-UTF-8 policy",
        on_snapshot("plan", policy=lambda tmp: raw(tmp / "p.yaml", NOT_UTF8_POLICY)),
        "p.yaml: not UTF-8",
    ),
    (
        "policy alias bomb",
        on_snapshot("plan", policy=lambda tmp: raw(tmp / "p.yaml", ALIAS_BOMB)),
        "aliases",
    ),
    (
        "cron with a superscript digit",
        on_snapshot("plan", policy=cron_policy),
        "spec.schedule.cron",
    ),
    ("unknown option", on_snapshot("plan", "--frobnicate"), "--frobnicate"),
    (
        "explain: missing snapshot",
        lambda tmp, snap: ["explain", "--snapshot", str(tmp / "gone"), "shop/web-1"],
        "gone",
    ),
]


@cases(("argv", "needle"), ERRORS)
def test_errors_are_one_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    snapshot: Path,
    argv: Argv,
    needle: str,
) -> None:
    (tmp_path / "empty").mkdir()
    code, out, err = run(capsys, *argv(tmp_path, snapshot))
    assert code == 2
    assert out == ""
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("respread: error:")
    assert needle in lines[0]
    assert "Traceback" not in err


@pytest.mark.parametrize("size", ["100Gi", "1e25", "9223372036854775807"])
def test_a_huge_limit_allocates_nothing_ahead(
    capsys: pytest.CaptureFixture[str], snapshot: Path, size: str
) -> None:
    code, out, err = run(
        capsys, "plan", "--snapshot", str(snapshot), "--max-snapshot-size", size, "--now", NOW
    )
    assert (code, err) == (0, "")
    assert "web" in out


def test_stdin_over_the_limit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x" * (9 * 2**20))))
    code, out, err = run(capsys, "plan", "--snapshot", "-", "--max-snapshot-size", "8Mi")
    assert (code, out) == (2, "")
    assert err == (
        "respread: error: standard input is larger than the snapshot limit of 8388608 bytes"
        " (raise it with --max-snapshot-size)\n"
    )


def test_non_utf8_stdin_is_one_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"kind: Node\n\xc3\x28")))
    code, out, err = run(capsys, "plan", "--snapshot", "-")
    assert (code, out) == (2, "")
    assert err == (
        "respread: error: cannot read <stdin>: not UTF-8 text (byte 0xc3 at offset 11) at line 2\n"
    )


def test_same_snapshot_twice_counts_once(
    capsys: pytest.CaptureFixture[str], snapshot: Path
) -> None:
    code, out, err = run(
        capsys,
        "plan",
        "--snapshot",
        str(snapshot),
        "--snapshot",
        str(snapshot),
        "--now",
        NOW,
        "-o",
        "json",
    )
    assert code == 0
    report = json.loads(out)
    assert (report["summary"]["nodes"], report["summary"]["pods"]) == (2, 3)
    warnings = err.splitlines()
    assert len(warnings) == 6  # two nodes, a ReplicaSet, three pods: one warning each
    assert f"in {snapshot} (object 1) and in {snapshot} (named again) (object 1)" in warnings[0]


# --------------------------------------------------------------------------------------------
# Warnings: a malformed object is left out, named, and the run goes on


def test_malformed_object_is_a_warning(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = write(tmp_path / "good.yaml", ALL)
    bad = write(tmp_path / "bad.yaml", [pod_doc("broken", "n2", max_skew=0)])
    code, out, err = run(
        capsys, "plan", "--snapshot", str(good), "--snapshot", str(bad), "--now", NOW, "-o", "json"
    )
    assert code == 0
    warnings = [line for line in err.splitlines() if line]
    assert len(warnings) == 1, err
    (line,) = warnings
    assert line.startswith("respread: warning:")
    for part in ("bad.yaml", "Pod", "shop/broken", "spec.topologySpreadConstraints[0].maxSkew"):
        assert part in line, part
    report = json.loads(out)
    assert report["summary"]["pods"] == 3  # the broken pod is left out


def test_quiet_suppresses_warnings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = write(tmp_path / "snap.yaml", [*ALL, pod_doc("broken", "n2", max_skew=0)])
    code, out, err = run(capsys, "plan", "-q", "--snapshot", str(path), "--now", NOW)
    assert code == 0
    assert err == ""
    assert out


def test_invalid_yaml_file_is_a_warning(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    good = write(tmp_path / "good.yaml", ALL)
    bad = tmp_path / "broken.yaml"
    bad.write_text("kind: Pod\nmetadata: {name: [oops\n")
    code, out, err = run(
        capsys, "plan", "--snapshot", str(good), "--snapshot", str(bad), "--now", NOW, "-o", "json"
    )
    assert code == 0
    (line,) = err.splitlines()
    assert line.startswith("respread: warning:")
    assert "broken.yaml" in line
    assert json.loads(out)["summary"]["pods"] == 3


# --------------------------------------------------------------------------------------------
# explain


def test_explain_json(capsys: pytest.CaptureFixture[str], snapshot: Path) -> None:
    code, out, err = run(capsys, "explain", "--snapshot", str(snapshot), "shop/web-1", "-o", "json")
    assert code == 0, err
    ex = json.loads(out)
    assert ex["pod"] == "shop/web-1"
    # Judged as if placed again: without web-1, z1=2, z2=0, min 0.
    (c,) = ex["constraints"]
    assert c["topologyKey"] == ZONE
    assert c["maxSkew"] == 1
    assert c["minDomains"] == 1
    assert c["domains"] == {"z1": 2, "z2": 0}
    assert c["globalMinimum"] == 0
    nodes = {n["name"]: n for n in ex["nodes"]}
    assert set(nodes) == {"n1", "n2"}
    for n in nodes.values():
        assert set(n) >= {"spreadFilter", "feasible", "reasons"}
        assert isinstance(n["reasons"], list)
    assert nodes["n1"]["spreadFilter"] == "Unschedulable"  # 2 + 1 - 0 > 1
    assert nodes["n1"]["feasible"] is False
    assert nodes["n1"]["reasons"]
    assert nodes["n2"]["spreadFilter"] == "Success"
    assert nodes["n2"]["feasible"] is True
    assert nodes["n2"]["reasons"] == []


def test_explain_json_missing_key_is_unresolvable(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bare = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n3"}}
    path = write(tmp_path / "snap.yaml", [*ALL, bare])
    code, out, err = run(capsys, "explain", "--snapshot", str(path), "shop/web-2", "-o", "json")
    assert code == 0, err
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert nodes["n3"]["spreadFilter"] == "UnschedulableAndUnresolvable"
    assert nodes["n3"]["feasible"] is False


def test_explain_text(capsys: pytest.CaptureFixture[str], snapshot: Path) -> None:
    code, out, err = run(capsys, "explain", "--snapshot", str(snapshot), "shop/web-1")
    assert code == 0, err
    assert "shop/web-1" in out
    assert "n1" in out
    assert "n2" in out
    assert "Unschedulable" in out


# --------------------------------------------------------------------------------------------
# remedies and the deletion-cost order


def policy_file(tmp_path: Path, remediation: dict[str, Any]) -> Path:
    return policy_yaml(tmp_path / "remediation.yaml", "remedies", {"remediation": remediation})


def test_by_default_eviction_is_the_remedy_and_no_cost_is_ordered(
    capsys: pytest.CaptureFixture[str], snapshot: Path
) -> None:
    report = plan_json(capsys, "--snapshot", str(snapshot))
    (violation,) = report["violations"]
    assert violation["remedy"] == "Evict"
    assert violation["remedies"][2] == {
        "name": "Surge",
        "enabled": False,
        "applies": False,
        "reason": "a ReplicaSet is not surged (Deployments only)",
    }
    assert violation["remedies"][:2] == [
        {
            "name": "Evict",
            "enabled": True,
            "applies": True,
            "reason": "evicting the misplaced pods fixes it",
        },
        {
            "name": "DeletionCost",
            "enabled": False,
            "applies": True,
            "reason": "the next scale-in removes the misplaced pods first and keeps maxSkew",
        },
    ]
    assert report["deletionCost"] == {
        "enabled": False,
        "orders": [],
        "excluded": [],
        "patches": [],
        "deferredPatches": 0,
    }


def test_plan_shows_the_deletion_cost_order(
    capsys: pytest.CaptureFixture[str], snapshot: Path, tmp_path: Path
) -> None:
    policy = policy_file(tmp_path, {"deletionCost": {"enabled": True}})
    report = plan_json(capsys, "--snapshot", str(snapshot), "--policy", str(policy))
    costs = report["deletionCost"]
    assert costs["enabled"] is True
    (order,) = costs["orders"]
    assert order["namespace"] == "shop"
    assert order["workload"] == {"kind": "ReplicaSet", "name": "web"}
    assert order["replicaSet"] == "web"
    assert order["state"] == "Changes"
    assert order["pods"] == 3
    # 3 in z1, 0 in z2: violated until two pods have gone
    assert [e["withinMaxSkew"] for e in order["order"]] == [False, True, True]
    assert order["stepsWithinMaxSkew"] == 0
    assert [e["desiredCost"] for e in order["order"]] == [1, 2, 3]
    assert all(e["currentCost"] is None and e["changed"] for e in order["order"])
    assert all(e["domains"] == {ZONE: "z1"} and e["tier"] == "Ready" for e in order["order"])
    assert [p["to"] for p in costs["patches"]] == [1, 2, 3]
    assert costs["deferredPatches"] == 0
    assert report["violations"][0]["remedy"] == "Evict"

    code, out, err = run(
        capsys, "plan", "--snapshot", str(snapshot), "--policy", str(policy), "--now", NOW
    )
    assert code == 0, err
    assert "Deletion-cost order" in out
    assert "remedies: Evict (chosen), DeletionCost (applies)" in out
    assert "Would write 3 pod-deletion-cost annotation(s) this scan" in out


def test_evict_false_defers_every_eviction(
    capsys: pytest.CaptureFixture[str], snapshot: Path, tmp_path: Path
) -> None:
    policy = policy_file(tmp_path, {"evict": False, "deletionCost": {"enabled": True}})
    report = plan_json(capsys, "--snapshot", str(snapshot), "--policy", str(policy))
    assert report["evictions"] == []
    assert report["summary"]["plannedEvictions"] == 0
    assert any(d["deferredBy"] == "spec.remediation.evict is false" for d in report["deferred"])
    (violation,) = report["violations"]
    assert violation["remedy"] == "DeletionCost"
    assert violation["fixable"] is True  # eviction could fix it; the policy does not evict
    assert violation["violatingPodsAfterRun"] == violation["violatingPods"]
    assert report["predicted"]["violations"] == 1


def test_statefulsets_are_reported_as_not_ordered(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pods = [pod_doc(f"db-{i}", "n1", owner="StatefulSet/db") for i in range(2)]
    path = tmp_path / "sts.yaml"
    path.write_text(yaml.safe_dump_all([*NODES, *pods]), encoding="utf-8")
    policy = policy_file(tmp_path, {"deletionCost": {"enabled": True}})
    report = plan_json(capsys, "--snapshot", str(path), "--policy", str(policy))
    costs = report["deletionCost"]
    assert costs["orders"] == []
    assert costs["patches"] == []
    (excluded,) = costs["excluded"]
    assert excluded["workload"] == {"kind": "StatefulSet", "name": "db"}
    assert excluded["pods"] == 2
    assert "StatefulSet" in excluded["reason"]
    (violation,) = report["violations"]
    remedies = {r["name"]: r for r in violation["remedies"]}
    assert remedies["DeletionCost"]["applies"] is False

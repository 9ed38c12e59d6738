"""What `respread plan` says is true: an incomplete snapshot or an empty selection is never an
all-clear (issue 21).

The snapshot: examples/zone-scale-down (Deployment shop/web, 4/1/1 over three zones), whole or
without some of its objects.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from respread.cli import main
from tests.support.constants import NOW
from tests.support.paths import REPO
from tests.support.tables import cases

EXAMPLE = REPO / "examples" / "zone-scale-down" / "cluster.yaml"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def without(tmp_path: Path, drop: Callable[[dict[str, Any]], bool]) -> Path:
    """The example without the objects ``drop`` (a predicate on each document) accepts."""
    docs = [d for d in yaml.safe_load_all(EXAMPLE.read_text()) if d and not drop(d)]
    path = tmp_path / "partial.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


def test_pods_without_any_node_are_an_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    partial = without(tmp_path, lambda d: d["kind"] == "Node")
    code, out, err = run(capsys, "plan", "--snapshot", str(partial), "--now", NOW)
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert "holds no Node object (6 Pod(s))" in err


def test_a_pod_on_a_node_the_snapshot_lacks_is_named_and_its_group_incomplete(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    partial = without(
        tmp_path, lambda d: d["kind"] == "Node" and d["metadata"]["name"] == "ip-10-0-2-10"
    )
    code, out, err = run(capsys, "plan", "--snapshot", str(partial), "--now", NOW)
    assert code == 0
    assert (
        "respread: warning: incomplete input: pod shop/web-7c9d5f-f06x is bound to node "
        "ip-10-0-2-10, which the input does not hold" in err
    )
    assert "Incomplete input: 1 pod(s)" in out
    assert "counts incomplete]" in out
    code, out, _ = run(capsys, "plan", "--snapshot", str(partial), "--now", NOW, "-o", "json")
    report = json.loads(out)
    assert report["coverage"]["complete"] is False
    assert report["coverage"]["podsOnUnknownNodes"] == [
        {"namespace": "shop", "pod": "web-7c9d5f-f06x", "node": "ip-10-0-2-10"}
    ]
    assert [v.get("incomplete") for v in report["violations"]] == [True]


def test_a_complete_snapshot_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "plan", "--snapshot", str(EXAMPLE), "--now", NOW, "-o", "json")
    assert code == 0
    coverage = json.loads(out)["coverage"]
    assert coverage == {
        "complete": True,
        "podsOnUnknownNodes": [],
        "incompleteGroups": [],
        "podsSelected": 6,
    }
    assert "warning" not in err


def test_a_namespace_that_does_not_exist_is_no_all_clear(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = run(capsys, "plan", "--snapshot", str(EXAMPLE), "--now", NOW, "-n", "shopp")
    assert code == 0
    assert "No topology spread violations" not in out
    assert (
        "The policy selects no pod: the namespace(s) selected by name (shopp) do not exist" in out
    )
    assert "respread: warning: selection: the policy selects no pod" in err


BALANCED = REPO / "tests" / "scenarios" / "conformance" / "descheduler"
PARTIAL = REPO / "tests" / "golden" / "clusters" / "partial-node-missing.yaml"


@cases(
    ("argv", "code"),
    [
        ("violations found", ["--snapshot", str(EXAMPLE)], 3),
        (
            "none found",
            ["--snapshot", str(BALANCED / "01-two-domains-2-1-balanced" / "cluster.yaml")],
            0,
        ),
        ("none found, but the policy selects no pod", ["--snapshot", str(EXAMPLE), "-n", "x"], 4),
        ("a bad input stays an error", ["--snapshot", str(REPO / "nosuch.yaml")], 2),
    ],
)
def test_exit_code(capsys: pytest.CaptureFixture[str], argv: list[str], code: int) -> None:
    assert run(capsys, "plan", *argv, "--now", NOW, "-q", "--exit-code")[0] == code
    assert run(capsys, "plan", *argv, "--now", NOW, "-q")[0] == (2 if code == 2 else 0)


def test_exit_code_without_violations_on_an_incomplete_input(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Nothing violated in what the snapshot holds, but a pod's node is missing: exit 4."""
    balanced = BALANCED / "01-two-domains-2-1-balanced" / "cluster.yaml"
    docs = [d for d in yaml.safe_load_all(balanced.read_text()) if d]
    pods = [d for d in docs if d["kind"] == "Pod"]
    pods[0]["spec"]["nodeName"] = "gone"
    path = tmp_path / "partial.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    code, out, _ = run(capsys, "plan", "--snapshot", str(path), "-q", "--exit-code")
    assert code == 4
    assert "No topology spread violations in what the input holds" in out


def test_compact_is_a_line_per_violation(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "plan", "--snapshot", str(PARTIAL), "--now", NOW, "-o", "compact")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == [
        "NAMESPACE", "WORKLOAD", "TOPOLOGY", "KEY", "SKEW", "MAXSKEW", "MISPLACED", "VERDICT",
        "CAUSE", "WOULD", "EVICT", "LATER",
    ]  # fmt: skip
    assert lines[1].split() == [
        "shop", "Deployment/web", "topology.kubernetes.io/zone", "4", "1", "4/5", "fixable*",
        "NodeLoss", "1", "1",
    ]  # fmt: skip
    assert lines[2].startswith("Incomplete input: 1 pod(s)")


def test_offline_plans_say_would_whatever_the_mode(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "enforce.yaml"
    policy.write_text(
        "apiVersion: respread.io/v1alpha1\nkind: RebalancePolicy\nmetadata: {name: p}\n"
        "spec: {mode: Enforce}\n"
    )
    _, out, _ = run(
        capsys, "plan", "--snapshot", str(EXAMPLE), "--policy", str(policy), "--now", NOW
    )
    assert "Would evict 1 pod(s), in this order (mode Enforce: the operator evicts them" in out
    assert "Evicting" not in out


def test_pods_too_young_make_a_violation_waiting_with_when(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The example's pods were created at 2026-11-20T08:00:00Z; under minPodAge 1h, half an hour
    later, the violation waits for them (it is not NOT FIXABLE), in every output form."""
    policy = tmp_path / "young.yaml"
    policy.write_text(
        "apiVersion: respread.io/v1alpha1\nkind: RebalancePolicy\nmetadata: {name: p}\n"
        "spec: {eviction: {minPodAge: 1h}}\n"
    )
    argv = ["plan", "--snapshot", str(EXAMPLE), "--policy", str(policy)]
    at = ["--now", "2026-11-20T08:30:00Z"]
    code, out, _ = run(capsys, *argv, *at, "--exit-code")
    assert code == 3
    assert "1 violation(s): 1 waiting for holds to lift." in out
    assert "misplaced, WAITING]" in out and "NOT FIXABLE" not in out
    assert (
        "waiting: eviction fixes it once these holds lift: minPodAge: 4 pod(s) too young, the "
        "first old enough at 2026-11-20T09:00:00Z"
    ) in out
    _, out, _ = run(capsys, *argv, *at, "-o", "compact")
    assert out.splitlines()[1].split()[6] == "waiting"
    _, out, _ = run(capsys, *argv, *at, "-o", "json")
    [violation] = json.loads(out)["violations"]
    assert (violation["verdict"], violation["fixable"]) == ("Waiting", False)
    # An hour later the same pods are old enough: fixable, one eviction now.
    _, out, _ = run(capsys, *argv, "--now", "2026-11-20T09:30:00Z", "-o", "json")
    report = json.loads(out)
    assert report["violations"][0]["verdict"] == "Fixable"
    assert len(report["evictions"]) == 1

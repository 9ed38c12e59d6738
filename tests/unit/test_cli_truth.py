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

"""The hand-made hostile corpus (tests/fuzz/corpus/, written by make_corpus.py), each file run
through the real command in its own process under a 1 GiB memory limit and a timeout.

Snapshots are read from a file and from standard input; policies are read next to a good
snapshot. Every run must end as runner.check requires: exit 0 with JSON, or exit 2 with one
error line, every warning naming the file, and the object's kind, name and field.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fuzz.runner import check, run_subprocess
from tests.support.constants import NOW

CORPUS = Path(__file__).parent / "corpus"
ROOT = Path(__file__).parents[2]
GOOD = ROOT / "examples" / "zone-scale-down" / "cluster.yaml"
SNAPSHOTS = sorted((CORPUS / "snapshots").iterdir())
POLICIES = sorted((CORPUS / "policies").iterdir())


def test_the_corpus_is_there() -> None:
    assert len(SNAPSHOTS) >= 50
    assert len(POLICIES) >= 14


@pytest.mark.parametrize("path", SNAPSHOTS, ids=[p.name for p in SNAPSHOTS])
def test_snapshot_file(path: Path) -> None:
    # With a good snapshot next to it, so that the hostile file's own fate is what shows.
    outcome = run_subprocess(
        ["plan", "--snapshot", str(path), "--snapshot", str(GOOD), "--now", NOW, "-o", "json"]
    )
    check(outcome, (str(path), str(GOOD)))


@pytest.mark.parametrize(
    "path", [p for p in SNAPSHOTS if p.stat().st_size < 300_000][::3], ids=lambda p: p.name
)
def test_snapshot_on_stdin(path: Path) -> None:
    check(run_subprocess(["plan", "--snapshot", "-", "-o", "json"], stdin=path.read_bytes()))


@pytest.mark.parametrize("path", POLICIES, ids=[p.name for p in POLICIES])
def test_policy_file(path: Path) -> None:
    outcome = run_subprocess(
        ["plan", "--snapshot", str(GOOD), "--policy", str(path), "--now", NOW, "-o", "json"]
    )
    check(outcome, (str(GOOD),))
    assert outcome.returncode == 2 or path.name == "policy-null-everything.yaml", outcome.stderr


def test_explain_arguments() -> None:
    for argv in (
        ["explain", "--snapshot", str(GOOD), "-o"],
        ["explain", "--snapshot", str(GOOD), "-o", "json"],
        ["explain", "--snapshot", "-o", "json", "a/b"],
    ):
        outcome = run_subprocess(argv)
        assert outcome.returncode == 2
        assert outcome.stderr.count("\n") == 1, outcome.stderr
        assert outcome.stderr.startswith("respread: error: ")

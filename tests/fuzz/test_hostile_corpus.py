"""The hand-made hostile corpus (tests/fuzz/corpus/, written by make_corpus.py), each file run
through the real command in its own process under a 1 GiB memory limit and a timeout.

Snapshots are read from a file and from standard input; policies are read next to a good
snapshot. Every run must end as runner.check requires: exit 0 with JSON, or exit 2 with one
error line, every warning naming the file, and the object's kind, name and field.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from respread.inputs.objects import load_texts
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


# Policies of the corpus that are valid after all (each with the reason); every other is refused.
VALID_POLICIES = {
    "policy-null-everything.yaml": "a null is dropped and defaulted, as the API server drops it",
    "policy-label-int-key.yaml": "kubectl reads the key 1 as the string '1', a valid label key",
    "policy-cron-zero-padded.yaml": "cron and the CRD read 0...05 as 5",
    "policy-bom-after-separator.yaml": "a byte order mark after --- is dropped",
}


@pytest.mark.parametrize("path", POLICIES, ids=[p.name for p in POLICIES])
def test_policy_file(path: Path) -> None:
    outcome = run_subprocess(
        ["plan", "--snapshot", str(GOOD), "--policy", str(path), "--now", NOW, "-o", "json"]
    )
    check(outcome, (str(GOOD),))
    assert (outcome.returncode == 0) is (path.name in VALID_POLICIES), outcome.stderr


# What is read of some files: (nodes, pods, problems). Only the object or the document at
# fault is left out (issue 22), never the file.
READ = {
    "kubectl-unquoted.yaml": (1, 1, 0),
    "bom-after-separator.yaml": (1, 2, 0),
    "one-bad-document.yaml": (1, 1, 1),
    "tag-bool-maybe.yaml": (0, 1, 1),
    "tag-int-empty.yaml": (0, 0, 1),
    "tag-null-text.yaml": (0, 0, 1),
    "key-null.yaml": (0, 0, 1),
    "merge-not-a-mapping.yaml": (0, 0, 1),
    "control-chars-in-names.yaml": (1, 1, 0),
    "list-cut-short.json": (2, 0, 1),
    "list-item-nan.json": (1, 0, 1),
    "list-item-5000-digits.json": (1, 0, 1),
    "json-then-yaml.json": (1, 1, 0),
    "anchors-10001.yaml": (0, 0, 1),
    "list-of-50000-empty-items.yaml": (0, 0, 0),
}


@pytest.mark.parametrize(("name", "counts"), READ.items(), ids=list(READ))
def test_what_is_read_of_a_file(name: str, counts: tuple[int, int, int]) -> None:
    path = CORPUS / "snapshots" / name
    loaded = load_texts([(name, path.read_text())])
    state = loaded.state
    assert (len(state.nodes), len(state.pods), len(loaded.problems)) == counts, loaded.problems


def test_reasons_stay_short_however_many_budgets() -> None:
    path = CORPUS / "snapshots" / "budgets-500-over-200-pods.json"
    outcome = run_subprocess(["plan", "--snapshot", str(path), "--now", NOW, "-o", "json", "-q"])
    check(outcome, (str(path),))
    assert "budget-3" not in outcome.stdout  # three named, the rest counted
    assert "and 497 more" in outcome.stdout
    assert len(outcome.stdout) < 2_000_000


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

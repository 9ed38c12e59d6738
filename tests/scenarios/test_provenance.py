"""The repository's copy of the conformance scenarios is the steering repository's, unchanged.

tests/scenarios/conformance was copied from shared/scenarios (PROVENANCE.md); where a steering
checkout stands beside this repository, every file must be equal, so a newer upstream is
noticed rather than silently not run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.paths import REPO

COPY = REPO / "tests" / "scenarios" / "conformance"
UPSTREAM = REPO.parent / "shared" / "scenarios"


def _files(root: Path) -> dict[str, bytes]:
    files = (p for p in sorted(root.rglob("*")) if p.is_file())
    return {str(p.relative_to(root)): p.read_bytes() for p in files}


def test_the_copy_equals_the_steering_repositorys_scenarios() -> None:
    if not UPSTREAM.is_dir():
        pytest.skip(f"no steering checkout at {UPSTREAM} to compare with")
    copy = _files(COPY)
    copy.pop("PROVENANCE.md")
    assert copy == _files(UPSTREAM)

"""Locating the conformance scenarios: tests/scenarios/conformance (copied from the steering
repository's shared/scenarios, see its PROVENANCE.md), or RESPREAD_SHARED/scenarios."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def scenarios_root() -> Path:
    shared = os.environ.get("RESPREAD_SHARED")
    root = Path(shared) / "scenarios" if shared else Path(__file__).parent / "conformance"
    if not root.is_dir():
        raise RuntimeError(
            f"conformance scenarios not found at {root}"
            + (" (RESPREAD_SHARED is set: unset it to use the repository's copy)" if shared else "")
        )
    return root


def scenario_dirs(family: str) -> list[Path]:
    dirs = sorted(
        p for p in (scenarios_root() / family).iterdir() if (p / "cluster.yaml").is_file()
    )
    if not dirs:
        raise RuntimeError(f"no scenarios under {scenarios_root() / family}")
    return dirs

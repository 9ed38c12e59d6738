"""Locating the shared conformance scenarios (../shared/scenarios beside the repository)."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def scenarios_root() -> Path:
    root = Path(os.environ.get("RESPREAD_SHARED", REPO.parent / "shared")) / "scenarios"
    if not root.is_dir():
        raise RuntimeError(
            f"conformance scenarios not found at {root}: clone the repository with shared/ "
            "beside it, or set RESPREAD_SHARED to the shared/ directory"
        )
    return root


def scenario_dirs(family: str) -> list[Path]:
    dirs = sorted(
        p for p in (scenarios_root() / family).iterdir() if (p / "cluster.yaml").is_file()
    )
    if not dirs:
        raise RuntimeError(f"no scenarios under {scenarios_root() / family}")
    return dirs

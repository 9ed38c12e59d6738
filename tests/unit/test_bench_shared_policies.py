"""bench/shared_policies.py at a tiny size: the three policies find the same violations apart
and shared, and shared, the second and third take the first's analysis of each state."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def shared_policies() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    return importlib.import_module("shared_policies")


def test_shared_policies_find_what_apart_ones_do_from_one_analysis_per_state() -> None:
    module = shared_policies()
    apart = module.rounds(20, 300, 2, "apart")
    shared = module.rounds(20, 300, 2, "shared")
    assert [r["violations"] for r in apart] == [r["violations"] for r in shared]
    assert all(len(r["violations"]) == 1 and r["violations"][0] > 0 for r in shared)
    assert [r["shared"] for r in apart] == [[], [], []]
    assert [r["shared"] for r in shared] == [["deletionCost", "surge"]] * 3

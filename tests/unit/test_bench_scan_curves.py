"""bench/scan_curves.py: one size measured in process gives consistent figures (the planner
plans, unchanged scans reuse the analysis and scans after a change do not), the table renders
them, and the growth exponent is the log-log slope."""

from __future__ import annotations

import importlib.util
import math
import sys
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@cache
def scan_curves() -> ModuleType:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location("bench_scan_curves", BENCH / "scan_curves.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@cache
def tiny() -> dict[str, Any]:
    """20 nodes, 300 pods, two remedies, two scans of each kind; not frozen (a test process)."""
    lines: list[str] = []
    figures: dict[str, Any] = scan_curves().measure(
        20, 300, ["evict", "deletionCost"], 2, freeze=False, streamed=False, progress=lines.append
    )
    figures["progress"] = lines
    return figures


def test_one_size_is_measured_with_a_plan_made() -> None:
    size = tiny()
    assert (size["nodes"], size["pods"]) == (20, 300)
    assert size["fill"]["wall"] > 0 and size["fill"]["rss_mb"] > 0
    assert len(size["progress"]) == 3  # the population, then one line per remedy
    for remedy in ("evict", "deletionCost"):
        rows = size["remedies"][remedy]["scans"]
        assert [r["phase"] for r in rows] == ["first"] + ["unchanged"] * 2 + ["changed"] * 2
        summary = size["remedies"][remedy]["summary"]
        assert summary["violations"] > 0
        assert summary["moves"] > 0  # untainted nodes: the planner plans, not all unfixable
        for row in rows:
            assert row["cpu"] > 0 and row["total"] > 0 and row["rss_mb"] > 0
            assert 0 < row["pipeline_cpu"] <= row["cpu"]
            assert row["pipeline"] <= row["total"]
            # nothing evicted (DryRun), and one label changed moves no pod: the same plan each scan
            assert (row["violations"], row["moves"]) == (summary["violations"], summary["moves"])
        assert summary["rss_steady_mb"] == rows[-1]["rss_mb"]
        assert math.isclose(summary["unchanged"]["cpu"], (rows[1]["cpu"] + rows[2]["cpu"]) / 2)
        assert math.isclose(summary["changed"]["wall"], (rows[3]["total"] + rows[4]["total"]) / 2)


def test_the_population_streamed_from_another_process_is_the_one_built_here() -> None:
    """What the benchmark measures by default: the population built by a process of its own and
    read object by object; the same cluster, found as violated and planned the same."""
    streamed = scan_curves().measure(20, 300, ["evict"], 1, freeze=False, progress=print)
    here = tiny()
    assert streamed["population"] != here["population"]
    assert (streamed["nodes"], streamed["pods"]) == (here["nodes"], here["pods"])
    a, b = (s["remedies"]["evict"]["summary"] for s in (streamed, here))
    assert (a["violations"], a["moves"], a["deferred"]) == (
        b["violations"],
        b["moves"],
        b["deferred"],
    )


def test_unchanged_scans_reuse_the_analysis_and_scans_after_a_change_do_not() -> None:
    """Those carry every namespace the change left alone. Unchanged scans reuse the plan too:
    the population's pods are older than its policy's minPodAge (0s) and nothing was evicted,
    so the clock changes no plan (remedies/evict/clock.py)."""
    for remedy in ("evict", "deletionCost"):
        summary = tiny()["remedies"][remedy]["summary"]
        assert summary["first"]["reused"] == summary["first"]["plan_reused"] == [False]
        assert summary["unchanged"]["reused"] == summary["unchanged"]["plan_reused"] == [True] * 2
        assert summary["changed"]["reused"] == summary["changed"]["plan_reused"] == [False] * 2
        # the first analyzes every namespace; a changed pod's namespace alone is analyzed again
        # (this small population has one namespace: tests/unit/analysis carry many)
        ((none, namespaces),) = summary["first"]["carried"]
        assert none == 0 and namespaces >= 1
        assert summary["changed"]["carried"] == [(namespaces - 1, namespaces)] * 2


def test_the_table_has_a_row_per_size_and_remedy_and_the_growth_exponents() -> None:
    module = scan_curves()
    small = tiny()
    # the same figures at twice the pods and twice each time: exponent 1 for every time column
    large: dict[str, Any] = {**small, "pods": 600, "nodes": 40, "remedies": {}}
    for remedy, measured in small["remedies"].items():
        summary = dict(measured["summary"])
        for phase in module.PHASES:
            summary[phase] = {**summary[phase], "cpu": 2 * summary[phase]["cpu"]}
            summary[phase]["wall"] = 2 * summary[phase]["wall"]
        large["remedies"][remedy] = {"summary": summary}
    text = module.table([large, small], ["evict", "deletionCost"])
    lines = text.splitlines()
    assert lines[0] == module.HEADER
    assert len(lines) == 2 + 4 + 2  # header, rule, 2 sizes x 2 remedies, 2 exponent rows
    assert all(line.count("|") == lines[0].count("|") for line in lines)
    assert lines[2].startswith("| 300 | 20 | evict |")  # sorted by size
    assert lines[5].startswith("| 600 | 40 | deletionCost |")
    assert "| 1.00 (1.00) | 1.00 (1.00) | 1.00 (1.00) |" in lines[6]
    assert lines[6].startswith("| growth exponent 300 to 600 pods |  | evict |")
    assert "error" not in text


def test_a_size_that_failed_is_left_out_of_the_table() -> None:
    module = scan_curves()
    text = module.table([tiny(), {"requested": [5, 50], "error": "exited with -9"}], ["evict"])
    assert len(text.splitlines()) == 3  # no exponent row from one size


@pytest.mark.parametrize(
    ("x1", "y1", "x2", "y2", "expected"),
    [
        (1000, 2.0, 2000, 4.0, 1.0),  # linear
        (1000, 2.0, 2000, 8.0, 2.0),  # quadratic
        (1000, 3.0, 10000, 3.0, 0.0),  # flat
        (100, 1.0, 10000, 10.0, 0.5),  # square root
        (1000, 4.0, 2000, 2.0, -1.0),  # shrinking
    ],
)
def test_the_growth_exponent_is_the_log_log_slope(
    x1: float, y1: float, x2: float, y2: float, expected: float
) -> None:
    assert math.isclose(scan_curves().slope(x1, y1, x2, y2), expected, abs_tol=1e-12)


@pytest.mark.parametrize(("x1", "y1", "x2", "y2"), [(0, 1, 2, 2), (1, 0, 2, 2), (5, 1, 5, 2)])
def test_no_growth_exponent_where_the_slope_is_undefined(
    x1: float, y1: float, x2: float, y2: float
) -> None:
    assert scan_curves().slope(x1, y1, x2, y2) is None


@pytest.mark.parametrize("text", ["500", "500:", "a:b", "0:10", "10:0", "5:10,"])
def test_a_bad_size_is_named(text: str) -> None:
    with pytest.raises(ValueError, match=r"--sizes: .* is not NODES:PODS"):
        scan_curves().parse_sizes(text)


def test_sizes_parse() -> None:
    assert scan_curves().parse_sizes("500:15000, 1000:30000") == [(500, 15000), (1000, 30000)]

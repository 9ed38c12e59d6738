"""bench/operator_scan.py: the operator's watch cache, filled object by object as a listing fills
it, gives the scan the same state as `respread plan` reading the same objects from a file; and a
scan there reports what the pipeline reports."""

from __future__ import annotations

import importlib.util
import json
import sys
from functools import cache
from pathlib import Path
from types import ModuleType

from respread.inputs.objects import load_texts
from respread.pipeline import scan

BENCH = Path(__file__).resolve().parents[2] / "bench"


@cache
def bench(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


def test_the_cache_filled_from_a_listing_scans_as_the_snapshot_does(tmp_path: Path) -> None:
    generate, operator_scan = bench("generate"), bench("operator_scan")
    path = tmp_path / "cluster.json"
    generate.write(generate.generate(24, 480, seed=5), path)
    policy = operator_scan._policy("evict")
    now = generate.GENERATED_AT

    cached = operator_scan.fill(path, freeze=False).cache.snapshot()
    loaded = load_texts([(str(path), path.read_text())]).state
    assert len(cached.pods) == len(loaded.pods) == 480
    assert len(cached.nodes) == len(loaded.nodes) == 24

    a, b = scan(cached, policy, now).report, scan(loaded, policy, now).report
    assert a.summary.violations > 0  # the generator skews some workloads: something to plan
    assert [(v.key, v.skew) for v in a.violations] == [(v.key, v.skew) for v in b.violations]
    assert [(e.pod.name, e.to_node) for e in a.evictions] == [
        (e.pod.name, e.to_node) for e in b.evictions
    ]


def test_a_scan_is_timed_phase_by_phase_and_its_status_serialized(tmp_path: Path) -> None:
    generate, operator_scan = bench("generate"), bench("operator_scan")
    path = tmp_path / "cluster.json"
    generate.write(generate.generate(24, 480, seed=5), path)
    cache_ = operator_scan.fill(path, freeze=False).cache
    policy = operator_scan._policy("deletionCost")
    memory = operator_scan.PolicyMemory()

    first = operator_scan.one_scan(cache_, policy, memory, generate.GENERATED_AT)
    second = operator_scan.one_scan(cache_, policy, memory, generate.GENERATED_AT + 30)
    for row in (first, second):
        phases = row["snapshot"] + row["pipeline"] + row["status"] + row["rest"]
        assert abs(row["total"] - phases) < 1e-6
        assert row["violations"] > 0 and row["patch_kb"] > 0
    assert memory.previous_status is not None  # kept for the next scan, as the operator does
    assert json.dumps(memory.previous_status)  # what was written is JSON
    assert memory.previous_status["violationsTotal"] == second["violations"]


def test_the_operator_benchmarks_population_is_built_without_a_control_plane() -> None:
    """bench/population_objects.py: the objects scale_population.populate's requests create."""
    sys.path.insert(0, str(BENCH))
    objects = list(bench("population_objects").population(20, 600))
    pods = [o for o in objects if o["kind"] == "Pod"]
    nodes = [o for o in objects if o["kind"] == "Node"]
    assert len(pods) == 600 and len(nodes) == 20
    assert all(p["spec"]["nodeName"] and p["status"]["phase"] == "Running" for p in pods)
    assert all(not n.get("spec", {}).get("taints") for n in nodes)  # untainted: plans are made
    owners = {o["metadata"]["uid"] for o in objects if o["kind"] == "ReplicaSet"}
    assert all(p["metadata"]["ownerReferences"][0]["uid"] in owners for p in pods)

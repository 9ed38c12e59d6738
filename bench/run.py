"""Benchmark respread on synthetic clusters: loading, analysis + planning, memory per pod.

For each size it measures, on text already in memory and on state already in memory:

- loading: text -> ClusterState with ``respread.inputs.objects.load_texts`` (JSON and YAML), the
  snapshot size bound raised to the text's (``loading.py``: the 150,000-pod JSON is 1.6 GB);
- analysis + planning: ``analyze`` then ``plan`` with the default policy and with an uncapped
  one (maxPerRun and maxPerWorkload null), as respread runs them: the loaded state frozen out
  of the cyclic collector's way and the collector paused while they compute
  (``respread.core.collector``); and once more with the collector running, to show what it costs;
- resident memory of the ClusterState: bytes tracemalloc attributes to it, per pod.

Times are medians over the repeats (wall clock, ``time.perf_counter``); peak memory is the
tracemalloc peak of one extra, traced run (Python allocations only, above what was allocated
before the phase). The targets are printed next to the figures; nothing is asserted.

Usage::

    python bench/run.py                              # 500/15,000 and 5,000/150,000
    python bench/run.py --sizes 500:15000 --formats json
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "operator"))
sys.path.insert(0, str(BENCH))

from generate import GENERATED_AT, generate, to_json, to_yaml  # noqa: E402
from loading import load_generated  # noqa: E402
from respread.analysis.groups import Analysis, analyze  # noqa: E402
from respread.core.collector import gc_paused  # noqa: E402
from respread.core.model import ClusterState  # noqa: E402
from respread.inputs.objects import LoadResult  # noqa: E402
from respread.inputs.policy import DEFAULT_POLICY, RebalancePolicy  # noqa: E402
from respread.remedies.evict.planner import Plan, plan  # noqa: E402

MIB = 1024 * 1024
TARGET_SECONDS = 2.0  # analysis + planning at 5,000 nodes / 150,000 pods
TARGET_BYTES_PER_POD = 1024

UNCAPPED = dataclasses.replace(
    DEFAULT_POLICY,
    name="uncapped",
    eviction=dataclasses.replace(DEFAULT_POLICY.eviction, max_per_run=None, max_per_workload=None),
)
POLICIES = {"default": DEFAULT_POLICY, "uncapped": UNCAPPED}


@dataclass(frozen=True, slots=True)
class Size:
    nodes: int
    pods: int

    @property
    def label(self) -> str:
        return f"{self.nodes}/{self.pods}"

    @staticmethod
    def parse(text: str) -> Size:
        nodes, pods = text.split(":")
        return Size(int(nodes), int(pods))


@dataclass(slots=True)
class Measure:
    """Timings of one phase and, from one traced run, its memory."""

    name: str
    seconds: list[float]
    peak_bytes: int = 0
    retained_bytes: int = 0
    parts: dict[str, float] = field(default_factory=dict)  # medians of sub-phases
    counts: dict[str, int] = field(default_factory=dict)
    note: str = ""

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    def as_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "median_s": round(self.median, 4),
            "runs_s": [round(s, 4) for s in self.seconds],
            "peak_mib": round(self.peak_bytes / MIB, 1),
            "retained_mib": round(self.retained_bytes / MIB, 1),
            "parts_median_s": {k: round(v, 4) for k, v in self.parts.items()},
            "counts": self.counts,
            "note": self.note,
        }


# --------------------------------------------------------------------------------------------
# Inputs


def cluster_files(size: Size, seed: int, formats: list[str], out: Path) -> dict[str, Path]:
    """The generated cluster in each format, generated once and cached in ``out``."""
    paths = {fmt: out / f"cluster-{size.nodes}-{size.pods}-s{seed}.{fmt}" for fmt in formats}
    missing = [fmt for fmt, path in paths.items() if not path.exists()]
    if missing:
        print(f"  generating {size.label} (seed {seed}) ...", flush=True)
        manifests = generate(size.nodes, size.pods, seed)
        for fmt in missing:
            text = to_json(manifests) if fmt == "json" else to_yaml(manifests)
            paths[fmt].write_text(text, encoding="utf-8")
        del manifests
    return paths


# --------------------------------------------------------------------------------------------
# Measuring


def timed(fn: Callable[[], object], repeats: int) -> list[float]:
    out = []
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        out.append(time.perf_counter() - start)
        del result
    return out


def traced(fn: Callable[[], object]) -> tuple[object, int, int]:
    """Run ``fn`` under tracemalloc: its result, peak bytes, and bytes its result keeps."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    result = fn()
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return result, peak - base, current - base


def measure_load(path: Path, fmt: str, repeats: int) -> tuple[Measure, ClusterState]:
    text = path.read_text(encoding="utf-8")
    source = str(path)
    seconds = timed(lambda: load_generated(source, text), repeats)
    result, peak, retained = traced(lambda: load_generated(source, text))
    assert isinstance(result, LoadResult)
    state = result.state
    m = Measure(f"load {fmt.upper()} ({len(text) / MIB:.0f} MiB)", seconds, peak, retained)
    m.counts = state_counts(state) | {"problems": len(result.problems)}
    return m, state


def state_counts(state: ClusterState) -> dict[str, int]:
    kinds: dict[str, int] = {}
    for w in state.workloads:
        kinds[w.kind] = kinds.get(w.kind, 0) + 1
    return {
        "nodes": len(state.nodes),
        "pods": len(state.pods),
        "controllers": sum(n for k, n in kinds.items() if k != "ReplicaSet"),
        "replicasets": kinds.get("ReplicaSet", 0),
        "budgets": len(state.budgets),
        "services": len(state.services),
    }


def run_pipeline(state: ClusterState, policy: RebalancePolicy) -> tuple[Analysis, Plan, float]:
    start = time.perf_counter()
    analysis = analyze(state, policy)
    middle = time.perf_counter()
    result = plan(analysis, policy, now=GENERATED_AT)
    return analysis, result, middle - start


def measure_pipeline(
    state: ClusterState, name: str, policy: RebalancePolicy, repeats: int, paused: bool = True
) -> Measure:
    """``paused``: as respread runs it, the collector paused (else running throughout)."""
    totals, analyses, plans = [], [], []
    outcome: tuple[Analysis, Plan, float] | None = None
    for _ in range(repeats):
        gc.collect()
        start = time.perf_counter()
        with gc_paused() if paused else nullcontext():
            outcome = run_pipeline(state, policy)
        total = time.perf_counter() - start
        totals.append(total)
        analyses.append(outcome[2])
        plans.append(total - outcome[2])
    assert outcome is not None
    analysis, result, _ = outcome
    m = Measure(
        f"analyze+plan, {name} policy" + ("" if paused else ", collector running"),
        totals,
        parts={"analyze": statistics.median(analyses), "plan": statistics.median(plans)},
    )
    m.counts = pipeline_counts(analysis, result)
    del outcome, analysis, result
    _, m.peak_bytes, _ = traced(lambda: run_pipeline(state, policy))
    return m


def measure_load_paused(path: Path, repeats: int) -> Measure:
    """Loading JSON with the collector paused: hundreds of thousands of new long-lived objects
    trigger full collections that walk all of them again and again."""
    with gc_paused():
        load, _ = measure_load(path, "json", repeats)
    load.name += ", collector paused"
    return load


def pipeline_counts(analysis: Analysis, result: Plan) -> dict[str, int]:
    return {
        "workloads analysed": len({m.workload for m in analysis.members}),
        "groups": len(analysis.groups),
        "violations": len(analysis.violations),
        "moves planned": len(result.moves),
        "moves deferred": len(result.deferred),
        "skipped": len(result.skipped),
        "fixable": sum(1 for o in result.outcomes if o.fixable),
        "violated after run": result.predicted_violations,
    }


# --------------------------------------------------------------------------------------------
# The machine


def machine() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "go_build_running": go_build_running(),
        "commit": _git("rev-parse", "--short", "HEAD"),
    }


def go_build_running() -> bool:
    try:
        found = subprocess.run(
            ["pgrep", "-f", "go build|compile"], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        return False
    return bool(found.stdout.strip())


def _git(*args: str) -> str:
    try:
        done = subprocess.run(
            ["git", *args], cwd=BENCH.parent, capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        return ""
    return done.stdout.strip()


# --------------------------------------------------------------------------------------------
# Reporting


def print_table(size: Size, measures: list[Measure], bytes_per_pod: float) -> None:
    print(f"\n== {size.label} nodes/pods " + "=" * 60)
    print(f"{'phase':50s} {'median':>9s} {'min':>9s} {'max':>9s} {'peak MiB':>9s}  runs")
    for m in measures:
        print(
            f"{m.name:50s} {m.median:8.3f}s {min(m.seconds):8.3f}s {max(m.seconds):8.3f}s "
            f"{m.peak_bytes / MIB:9.1f}  {len(m.seconds)}"
        )
        if m.parts:
            parts = ", ".join(f"{k} {v:.3f}s" for k, v in m.parts.items())
            print(f"{'':50s} ({parts})")
        if m.counts and not m.name.startswith("load"):
            print(f"{'':50s} " + ", ".join(f"{k} {v}" for k, v in m.counts.items()))
    loads = [m for m in measures if m.name.startswith("load")]
    if loads:
        counts = ", ".join(f"{k} {v}" for k, v in loads[0].counts.items())
        print(f"state: {counts}")
    flag = "ok" if bytes_per_pod < TARGET_BYTES_PER_POD else "over target"
    print(
        f"resident ClusterState: {bytes_per_pod:,.0f} bytes/pod "
        f"(target < {TARGET_BYTES_PER_POD}: {flag})"
    )
    for m in measures:
        if m.name.startswith("analyze") and size.pods >= 150_000:
            flag = "ok" if m.median < TARGET_SECONDS else "over target"
            print(f"{m.name}: {m.median:.2f}s (target < {TARGET_SECONDS:.0f}s: {flag})")


def bench_size(size: Size, args: argparse.Namespace) -> dict[str, Any]:
    large = size.pods >= 100_000
    repeats = args.repeats_large if large else args.repeats_small
    paths = cluster_files(size, args.seed, args.formats, args.out)
    measures: list[Measure] = []
    state: ClusterState | None = None
    retained = 0
    for fmt in args.formats:
        n = args.yaml_repeats_large if (fmt == "yaml" and large) else repeats
        print(f"  loading {fmt} x{n} ...", flush=True)
        m, loaded = measure_load(paths[fmt], fmt, n)
        measures.append(m)
        if state is None:
            state, retained = loaded, m.retained_bytes
        del loaded
    assert state is not None
    if args.collector_rows:
        print(f"  analyze+plan (default), collector running x{repeats} ...", flush=True)
        measures.append(measure_pipeline(state, "default", DEFAULT_POLICY, repeats, paused=False))
    gc.collect()
    gc.freeze()  # as `respread plan` does after loading
    for name in args.policies:
        print(f"  analyze+plan ({name}) x{repeats} ...", flush=True)
        measures.append(measure_pipeline(state, name, POLICIES[name], repeats))
    gc.unfreeze()
    if args.collector_rows and "json" in paths:
        print(f"  load json, collector paused x{repeats} ...", flush=True)
        measures.append(measure_load_paused(paths["json"], repeats))
    bytes_per_pod = retained / max(1, len(state.pods))
    print_table(size, measures, bytes_per_pod)
    return {
        "nodes": size.nodes,
        "pods": size.pods,
        "seed": args.seed,
        "repeats": repeats,
        "bytes_per_pod": round(bytes_per_pod),
        "measures": [m.as_json() for m in measures],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="500:15000,5000:150000",
        help="comma-separated NODES:PODS (default %(default)s)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--formats", default="json,yaml", help="json and/or yaml; the first one feeds the analysis"
    )
    parser.add_argument("--policies", default="default,uncapped")
    parser.add_argument("--repeats-small", type=int, default=5)
    parser.add_argument("--repeats-large", type=int, default=3, help="from 100,000 pods on")
    parser.add_argument(
        "--yaml-repeats-large",
        type=int,
        default=1,
        help="YAML loading of a large cluster takes minutes",
    )
    parser.add_argument(
        "--no-collector-rows",
        dest="collector_rows",
        action="store_false",
        help="skip the default-policy run with the collector running and the JSON load with "
        "it paused",
    )
    parser.add_argument("--out", type=Path, default=BENCH / "out")
    args = parser.parse_args(argv)
    args.formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    args.policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    before = machine()
    print(f"machine: {before}", flush=True)
    results = []
    for text in args.sizes.split(","):
        size = Size.parse(text)
        print(f"\n{size.label}:", flush=True)
        results.append(bench_size(size, args))
    report = {"started": before, "finished": machine(), "sizes": results}
    path = args.out / f"results-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(report, indent=2), encoding="utf-8")
    print(f"\nmachine at the end: {report['finished']}\nwrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

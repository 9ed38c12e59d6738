"""The operator's scan without a control plane: where its time goes beyond the pure pipeline.

A generated cluster (bench/generate.py, `kubectl get -o json` shape) is fed object by object
into the operator's watch cache (`ClusterCache.apply`, as a listing does; then collected and
frozen, as the reflectors do after the first listing). Then `--scans` scans of one DryRun policy
run as `respread run` runs them (runtime/scan.py), each phase timed on its own:

- snapshot: `ClusterCache.snapshot()` (the state a scan works on, volumes pinned);
- pipeline: `pipeline.scan` with the policy's memory, cost memo and analysis memo, as the
  operator keeps them (a scan of an unchanged cache reuses the last analysis; `--touch` changes
  one pod before each scan, as a watch event would, so that every scan analyzes afresh);
- status: the status built (`build_status`, conditions, cooldowns, deletion-cost counts) and
  turned into the merge patch the scan sends, serialized as the client would;
- rest: the Events' texts, the metrics exported, the memory kept for the next scan.

Nothing is sent anywhere. `--profile` runs cProfile over the last scan.

    .venv/bin/python bench/operator_scan.py bench/out/cluster-5000-150000-s1.json --scans 4
    .venv/bin/python bench/operator_scan.py CLUSTER.json --remedy deletionCost --profile
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import gc
import json
import pstats
import resource
import statistics
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "operator"))
sys.path.insert(0, str(BENCH))

from generate import GENERATED_AT  # noqa: E402
from respread.inputs.policy import parse_policy  # noqa: E402
from respread.pipeline import scan  # noqa: E402
from respread.report.contract import status_json, status_patch  # noqa: E402
from respread.runtime import scan as operator_scan  # noqa: E402
from respread.runtime.cache import WATCHED, ClusterCache  # noqa: E402
from respread.runtime.guard import DEFAULT_LIMITS, ScanGuard, halt_verdict  # noqa: E402
from respread.runtime.memory import PolicyMemory  # noqa: E402

REMEDIES: dict[str, dict[str, Any]] = {
    "evict": {},
    "deletionCost": {"deletionCost": {"enabled": True}},
    "surge": {"surge": {"enabled": True}},
}
KINDS = {w.kind for w in WATCHED}


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Filled(NamedTuple):
    cache: ClusterCache
    pod: dict[str, Any]  # one pod as listed, for --touch to change as a watch event would


def fill(path: Path, *, freeze: bool = True) -> Filled:
    """The cache as the reflectors leave it after their first listings (collected and frozen
    out of the collector's way, as they do, unless `freeze` is off)."""
    with path.open("rb") as f:
        items = json.load(f)["items"]
    return fill_items(items, freeze=freeze)


def fill_items(items: list[dict[str, Any]], *, freeze: bool = True) -> Filled:
    """The cache filled with `items` (emptied on the way) as listings fill it."""
    pod = next(i for i in items if i.get("kind") == "Pod")

    def popped() -> Iterator[dict[str, Any]]:
        while items:
            yield items.pop()

    return fill_stream(popped(), freeze=freeze, pod=pod)


def fill_stream(
    items: Iterable[dict[str, Any]], *, freeze: bool = True, pod: dict[str, Any] | None = None
) -> Filled:
    """The cache filled with `items`, one at a time, as listings fill it; `pod` (a copy is
    kept for `touch`) by default the first pod of `items`."""
    cache = ClusterCache()
    kept = copy.deepcopy(pod) if pod is not None else None
    keys: dict[str, set[tuple[str, str]]] = {k: set() for k in KINDS}
    for kind in KINDS:
        cache.begin_listing(kind)
    for item in items:
        kind = item.get("kind")
        if kind in KINDS:
            if kept is None and kind == "Pod":
                kept = copy.deepcopy(item)
            keys[kind].add(cache.apply(kind, None, item))
    for kind, listed in keys.items():
        cache.end_listing(kind, listed)
    del items
    if kept is None:
        raise ValueError("no Pod among the objects")
    if freeze:
        gc.collect()
        gc.freeze()
    return Filled(cache, kept)


def fill_population(nodes: int, pods: int, *, freeze: bool = True) -> Filled:
    """The cache filled with operator_scale.py's population (bench/population_objects.py)."""
    import population_objects

    return fill_items(list(population_objects.population(nodes, pods)), freeze=freeze)


def touch(filled: Filled, mark: int) -> None:
    """One pod's labels changed, delivered as a watch event: the cache hands out a new state,
    so the next scan analyzes afresh. `mark` must differ from the last one."""
    filled.pod["metadata"].setdefault("labels", {})["respread-bench/touched"] = str(mark)
    filled.cache.apply("Pod", "MODIFIED", filled.pod)


def _policy(remedy: str) -> Any:
    return parse_policy(
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": "bench"},
            "spec": {
                "mode": "DryRun",
                "schedule": {"interval": "30s"},
                "remediation": REMEDIES[remedy],
                "report": {"maxItems": 500},
                "eviction": {"minPodAge": "0s"},
            },
        }
    )


def one_scan(
    cache: ClusterCache, policy: Any, memory: PolicyMemory, now: float
) -> dict[str, float]:
    """One scan as runtime/scan.py's `_scan` makes it, minus the requests; seconds per phase."""
    times: dict[str, float] = {}
    cpu = time.process_time()
    t0 = time.perf_counter()
    state = cache.snapshot()
    t1 = time.perf_counter()
    cpu1 = time.process_time()
    result = scan(state, policy, now, memory.scan, memo=memory.cost_memo, analyses=memory.analyses)
    memory.scan = result.memory
    t2 = time.perf_counter()
    times["pipeline_cpu"] = time.process_time() - cpu1
    job = operator_scan.Job(
        None,  # type: ignore[arg-type]  # no request is made
        cache,
        policy,
        memory,
        None,
        operator_scan.always,
        operator_scan.NOT_DELETING,
        (),
        operator_scan.Safety(ScanGuard(DEFAULT_LIMITS, cache)),
        now,
    )
    acted = operator_scan.Acted([], operator_scan._counted(job, state, result), [])
    verdict = halt_verdict(None)
    status = operator_scan._status(job, result, acted, verdict)
    body = json.dumps(status_patch(status))
    t3 = time.perf_counter()
    operator_scan._events(job, result, acted, verdict)  # the health Events among them
    operator_scan.export_metrics(policy, result.report)
    memory.previous_status = status_json(status)
    memory.last_scan = now
    t4 = time.perf_counter()
    times.update(snapshot=t1 - t0, pipeline=t2 - t1, status=t3 - t2, rest=t4 - t3, total=t4 - t0)
    times["cpu"] = time.process_time() - cpu
    times["patch_kb"] = len(body) / 1024
    times["violations"] = result.report.summary.violations
    times["planned"] = len(result.report.evictions)
    times["moves"] = len(result.plan.moves)  # planned for this run
    times["deferred"] = len(result.plan.deferred)  # planned for later runs
    times["reused"] = float(memory.analyses.reused)  # the analysis of the scan before, reused
    times["plan_reused"] = float(memory.analyses.plan_reused)  # and its eviction plan
    # or, analyzing afresh, the namespaces it carried from the analysis before, of all
    times["carried"], times["namespaces"] = map(float, memory.analyses.carried)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "cluster", type=Path, nargs="?", help="a file bench/generate.py wrote (or --population)"
    )
    parser.add_argument(
        "--population",
        metavar="NODES:PODS",
        help="operator_scale.py's own population (bench/population_objects.py) instead",
    )
    parser.add_argument("--scans", type=int, default=4)
    parser.add_argument("--remedy", choices=sorted(REMEDIES), default="evict")
    parser.add_argument("--profile", action="store_true", help="cProfile the last scan")
    parser.add_argument(
        "--touch",
        action="store_true",
        help="change one pod's labels before each scan (a watch event): no scan finds the "
        "cluster unchanged, so none reuses the last analysis",
    )
    parser.add_argument("--top", type=int, default=35)
    args = parser.parse_args(argv)

    if (args.cluster is None) == (args.population is None):
        parser.error("give a cluster file or --population NODES:PODS")
    start = time.perf_counter()
    base = _rss_mb()
    if args.population:
        import population_objects

        nodes, pods = (int(n) for n in args.population.split(":"))
        filled = fill_population(nodes, pods)
        now = population_objects.POPULATED_AT
    else:
        filled = fill(args.cluster)
        now = GENERATED_AT
    cache = filled.cache
    pods = cache.count("Pod")
    print(
        f"cache filled: {pods} pods, {cache.count('Node')} nodes in "
        f"{time.perf_counter() - start:.1f}s; RSS {_rss_mb():.0f} MB "
        f"({_rss_mb() - base:.0f} MB over the interpreter), peak {_peak_mb():.0f} MB",
        flush=True,
    )
    policy = _policy(args.remedy)
    memory = PolicyMemory()
    rows = []
    profiler = cProfile.Profile()
    for i in range(args.scans):
        last = args.profile and i == args.scans - 1
        if args.touch:
            touch(filled, i)
        if last:
            profiler.enable()
        row = one_scan(cache, policy, memory, now + 30.0 * i)
        if last:
            profiler.disable()
        rows.append(row)
        print(
            f"scan {i + 1}: total {row['total']:.2f}s = snapshot {row['snapshot']:.2f} + "
            f"pipeline {row['pipeline']:.2f} + status {row['status']:.2f} + rest "
            f"{row['rest']:.2f} (CPU {row['cpu']:.2f}s); {row['violations']:.0f} violations, "
            f"{row['planned']:.0f} planned; patch {row['patch_kb']:.0f} KiB; "
            f"RSS {_rss_mb():.0f} MB",
            flush=True,
        )
    later = [r["total"] for r in rows[1:] if not (args.profile and r is rows[-1])]
    if later:
        cpu = [r["cpu"] for r in rows[1:] if not (args.profile and r is rows[-1])]
        print(
            f"later scans: median {statistics.median(later):.2f}s "
            f"(CPU {statistics.median(cpu):.2f}s)"
        )
    print(f"RSS {_rss_mb():.0f} MB, peak {_peak_mb():.0f} MB (the peak includes the JSON load)")
    if args.profile:
        stats = pstats.Stats(profiler)
        stats.sort_stats("cumulative").print_stats(args.top)
        stats.sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Profile loading or analysis + planning of a generated cluster with cProfile.

Usage::

    python bench/hotspots.py bench/out/cluster-5000-150000-s1.json            # analyze + plan
    python bench/hotspots.py bench/out/cluster-5000-150000-s1.json --phase load
    python bench/hotspots.py CLUSTER.json --policy uncapped --top 40 --no-gc

Prints the functions with the most cumulative and the most own time. ``--no-gc`` disables the
cyclic collector while profiling, so that its pauses are not charged to whatever function
happened to allocate when a collection started.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "operator"))
sys.path.insert(0, str(BENCH))

from generate import GENERATED_AT  # noqa: E402
from loading import load_generated  # noqa: E402
from respread.analysis.groups import analyze  # noqa: E402
from respread.remedies.evict.planner import plan  # noqa: E402
from run import POLICIES  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cluster", type=Path, help="a file bench/generate.py wrote")
    parser.add_argument("--phase", choices=("pipeline", "load"), default="pipeline")
    parser.add_argument("--policy", choices=sorted(POLICIES), default="default")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--no-gc", action="store_true", help="disable the cyclic collector")
    args = parser.parse_args(argv)

    text = args.cluster.read_text(encoding="utf-8")
    source = str(args.cluster)
    profiler = cProfile.Profile()
    if args.phase == "load":
        if args.no_gc:
            gc.disable()
        profiler.runcall(load_generated, source, text)
    else:
        state = load_generated(source, text).state
        del text
        policy = POLICIES[args.policy]
        gc.collect()
        if args.no_gc:
            gc.disable()
        start = time.perf_counter()
        analysis = analyze(state, policy)
        plan(analysis, policy, now=GENERATED_AT)
        print(f"unprofiled analyze+plan: {time.perf_counter() - start:.2f}s", flush=True)
        profiler.enable()
        analysis = analyze(state, policy)
        plan(analysis, policy, now=GENERATED_AT)
        profiler.disable()
    gc.enable()
    stats = pstats.Stats(profiler)
    stats.sort_stats("cumulative").print_stats(args.top)
    stats.sort_stats("tottime").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())

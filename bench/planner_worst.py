"""The planner's worst case on small clusters: plan time per cluster over many random ones.

Draws ``--clusters`` random clusters of 10 to 50 pods (seeded: the same ``--seed`` draws the
same clusters): 3 to 9 nodes over three zones, some of them full or cordoned; 2 to 7 workloads,
most with two hard constraints (zone and hostname) whose selectors count the workload's own pods
or every pod of its tier (a selector shared with other workloads), pods crowded onto few nodes;
budgets on some workloads. Times ``analyze`` and ``plan`` of each in this one process (after a
warm-up plan, so start-up is not counted) and prints the plan time's median, 99th percentile
and maximum, and the slowest clusters with how each plan was found.

    .venv/bin/python bench/planner_worst.py                       # 400 clusters
    .venv/bin/python bench/planner_worst.py --clusters 1000 --seed 7
    .venv/bin/python bench/planner_worst.py --profile 123         # cProfile cluster seed 123
    .venv/bin/python bench/planner_worst.py --seeds 1 6 11        # these clusters, best of 3

Wall-clock figures: run it on a quiet machine, and compare runs made side by side.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import random
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "operator"))
sys.path.insert(0, str(ROOT))

from tests.support.builders import budget, eviction_policy, hard, node, pod, sel, state  # noqa: E402
from tests.support.constants import HOST, ZONE  # noqa: E402

from respread.analysis.groups import analyze  # noqa: E402
from respread.core.model import ClusterState, OwnerRef, Pod  # noqa: E402
from respread.remedies.evict.planner import Plan, plan  # noqa: E402

POLICY = eviction_policy(cooldown=0.0)


def cluster(seed: int) -> ClusterState:
    """One random cluster of 10 to 50 pods, the same for the same seed."""
    rng = random.Random(seed)
    nodes = []
    for k in range(rng.randint(3, 9)):
        labels = {ZONE: rng.choice(["za", "za", "zb", "zb", "zc"]), HOST: f"h{k}"}
        nodes.append(
            node(
                f"n{k}",
                labels,
                max_pods=rng.choice([None, None, None, 4, 6, 8]),
                unschedulable=rng.random() < 0.08,
            )
        )
    total = rng.randint(10, 50)
    pods: list[Pod] = []
    budgets = []
    workloads = rng.randint(2, 7)
    for w in range(workloads):
        left = total - len(pods)
        if left <= 0:
            break
        count = left if w == workloads - 1 else max(1, min(left, rng.randint(2, 12)))
        app, tier = f"w{w}", rng.choice(["a", "b"])
        spread = []
        for key in (ZONE, HOST):
            if rng.random() < 0.8:
                shared = rng.random() < 0.3
                spread.append(
                    hard(
                        key,
                        sel(tier=tier) if shared else sel(app=app),
                        max_skew=rng.choice([1, 1, 2]),
                        min_domains=rng.choice([None, None, 3]) if key == ZONE else None,
                    )
                )
        crowd = rng.randint(1, len(nodes))
        owner = OwnerRef("ReplicaSet", f"{app}-1")
        for i in range(count):
            where = nodes[rng.randrange(crowd)].name
            pods.append(
                pod(
                    f"{app}-{i}",
                    where,
                    {"app": app, "tier": tier},
                    constraints=tuple(spread),
                    owner=owner,
                    created=float(i),
                )
            )
        if rng.random() < 0.4:
            allowed = rng.choice([0, 1, 1, 2, 3])
            budgets.append(budget(f"pdb-{app}", sel(app=app), allowed=allowed, healthy=count))
    return state(nodes, pods, budgets=budgets)


@dataclass(frozen=True)
class Timing:
    seed: int
    pods: int
    nodes: int
    analyze: float
    plan: float  # wall clock
    cpu: float  # the plan's CPU time (moves less with other work on the machine)
    result: Plan


def timed(seed: int) -> Timing:
    s = cluster(seed)
    start = time.perf_counter()
    analysis = analyze(s, POLICY)
    middle = time.perf_counter()
    cpu = time.process_time()
    result = plan(analysis, POLICY)
    end = time.perf_counter()
    cpu = time.process_time() - cpu
    return Timing(seed, len(s.pods), len(s.nodes), middle - start, end - middle, cpu, result)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0, help="the first cluster's seed")
    parser.add_argument("--worst", type=int, default=8, help="the slowest clusters to list")
    parser.add_argument("--profile", type=int, help="profile the plan of this cluster seed")
    parser.add_argument("--seeds", type=int, nargs="+", help="time only these seeds (best of 3)")
    args = parser.parse_args(argv)

    timed(-1)  # warm-up: imports, caches
    if args.profile is not None:
        s = cluster(args.profile)
        analysis = analyze(s, POLICY)
        profiler = cProfile.Profile()
        profiler.runcall(plan, analysis, POLICY)
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(30)
        return 0
    if args.seeds:
        for seed in args.seeds:
            best = min((timed(seed) for _ in range(3)), key=lambda t: t.plan)
            print(
                f"seed {seed}: {best.pods} pods, plan {best.plan * 1000:.0f} ms "
                f"(CPU {best.cpu * 1000:.0f} ms; best of 3)"
            )
        return 0
    gc.collect()
    timings = [timed(seed) for seed in range(args.seed, args.seed + args.clusters)]
    plans = [t.plan for t in timings]
    violated = sum(1 for t in timings if t.result.outcomes)
    methods: dict[str, int] = {}
    for t in timings:
        if t.result.outcomes:
            methods[t.result.method] = methods.get(t.result.method, 0) + 1
    gave_up = sum(1 for t in timings if "gave up" in t.result.method_note)
    print(
        f"{len(timings)} clusters of 10-50 pods ({violated} violated; methods {methods}; "
        f"search cut short in {gave_up})"
    )
    cpus = [t.cpu for t in timings]
    for name, values in (("plan time", plans), ("plan CPU time", cpus)):
        print(
            f"{name}: median {statistics.median(values) * 1000:.1f} ms, "
            f"p99 {_percentile(values, 0.99) * 1000:.1f} ms, max {max(values) * 1000:.1f} ms"
        )
    print(f"analyze max {max(t.analyze for t in timings) * 1000:.1f} ms")
    for t in sorted(timings, key=lambda t: -t.plan)[: args.worst]:
        moves = len(t.result.moves) + len(t.result.deferred)
        print(
            f"  seed {t.seed}: {t.pods} pods, {t.nodes} nodes, plan {t.plan * 1000:.0f} ms "
            f"(CPU {t.cpu * 1000:.0f}), "
            f"{moves} eviction(s), {t.result.method}: {t.result.method_note[:110]}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

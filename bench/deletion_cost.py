"""Time deletion-cost ordering (``plan_costs``) on a generated cluster, cold and steady, and
compare two checkouts A/B.

Usage::

    python bench/deletion_cost.py --state /tmp/state.pkl                  # this checkout
    python bench/deletion_cost.py --state /tmp/state.pkl --ab ../main .   # A/B, interleaved
    python bench/deletion_cost.py --nodes 500 --pods 15000 --pickle /tmp/state-15k.pkl

``--pickle`` generates a cluster (bench/generate.py) and pickles its ClusterState for
``--state``. A measurement, in one fresh process per checkout and round:

- cold: ``analyze`` then ``plan_costs`` on the state as generated (no pod carries a cost);
- unwritten: ``plan_costs`` again on the same analysis (a DryRun scan where nothing changed:
  the operator hands the same analysis again, and the memo gives the same plan again);
- reanalysed: once on a new analysis of the same state (every ReplicaSet's order recalled from
  the memo, as after a change elsewhere);
- steady: every cost the cold plan wants written (conflicts aside) is put on its pod, as
  Enforce leaves the cluster once it has written them all, and ``plan_costs`` runs again on
  that state (``--repeats`` times; the median is reported): the scan where nothing changed.

Beside the wall-clock times, each side gives the CPU time of the cold scan (steadier than the
wall clock on a shared machine) and the resident memory it added (VmRSS after the cold scan less
before it: the memo, the plan and what the simulation held at its peak, which the allocator keeps).

Each side prints a digest of every CostPlan (each order's pods, ranks, tiers, costs, safety,
domains, state and message; the exclusions; the patches): A/B fails when they differ.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import hashlib
import json
import pickle
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent


def _import_respread(src: Path) -> None:
    sys.path.insert(0, str(src / "operator"))
    sys.path.insert(0, str(src / "bench"))


def digest(plan: Any) -> str:
    """Every field of a CostPlan a reader or a patch sees, hashed."""
    h = hashlib.sha256()
    for o in plan.orders:
        h.update(repr((o.workload, o.replica_set, o.safe_steps, str(o.state), o.message)).encode())
        for p in o.pods:
            fields = (p.pod.key, p.rank, int(p.tier), p.desired, p.current)
            h.update(repr((*fields, p.within_max_skew, p.domains, p.foreign)).encode())
    h.update(repr([(e.workload, e.pods, e.reason) for e in plan.excluded]).encode())
    h.update(repr([(p.pod.key, p.desired) for p in plan.patches]).encode())
    h.update(repr(plan.deferred_patches).encode())
    return h.hexdigest()[:16]


def with_costs_written(state: Any, plan: Any) -> Any:
    """The state once every wanted cost (conflicts aside) is on its pod."""
    from respread.core.annotations import DELETION_COST
    from respread.core.model import Labels

    wanted: dict[str, int] = {}
    for o in plan.orders:
        if str(o.state) == "Changes":
            wanted.update((p.pod.key, p.desired) for p in o.pods if p.changed)
    pods = []
    for pod in state.pods:
        cost = wanted.get(pod.key)
        notes = Labels({**pod.annotations, DELETION_COST: str(cost)})
        pods.append(pod if cost is None else dataclasses.replace(pod, annotations=notes))
    return dataclasses.replace(state, pods=tuple(pods))


def measure(src: Path, state_path: Path, repeats: int) -> dict[str, Any]:
    """One side's figures, in this process (a fresh one per side and round)."""
    _import_respread(src)
    from respread.analysis.groups import analyze
    from respread.inputs.policy import DEFAULT_POLICY, DeletionCostSettings
    from respread.remedies.cost.order import plan_costs

    with state_path.open("rb") as f:
        state = pickle.load(f)
    gc.collect()
    gc.freeze()
    gc.disable()  # as respread runs a scan (respread.core.collector)
    settings = DeletionCostSettings(enabled=True)
    memo = _new_memo()
    t0 = time.perf_counter()
    analysis = analyze(state, DEFAULT_POLICY)
    t1 = time.perf_counter()
    rss, cpu = _rss_mb(), time.process_time()
    cold = plan_costs(analysis, settings, *memo)
    t2 = time.perf_counter()
    cold_cpu, rss_added = time.process_time() - cpu, _rss_mb() - rss
    unwritten = _median_scan(lambda: plan_costs(analysis, settings, *memo), repeats)
    again = analyze(state, DEFAULT_POLICY)  # another analysis object: each order recalled
    reanalysed = _median_scan(lambda: plan_costs(again, settings, *memo), 1)
    steady_analysis = analyze(with_costs_written(state, cold), DEFAULT_POLICY)
    plan_costs(steady_analysis, settings, *memo)  # the scan that sees the costs written
    steady = _median_scan(lambda: plan_costs(steady_analysis, settings, *memo), repeats)
    return {
        "analyze": t1 - t0,
        "cold": t2 - t1,
        "cold_cpu": cold_cpu,
        "rss_added": rss_added,
        "unwritten": unwritten[0],
        "reanalysed": reanalysed[0],
        "steady": steady[0],
        "memo": bool(memo),
        "ordered_pods": sum(len(o.pods) for o in cold.orders),
        "replica_sets": len(cold.orders),
        "cold_digest": digest(cold),
        "unwritten_digest": digest(unwritten[1]),
        "reanalysed_digest": digest(reanalysed[1]),
        "steady_digest": digest(steady[1]),
        "steady_changes": sum(1 for o in steady[1].orders if str(o.state) == "Changes"),
    }


def _rss_mb() -> float:
    """This process's resident memory (VmRSS), MB."""
    with Path("/proc/self/status").open() as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _new_memo() -> tuple[Any, ...]:
    """A CostMemo for plan_costs when the checkout has one (kept across the scans measured)."""
    try:
        from respread.remedies.cost.memo import CostMemo
    except ImportError:
        return ()
    return (CostMemo(),)


def _median_scan(scan: Any, repeats: int) -> tuple[float, Any]:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        result = scan()
        times.append(time.perf_counter() - t)
    return statistics.median(times), result


def _run_side(src: Path, state: Path, repeats: int) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--state", str(state), "--src", str(src)]
    out = subprocess.run(
        [*cmd, "--repeats", str(repeats), "--json"], check=True, capture_output=True, text=True
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def ab(a: Path, b: Path, state: Path, rounds: int, repeats: int) -> int:
    runs: dict[str, list[dict[str, Any]]] = {"A": [], "B": []}
    for r in range(rounds):
        for side, src in (("A", a), ("B", b)) if r % 2 == 0 else (("B", b), ("A", a)):
            res = _run_side(src, state, repeats)
            runs[side].append(res)
            print(
                f"round {r + 1} {side}: cold {res['cold']:.2f}s (CPU"
                f" {res['cold_cpu']:.2f}s, +{res['rss_added']:.0f} MB RSS), unwritten"
                f" {res['unwritten']:.2f}s, reanalysed {res.get('reanalysed', 0):.2f}s,"
                f" steady {res['steady']:.2f}s, analyze"
                f" {res['analyze']:.2f}s; digests {res['cold_digest']}"
                f"/{res['unwritten_digest']}/{res['steady_digest']}",
                flush=True,
            )
    same = True
    for key in ("cold_digest", "unwritten_digest", "reanalysed_digest", "steady_digest"):
        values = {r[key] for side in runs.values() for r in side}
        same &= len(values) == 1
    for side, src in (("A", a), ("B", b)):
        res = runs[side]
        print(
            f"{side} ({src}): median cold {statistics.median(r['cold'] for r in res):.2f}s"
            f" (CPU {statistics.median(r['cold_cpu'] for r in res):.2f}s,"
            f" +{statistics.median(r['rss_added'] for r in res):.0f} MB RSS),"
            f" unwritten {statistics.median(r['unwritten'] for r in res):.2f}s,"
            f" reanalysed {statistics.median(r.get('reanalysed', 0) for r in res):.2f}s,"
            f" steady {statistics.median(r['steady'] for r in res):.2f}s,"
            f" analyze {statistics.median(r['analyze'] for r in res):.2f}s"
            f" ({res[0]['ordered_pods']} ordered pods in {res[0]['replica_sets']} ReplicaSets)"
        )
    print("plans identical (cold, unwritten, reanalysed, steady)" if same else "PLANS DIFFER")
    return 0 if same else 1


def make_pickle(nodes: int, pods: int, seed: int, out: Path) -> None:
    _import_respread(BENCH.parent)
    from generate import generate
    from respread.inputs.objects import load_documents

    gc.disable()
    loaded = load_documents(("generated", m) for m in generate(nodes, pods, seed=seed))
    with out.open("wb") as f:
        pickle.dump(loaded.state, f, protocol=5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--state", type=Path, help="a pickled ClusterState (--pickle writes one)")
    parser.add_argument("--src", type=Path, default=BENCH.parent, help="the checkout to time")
    parser.add_argument("--ab", nargs=2, type=Path, metavar=("A", "B"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3, help="steady scans per process")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--pickle", type=Path, help="generate a cluster and pickle it here")
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=150000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    if args.pickle:
        make_pickle(args.nodes, args.pods, args.seed, args.pickle)
        return 0
    if args.state is None:
        parser.error("--state is required (or --pickle)")
    if args.ab:
        return ab(args.ab[0].resolve(), args.ab[1].resolve(), args.state, args.rounds, args.repeats)
    res = measure(args.src.resolve(), args.state, args.repeats)
    print(json.dumps(res) if args.json else res)
    return 0


if __name__ == "__main__":
    sys.exit(main())

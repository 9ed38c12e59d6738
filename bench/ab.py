"""Interleaved A/B timing of analysis + planning in two checkouts, on one pickled cluster.

This VM's speed swings from minute to minute, so a before/after comparison runs both sides in
turn, each in a fresh process that unpickles the same ClusterState (loading JSON would take
minutes per process), and compares medians. Each process times ``analyze`` + ``plan`` as
respread runs them (the loaded state frozen, the collector paused) and checks that its plans
are the same every repeat; the digests of the two sides must agree too (same plans). The
process's CPU time is reported beside the wall clock: on a machine shared with other work it
moves far less with their load.

Usage::

    python bench/ab.py state -o /tmp/state.pkl                 # 5,000 nodes / 150,000 pods
    python bench/ab.py compare ../main . --state /tmp/state.pkl --rounds 3 --repeats 5

The pickle holds respread.core.model records: both checkouts must share model.py's records. Where
they do not (an old checkout), pickle the state once per checkout with its own records and give
the second to ``compare`` as ``--state-b``::

    python bench/ab.py state -o /tmp/old.pkl --src ../old    # the same cluster, old records
    python bench/ab.py compare ../old . --state /tmp/old.pkl --state-b /tmp/state.pkl
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


def _layout(src: str) -> Any:
    """The functions ab.py times, from the checkout `src`: the layered packages (issue 19), or
    the flat modules before them (ae2bcf2 and older), so that the two can be compared."""
    sys.path.insert(0, str(Path(src).resolve() / "operator"))
    try:
        from respread.analysis.groups import analyze
        from respread.core.collector import gc_paused
        from respread.inputs.objects import load_documents
        from respread.inputs.policy import DEFAULT_POLICY
        from respread.remedies.evict.planner import plan
    except ImportError:  # the flat layout
        from respread.collector import gc_paused
        from respread.planner import plan
        from respread.policy import DEFAULT_POLICY
        from respread.snapshot import load_documents

        from respread.analysis import analyze
    return argparse.Namespace(
        analyze=analyze,
        gc_paused=gc_paused,
        load_documents=load_documents,
        DEFAULT_POLICY=DEFAULT_POLICY,
        plan=plan,
    )


def make_state(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(args.src).resolve() / "operator"))
    sys.path.insert(0, str(BENCH))
    from generate import generate

    load_documents = _layout(args.src).load_documents
    gc.disable()
    manifests = generate(args.nodes, args.pods, seed=args.seed)
    result = load_documents(("generated", m) for m in manifests)
    with open(args.output, "wb") as f:
        pickle.dump(result.state, f, protocol=5)
    print(f"{len(result.state.pods)} pods, {len(result.problems)} problem(s) -> {args.output}")


def child(args: argparse.Namespace) -> None:
    from generate import GENERATED_AT

    layout = _layout(args.src)
    analyze, gc_paused, plan = layout.analyze, layout.gc_paused, layout.plan
    default = policy = layout.DEFAULT_POLICY
    if args.policy == "uncapped":
        eviction = dataclasses.replace(default.eviction, max_per_run=None, max_per_workload=None)
        policy = dataclasses.replace(default, name="uncapped", eviction=eviction)
    gc.disable()
    with open(args.state, "rb") as f:
        state = pickle.load(f)
    gc.enable()
    gc.collect()
    gc.freeze()  # as `respread plan` does after loading
    times = []
    cpu = []
    digests = set()
    for _ in range(args.repeats):
        with gc_paused():
            start, start_cpu = time.perf_counter(), time.process_time()
            analysis = analyze(state, policy)
            analysed = time.perf_counter()
            result = plan(analysis, policy, now=GENERATED_AT)
            done, done_cpu = time.perf_counter(), time.process_time()
        times.append((done - start, analysed - start, done - analysed))
        cpu.append(done_cpu - start_cpu)
        digests.add(hashlib.sha256(repr(result).encode()).hexdigest()[:16])
        del analysis, result
    assert len(digests) == 1, digests
    print(json.dumps({"times": times, "cpu": cpu, "digest": digests.pop()}))


def compare(args: argparse.Namespace) -> None:
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for _ in range(args.rounds):
        for policy in args.policies:
            for src, state in ((args.a, args.state), (args.b, args.state_b or args.state)):
                out = subprocess.run(
                    [sys.executable, __file__, "child", src, state, policy, str(args.repeats)],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                found = json.loads(out.strip().splitlines()[-1])
                row = rows.setdefault((policy, src), {"times": [], "cpu": [], "digests": set()})
                row["times"].extend(found["times"])
                row["cpu"].extend(found["cpu"])
                row["digests"].add(found["digest"])
    for (policy, src), row in rows.items():
        total = [t for t, _, _ in row["times"]]
        print(
            f"{policy:9} {src:24} n={len(total)} median {statistics.median(total):.3f}s "
            f"(analyze {statistics.median(a for _, a, _ in row['times']):.3f}, "
            f"plan {statistics.median(p for _, _, p in row['times']):.3f}) "
            f"min {min(total):.3f} max {max(total):.3f}; CPU time median "
            f"{statistics.median(row['cpu']):.3f}s; plans {sorted(row['digests'])}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(required=True)
    state = sub.add_parser("state", help="generate a cluster, load it, pickle its state")
    state.add_argument("--nodes", type=int, default=5000)
    state.add_argument("--pods", type=int, default=150_000)
    state.add_argument("--seed", type=int, default=1)
    state.add_argument("-o", "--output", required=True)
    state.add_argument(
        "--src", default=str(BENCH.parent), help="the checkout whose records are pickled"
    )
    state.set_defaults(run=make_state)
    cmp = sub.add_parser("compare", help="interleaved runs of two checkouts")
    cmp.add_argument("a")
    cmp.add_argument("b")
    cmp.add_argument("--state", required=True)
    cmp.add_argument("--state-b", help="b's own pickle of the same cluster (default: --state)")
    cmp.add_argument("--rounds", type=int, default=3)
    cmp.add_argument("--repeats", type=int, default=5)
    cmp.add_argument("--policies", nargs="+", default=["default", "uncapped"])
    cmp.set_defaults(run=compare)
    one = sub.add_parser("child", help="one side, one process (used by compare)")
    one.add_argument("src")
    one.add_argument("state")
    one.add_argument("policy", choices=["default", "uncapped"])
    one.add_argument("repeats", type=int)
    one.set_defaults(run=child)
    args = parser.parse_args()
    sys.path.insert(0, str(BENCH))
    args.run(args)


if __name__ == "__main__":
    main()

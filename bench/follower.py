"""Time one round of the surge follower (runtime/surges.py ``_in_flight``) on a generated
cluster with one surge in flight: the whole cluster analysed (before) against the namespaces of
the surging Deployments only (respread.remedies.surge.scope, after).

Usage::

    python bench/follower.py                          # 1,700 nodes / 50,000 pods
    python bench/follower.py --nodes 500 --pods 15000 --repeats 7

A Deployment of the generated cluster (the first with 10 or more replicas and a spread
constraint) gets respread's operation annotation as if it had been surged by 2 to its count
(phase Surging, every pod Ready: the round chooses the 2 victims, the costliest step). Both
ways must give the same operations with the same actions (checked, printed); the medians of
``--repeats`` runs are printed, with the collector paused as the operator's analysis runs.
Nothing is asserted about the times.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "operator"))
sys.path.insert(0, str(BENCH))

from generate import generate  # noqa: E402
from respread.analysis.groups import analyze  # noqa: E402
from respread.core.annotations import SURGE_STATE  # noqa: E402
from respread.core.collector import gc_paused  # noqa: E402
from respread.core.model import ClusterState  # noqa: E402
from respread.inputs.objects import load_documents  # noqa: E402
from respread.inputs.policy import DEFAULT_POLICY  # noqa: E402
from respread.remedies.surge.advance import InFlight, operations  # noqa: E402
from respread.remedies.surge.operation import Operation  # noqa: E402
from respread.remedies.surge.scope import follower_state  # noqa: E402

NOW = time.time()


def with_surge(state: ClusterState) -> tuple[ClusterState, str]:
    """The state with one Deployment surging: 2 above the count it had, its new pods Ready."""
    spread = {
        (p.namespace, p.owner.name)
        for p in state.pods
        if p.owner is not None and p.spec.constraints
    }
    for i, w in enumerate(state.workloads):
        if w.kind != "Deployment" or (w.replicas or 0) < 10:
            continue
        if not any(ns == w.namespace and rs.startswith(w.name + "-") for ns, rs in spread):
            continue
        n = w.replicas or 0
        op = Operation(DEFAULT_POLICY.name, n - 2, n, NOW - 5, NOW + 300)
        surging = replace(w, markers={**w.markers, SURGE_STATE: op.to_json()})
        workloads = (*state.workloads[:i], surging, *state.workloads[i + 1 :])
        return replace(state, workloads=workloads), f"{w.namespace}/{w.name}"
    raise SystemExit("no Deployment of 10 or more replicas with a spread constraint")


def whole(state: ClusterState) -> tuple[InFlight, ...]:
    return operations(analyze(state, DEFAULT_POLICY), DEFAULT_POLICY.name, NOW)


def scoped(state: ClusterState) -> tuple[InFlight, ...]:
    scope = follower_state(state, DEFAULT_POLICY.name)
    return operations(analyze(scope, DEFAULT_POLICY), DEFAULT_POLICY.name, NOW)


def digest(flights: tuple[InFlight, ...]) -> list[tuple[object, ...]]:
    return [
        (f.workload, f.action.kind, f.action.reason, tuple(v.pod.uid for v in f.action.victims))
        for f in flights
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=1700)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    docs = generate(args.nodes, args.pods, args.seed)
    state, name = with_surge(load_documents([("bench", d) for d in docs]).state)
    del docs
    gc.collect()
    gc.freeze()
    scope = follower_state(state, DEFAULT_POLICY.name)
    print(
        f"{args.nodes} nodes / {len(state.pods)} pods (built in "
        f"{time.perf_counter() - started:.1f} s); surging {name}: the round analyses "
        f"{len(scope.pods)} pods in {len({p.namespace for p in scope.pods})} namespace(s)"
    )
    same = digest(whole(state)) == digest(scoped(state))
    print(f"same operations and actions: {same}  {digest(scoped(state))}")
    times: dict[str, list[float]] = {"whole cluster (before)": [], "its namespaces (after)": []}
    for _ in range(args.repeats):  # interleaved: the VM's speed drifts
        for label, fn in zip(times, (whole, scoped), strict=True):
            with gc_paused():
                t = time.perf_counter()
                fn(state)
                times[label].append(time.perf_counter() - t)
    for label, values in times.items():
        print(
            f"{label:>24}: median {statistics.median(values) * 1000:8.1f} ms"
            f"  (min {min(values) * 1000:.1f}, max {max(values) * 1000:.1f}, n={len(values)})"
        )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())

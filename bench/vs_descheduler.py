"""Benchmark respread against the descheduler's RemovePodsViolatingTopologySpreadConstraint.

On the clusters bench/generate.py produces (cached in bench/out/ by run.py), for each size:

- the descheduler: the oracle binary (tests/oracles/descheduler/, built and cached on first use)
  loads the manifest into a fake clientset and runs the plugin's ``Balance`` once per repeat
  (DefaultEvictor at defaults, no eviction limits); the figure is the wall time of ``Balance``
  alone, median over the repeats;
- respread: ``analyze`` + ``plan`` on the loaded ClusterState with the same arguments as an
  uncapped policy (tests/oracles/descheduler.policy_for: no caps, no cooldown, minPodAge 0),
  median over the repeats, as respread runs it (the loaded state frozen, the cyclic collector
  paused while it computes);
- what each plan leaves: the plan is applied (respread's moves where it predicted them; the
  descheduler's evictions gone and their replacements placed by respread's landing predictor,
  the same assumption as the differential test, docs/dev/oracles.md) and judged by respread's
  analysis: DoNotSchedule groups still violated, their misplaced pods, replacements left Pending.

Arguments for both: constraints [DoNotSchedule], topologyBalanceNodeFit true, kube-system
excluded. Results go to bench/out/vs-descheduler-<time>.json. The descheduler runs first, in its
own process, before respread loads the cluster, so the two never hold it in memory at once.

    python bench/vs_descheduler.py                         # 500/15,000 and 5,000/150,000
    python bench/vs_descheduler.py --sizes 500:15000 --repeats 5
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(REPO / "operator"))
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(BENCH))

from tests.oracles.descheduler import (  # noqa: E402
    evictions_of,
    land_evictions,
    policy_for,
    residual,
    respread_plan,
)
from tests.oracles.descheduler.build import descheduler_version, ensure_built  # noqa: E402

from loading import load_generated  # noqa: E402
from respread.core.collector import gc_paused  # noqa: E402
from respread.remedies.evict.replay import apply_moves  # noqa: E402
from run import Size, cluster_files, machine  # noqa: E402

ARGS: dict[str, Any] = {
    "constraints": ["DoNotSchedule"],
    "topologyBalanceNodeFit": True,
    "namespaces": {"exclude": ["kube-system"]},
}


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run_descheduler(binary: Path, path: Path, repeats: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    proc = subprocess.run(
        [
            "/usr/bin/time",
            "-f",
            "%M",
            str(binary),
            "-manifest",
            str(path),
            "-args",
            json.dumps(ARGS),
            "-runs",
            str(repeats),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"the descheduler oracle failed on {path}: {proc.stderr[-2000:]}")
    answer: dict[str, Any] = json.loads(proc.stdout)
    answer["processSeconds"] = time.perf_counter() - t0
    answer["maxRssMiB"] = int(proc.stderr.strip().splitlines()[-1]) // 1024
    return answer


def bench_size(size: Size, binary: Path, repeats: int, seed: int) -> dict[str, Any]:
    path = cluster_files(size, seed, ["json"], BENCH / "out")["json"]
    say(f"[{size.label}] descheduler: {repeats} Balance runs on {path.name} ...")
    answer = run_descheduler(binary, path, repeats)
    balance = [r["balanceNs"] / 1e9 for r in answer["runs"]]
    say(
        f"[{size.label}] descheduler done in {answer['processSeconds']:.0f}s "
        f"(max RSS {answer['maxRssMiB']} MiB); respread: loading ..."
    )
    loaded = load_generated(str(path), path.read_text(encoding="utf-8"))
    state = loaded.state
    policy = policy_for(ARGS)
    now = max((p.created or 0.0) for p in state.pods) + 3600
    times = []
    result = None
    gc.collect()
    gc.freeze()  # as `respread plan` does after loading
    for i in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        with gc_paused():  # as respread runs it (respread.core.collector)
            analysis, result = respread_plan(state, policy, now)
        times.append(time.perf_counter() - t0)
        say(f"[{size.label}] respread analyze+plan run {i + 1}: {times[-1]:.2f}s")
        del analysis
    gc.unfreeze()
    assert result is not None
    say(f"[{size.label}] judging both plans ...")
    before = residual(state, policy)
    mine = residual(apply_moves(state, result.moves), policy)
    theirs = []
    for run in answer["runs"]:
        after, landed = land_evictions(state, policy, evictions_of(run))
        theirs.append(residual(after, policy, sum(1 for v in landed.values() if v is None)))
        del after
    r_med, d_med = statistics.median(times), statistics.median(balance)
    d_evictions = [len(r["evictions"]) for r in answer["runs"]]
    return {
        "size": size.label,
        "nodes": size.nodes,
        "pods": size.pods,
        "cluster": str(path.relative_to(REPO)),
        "repeats": repeats,
        "respread": {
            "analyze_plan_median_s": round(r_med, 4),
            "runs_s": [round(t, 4) for t in times],
            "evictions": len(result.moves),
            "deferred": len(result.deferred),
            "residual": {"groups": mine.groups, "pods": mine.pods, "pending": mine.pending},
        },
        "descheduler": {
            "version": answer["version"],
            "balance_median_s": round(d_med, 4),
            "runs_s": [round(t, 4) for t in balance],
            "load_s": round(answer["loadNs"] / 1e9, 2),
            "max_rss_mib": answer["maxRssMiB"],
            "evictions_per_run": d_evictions,
            "refused_by_budgets_per_run": [len(r["refused"]) for r in answer["runs"]],
            "residual_per_run": [
                {"groups": t.groups, "pods": t.pods, "pending": t.pending} for t in theirs
            ],
        },
        "before": {"groups": before.groups, "pods": before.pods},
        "ratio_descheduler_over_respread": round(d_med / r_med, 3) if r_med else None,
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    head = (
        f"{'size':>14} | {'respread s':>10} | {'desched. s':>10} | {'ratio D/R':>9} | "
        f"{'evictions R/D':>13} | {'violated before':>15} | {'left R (grp/pods)':>17} | "
        f"{'left D (grp/pods/pending)':>25}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        res, des = r["respread"], r["descheduler"]
        left_r = f"{res['residual']['groups']}/{res['residual']['pods']}"
        d0 = des["residual_per_run"][0]
        left_d = f"{d0['groups']}/{d0['pods']}/{d0['pending']}"
        evictions = "/".join(str(n) for n in sorted(set(des["evictions_per_run"])))
        print(
            f"{r['size']:>14} | {res['analyze_plan_median_s']:>10.3f} | "
            f"{des['balance_median_s']:>10.3f} | {r['ratio_descheduler_over_respread']:>9.2f} | "
            f"{str(res['evictions']) + '/' + evictions:>13} | "
            f"{str(r['before']['groups']) + '/' + str(r['before']['pods']):>15} | "
            f"{left_r:>17} | {left_d:>25}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="500:15000,5000:150000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    binary = ensure_built()
    rows = []
    for text in args.sizes.split(","):
        rows.append(bench_size(Size.parse(text), binary, args.repeats, args.seed))
        gc.collect()
    print_table(rows)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = BENCH / "out" / f"vs-descheduler-{stamp}.json"
    out.write_text(
        json.dumps(
            {
                "descheduler": f"sigs.k8s.io/descheduler@{descheduler_version()}",
                "args": ARGS,
                "machine": machine(),
                "results": rows,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"results written to {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Several policies over the same scope: each analyzing apart, or sharing one analysis.

The operator scans each RebalancePolicy on its own, and a policy per remedy over the same
namespaces (as operator_scale.py's churn phase runs them, or a DryRun beside an Enforce) reads
the same of its policy (`analysis_reads`). With `pipeline.SharedAnalyses` they analyze a state
once between them. This fills the operator's watch cache with operator_scale.py's population
(operator_scan.py's `fill_population`), then scans three DryRun policies (evict,
deletionCost, surge) in turn, first on the listed state, then in rounds after one pod changed
each time (a watch event); the three scans of a round are timed together (CPU seconds), with
the RSS after them. Each mode runs in a fresh process of its own.

    .venv/bin/python bench/shared_policies.py --population 5000:150000 --rounds 3   # ~5 min
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import operator_scan  # noqa: E402
import population_objects  # noqa: E402
from respread.pipeline import SharedAnalyses, scan  # noqa: E402
from respread.runtime.memory import PolicyMemory  # noqa: E402

REMEDIES = ("evict", "deletionCost", "surge")
MODES = ("apart", "shared")


def rounds(nodes: int, pods: int, count: int, mode: str) -> list[dict[str, Any]]:
    """The first scan of each policy, then `count` rounds after a change: per round the CPU
    seconds of the three scans, the RSS after them, and which policies took a shared analysis."""
    filled = operator_scan.fill_population(nodes, pods)
    shared = SharedAnalyses() if mode == "shared" else None
    policies = [replace(operator_scan._policy(r), name=r) for r in REMEDIES]
    memories = {p.name: PolicyMemory.from_status(None, shared) for p in policies}
    out = []
    for k in range(count + 1):
        if k:
            operator_scan.touch(filled, k)
        state = filled.cache.snapshot()
        now = population_objects.POPULATED_AT + 30 * k
        cpu = time.process_time()
        took, violations = [], set()
        for policy in policies:
            memory = memories[policy.name]
            others = [p for p in policies if p is not policy]
            result = scan(
                state,
                policy,
                now,
                memory.scan,
                others=others,
                memo=memory.cost_memo,
                analyses=memory.analyses,
            )
            memory.scan = result.memory
            violations.add(result.report.summary.violations)
            if memory.analyses.from_shared:
                took.append(policy.name)
        out.append(
            {
                "round": k,
                "cpu": time.process_time() - cpu,
                "rss_mb": operator_scan._rss_mb(),
                "violations": sorted(violations),
                "shared": took,
            }
        )
    return out


def _print(mode: str, rows: list[dict[str, Any]]) -> None:
    for r in rows:
        what = "listed" if r["round"] == 0 else "after a change"
        taken = ", ".join(r["shared"]) or "none"
        print(
            f"{mode} round {r['round']} ({what}): three scans {r['cpu']:.2f} s CPU; "
            f"RSS {r['rss_mb']:.0f} MB; violations {r['violations']}; shared analysis: {taken}",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--population", default="5000:150000", metavar="NODES:PODS")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mode", choices=MODES, help="one mode, in this process")
    args = parser.parse_args(argv)
    nodes, _, pods = args.population.partition(":")
    if args.mode:
        _print(args.mode, rounds(int(nodes), int(pods), args.rounds, args.mode))
        return 0
    for mode in MODES:  # each in a fresh process: its RSS its own
        command = [sys.executable, __file__, "--population", args.population]
        subprocess.run([*command, "--rounds", str(args.rounds), "--mode", mode], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

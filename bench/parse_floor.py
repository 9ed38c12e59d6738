"""`respread plan` against the floor: a bare `json.load` of the same snapshot, time and memory.

Each run is a fresh process, the two interleaved (json.load, plan, json.load, plan, ...), so that
the machine's swings fall on both alike. The time is the process's wall clock from start to
exit (start-up, reading, parsing, and for `plan` the analysis, the plan and the JSON report
written to /dev/null); the memory is its peak resident set (ru_maxrss). Medians of `--repeats`.

    .venv/bin/python bench/parse_floor.py bench/out/cluster-5000-150000-s1.json --repeats 3

Run it on a quiet machine (`uptime` load under 3): the load average before each run is printed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JSON_LOAD = "import json, sys\nwith open(sys.argv[1], encoding='utf-8') as f:\n    json.load(f)\n"


def _run(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of one child process."""
    started = time.perf_counter()
    with open(os.devnull, "w") as sink:
        pid = subprocess.Popen(argv, stdout=sink, cwd=REPO, env=env).pid
        _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{argv[:4]} failed (status {status})")
    return elapsed, usage.ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("snapshot")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--also", help="another checkout's respread, timed alike (e.g. ../main, for before/after)"
    )
    args = parser.parse_args()
    size = Path(args.snapshot).stat().st_size
    python = sys.executable
    floor = [python, "-c", JSON_LOAD, args.snapshot]
    plan = [
        python,
        "-m",
        "respread.cli",
        "plan",
        "--snapshot",
        args.snapshot,
        "--max-snapshot-size",
        str(size),
        "-o",
        "json",
        "--quiet",
    ]
    sides: list[tuple[str, list[str], dict[str, str] | None]] = [
        ("json.load", floor, None),
        ("respread plan", plan, None),
    ]
    if args.also:
        env = dict(os.environ, PYTHONPATH=str(Path(args.also).resolve() / "operator"))
        sides.append((f"respread plan ({args.also})", plan, env))
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name, _, _ in sides}
    for i in range(args.repeats):
        for name, argv, env in sides:
            load = os.getloadavg()[0]
            t, rss = _run(argv, env)
            runs[name].append((t, rss))
            print(f"  {i + 1} {name}: {t:.2f} s, {rss:.0f} MB (load {load:.1f})", file=sys.stderr)
    print(
        f"| {Path(args.snapshot).name} ({size / 1e9:.2f} GB) | time (median) | peak RSS (median) |"
    )
    print("|---|---:|---:|")
    med = {
        k: (statistics.median(t for t, _ in v), statistics.median(r for _, r in v))
        for k, v in runs.items()
    }
    for name, (t, rss) in med.items():
        print(f"| {name} | {t:.2f} s | {rss:.0f} MB |")
    ft, fr = med["json.load"]
    for name, (pt, pr) in med.items():
        if name != "json.load":
            print(f"| {name} / json.load | **{pt / ft:.2f}x** | **{pr / fr:.2f}x** |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Scan cost against cluster size: how the operator's scan time and memory grow with the cluster.

For each size (NODES:PODS), one fresh Python process (so that sizes share no heap) fills the
operator's watch cache with operator_scale.py's population (bench/population_objects.py), one
object at a time as listings deliver it (the population is built in a process of its own and
streamed in as JSON lines, so that the RSS holds the cache and not what building it left), and
then, for each remedy, scans a DryRun policy as `respread run` does (bench/operator_scan.py's
`one_scan`, minus the requests):

- the first scan (analysis made afresh);
- `--scans` scans with nothing changed: the cache hands out the same state object, so each
  reuses the analysis of the scan before (the analysis memo) and its plan (no pod is younger
  than the policy's minPodAge of 0 s and nothing was evicted: remedies/evict/clock.py);
- `--scans` scans each after one pod's labels changed (a watch event, as operator_scan.py's
  `--touch`): each analyzes the whole cluster afresh.

Each scan is timed in CPU seconds (`time.process_time`) and wall seconds, with the share of
`pipeline.scan` in it; RSS is read after each scan, and the peak RSS of the scans (VmHWM, reset
after the population is built, where the kernel allows it). The parent prints a markdown table
(one row per size and remedy) and the growth exponent of each column between the smallest and
the largest size (the log-log slope: 1 is linear in the pods, 0 is flat), and writes every raw
figure to bench/out/scan-curves-<timestamp>.json.

    .venv/bin/python bench/scan_curves.py                                   # every size, evict
    .venv/bin/python bench/scan_curves.py --sizes 500:15000,1000:30000 --remedies evict,deletionCost
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

import operator_scan  # noqa: E402
import population_objects  # noqa: E402
from respread.runtime.memory import PolicyMemory  # noqa: E402

DEFAULT_SIZES = "500:15000,1000:30000,2000:60000,3000:90000,5000:150000"
PHASES = ("first", "unchanged", "changed")  # the three kinds of scan, in the order they run
CHILD_FLAG = "--measure-one-size"
EMIT_FLAG = "--emit-population"


def _progress(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _hwm_mb() -> float | None:
    """The process's peak RSS (VmHWM), in MB."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def _reset_hwm() -> bool:
    """Resets VmHWM to the current RSS (Linux: `5` to /proc/self/clear_refs); whether it could."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
            f.write("5")
    except OSError:
        return False
    return True


def parse_sizes(text: str) -> list[tuple[int, int]]:
    """`NODES:PODS,NODES:PODS,...` as (nodes, pods) pairs; a bad entry is named."""
    sizes = []
    for entry in text.split(","):
        nodes, sep, pods = entry.strip().partition(":")
        if not (sep and nodes.isdigit() and pods.isdigit() and int(nodes) > 0 and int(pods) > 0):
            raise ValueError(f"--sizes: {entry!r} is not NODES:PODS (two positive integers)")
        sizes.append((int(nodes), int(pods)))
    return sizes


def emit_population(nodes: int, pods: int, out: IO[bytes]) -> None:
    """The population as JSON lines, one object a line."""
    for obj in population_objects.population(nodes, pods):
        out.write(json.dumps(obj, separators=(",", ":")).encode())
        out.write(b"\n")
    out.flush()


def streamed_population(nodes: int, pods: int) -> Iterator[dict[str, Any]]:
    """The population built in another process and read here one object at a time, as
    listings deliver it: what building it allocates never enters this process's heap (freed,
    it would still be held by the allocator and counted in the RSS)."""
    command = [sys.executable, __file__, EMIT_FLAG, f"{nodes}:{pods}"]
    with subprocess.Popen(command, stdout=subprocess.PIPE) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            yield json.loads(line)
    if proc.returncode != 0:
        raise RuntimeError(f"building the population {nodes}:{pods} exited {proc.returncode}")


def _scan_row(
    filled: operator_scan.Filled, policy: Any, memory: PolicyMemory, now: float, phase: str
) -> dict[str, Any]:
    row: dict[str, Any] = dict(operator_scan.one_scan(filled.cache, policy, memory, now))
    row.update(phase=phase, rss_mb=operator_scan._rss_mb(), hwm_mb=_hwm_mb())
    return row


def _share(rows: Sequence[dict[str, Any]]) -> float:
    """pipeline.scan's share of the scans' CPU time."""
    total = sum(r["cpu"] for r in rows)
    return sum(r["pipeline_cpu"] for r in rows) / total if total > 0 else 0.0


def summarize(rows: Sequence[dict[str, Any]], *, base_mb: float, pods: int) -> dict[str, Any]:
    """Per kind of scan: the median CPU and wall seconds, pipeline.scan's share of the CPU, and
    whether each scan reused the analysis and the plan before it, or the namespaces it carried
    (of all); the first scan's plan; the RSS."""
    out: dict[str, Any] = {}
    for phase in PHASES:
        of = [r for r in rows if r["phase"] == phase]
        if of:
            out[phase] = {
                "cpu": statistics.median(r["cpu"] for r in of),
                "wall": statistics.median(r["total"] for r in of),
                "pipeline_share": _share(of),
                "reused": [bool(r["reused"]) for r in of],
                "plan_reused": [bool(r["plan_reused"]) for r in of],
                "carried": [(int(r["carried"]), int(r["namespaces"])) for r in of],
            }
    first = rows[0]
    steady = rows[-1]["rss_mb"]
    out.update(
        violations=int(first["violations"]),
        moves=int(first["moves"]),
        deferred=int(first["deferred"]),
        rss_steady_mb=steady,
        rss_peak_mb=max((r["hwm_mb"] for r in rows if r["hwm_mb"] is not None), default=None),
        kb_per_pod=(steady - base_mb) * 1024 / pods if pods else None,
    )
    return out


def _measure_remedy(
    filled: operator_scan.Filled, remedy: str, scans: int, marks: list[int]
) -> list[dict[str, Any]]:
    policy = operator_scan._policy(remedy)
    memory = PolicyMemory()
    now = population_objects.POPULATED_AT
    phases = ["first"] + ["unchanged"] * scans + ["changed"] * scans
    rows = []
    for i, phase in enumerate(phases):
        if phase == "changed":
            marks[0] += 1
            operator_scan.touch(filled, marks[0])
        rows.append(_scan_row(filled, policy, memory, now + 30.0 * i, phase))
    return rows


def measure(
    nodes: int,
    pods: int,
    remedies: Sequence[str],
    scans: int,
    *,
    freeze: bool = True,
    streamed: bool = True,
    progress: Callable[[str], None] = _progress,
) -> dict[str, Any]:
    """Every figure for one size, in this process: the population cached (built in another
    process and streamed in, or built here), then the scans of each remedy (one policy memory
    each, dropped before the next remedy)."""
    base = operator_scan._rss_mb()
    cpu, wall = time.process_time(), time.perf_counter()
    source = (streamed_population if streamed else population_objects.population)(nodes, pods)
    filled = operator_scan.fill_stream(source, freeze=freeze)
    size: dict[str, Any] = {
        "nodes": filled.cache.count("Node"),
        "pods": filled.cache.count("Pod"),
        "requested": [nodes, pods],
        "population": "streamed from another process" if streamed else "built in process",
        "rss_base_mb": base,
        "fill": {
            "cpu": time.process_time() - cpu,
            "wall": time.perf_counter() - wall,
            "rss_mb": operator_scan._rss_mb(),
            "peak_mb": operator_scan._peak_mb(),
        },
        "peak_reset": _reset_hwm(),
        "remedies": {},
    }
    progress(
        f"{nodes}:{pods}: population cached in {size['fill']['wall']:.1f}s, "
        f"RSS {size['fill']['rss_mb']:.0f} MB"
    )
    marks = [0]
    for remedy in remedies:
        rows = _measure_remedy(filled, remedy, scans, marks)
        summary = summarize(rows, base_mb=base, pods=size["pods"])
        size["remedies"][remedy] = {"scans": rows, "summary": summary}
        gc.collect()
        progress(f"{nodes}:{pods} {remedy}: {_progress_line(summary)}")
    return size


def _progress_line(s: dict[str, Any]) -> str:
    times = ", ".join(f"{p} {s[p]['cpu']:.2f}s CPU ({s[p]['wall']:.2f}s)" for p in PHASES if p in s)
    return (
        f"{times}; {s['violations']} violations, {s['moves']} + {s['deferred']} moves; "
        f"RSS {s['rss_steady_mb']:.0f} MB"
    )


def slope(x1: float, y1: float, x2: float, y2: float) -> float | None:
    """The log-log slope between (x1, y1) and (x2, y2): y grows as x to that power. None when
    it is not defined (a value not positive, or the same x)."""
    if min(x1, y1, x2, y2) <= 0 or x1 == x2:
        return None
    return math.log(y2 / y1) / math.log(x2 / x1)


def _cell(s: dict[str, Any], phase: str) -> str:
    if phase not in s:
        return "-"
    return f"{s[phase]['cpu']:.2f} s ({s[phase]['wall']:.2f})"


def _row(size: dict[str, Any], remedy: str) -> str:
    s = size["remedies"][remedy]["summary"]
    shares = " / ".join(f"{s[p]['pipeline_share']:.0%}" if p in s else "-" for p in PHASES)
    per_pod = "-" if s["kb_per_pod"] is None else f"{s['kb_per_pod']:.2f} KB"
    cells = [
        f"{size['pods']:,}",
        f"{size['nodes']:,}",
        remedy,
        f"{s['violations']:,}",
        f"{s['moves']:,} + {s['deferred']:,}",
        *(_cell(s, p) for p in PHASES),
        shares,
        f"{s['rss_steady_mb']:.0f} MB",
        per_pod,
    ]
    return "| " + " | ".join(cells) + " |"


def _exponent(small: dict[str, Any], large: dict[str, Any], pick: Callable[[Any], Any]) -> str:
    x1, x2 = small["pods"], large["pods"]
    try:
        y1, y2 = pick(small), pick(large)
    except KeyError:
        return "-"
    k = slope(x1, y1, x2, y2)
    return "-" if k is None else f"{k:.2f}"


def _exponent_row(sizes: Sequence[dict[str, Any]], remedy: str) -> str | None:
    """The growth exponents between the smallest and the largest size measured for `remedy`."""
    done = sorted((s for s in sizes if remedy in s.get("remedies", {})), key=lambda s: s["pods"])
    if len(done) < 2 or done[0]["pods"] == done[-1]["pods"]:
        return None
    small, large = done[0], done[-1]

    def summary(size: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = size["remedies"][remedy]["summary"]
        return result

    def time_cell(phase: str) -> str:
        cpu = _exponent(small, large, lambda z: summary(z)[phase]["cpu"])
        wall = _exponent(small, large, lambda z: summary(z)[phase]["wall"])
        return f"{cpu} ({wall})"

    rss = _exponent(small, large, lambda z: summary(z)["rss_steady_mb"] - z["rss_base_mb"])
    label = f"growth exponent {small['pods']:,} to {large['pods']:,} pods"
    cells = [label, "", remedy, "", "", *(time_cell(p) for p in PHASES), "", f"{rss} (over base)"]
    return "| " + " | ".join([*cells, ""]) + " |"


HEADER = (
    "| pods | nodes | remedy | violations | moves planned (this run + later runs) "
    "| first scan, CPU (wall) | unchanged, median | after a change, median "
    "| pipeline.scan share (first / unchanged / changed) | RSS steady | RSS per pod |"
)


def table(sizes: Sequence[dict[str, Any]], remedies: Sequence[str]) -> str:
    """The markdown table: one row per size and remedy, then each remedy's growth exponents."""
    lines = [HEADER, "|" + "---|" * 3 + "---:|" * 8]
    done = sorted((s for s in sizes if "remedies" in s), key=lambda s: s["pods"])
    for size in done:
        lines += [_row(size, r) for r in remedies if r in size["remedies"]]
    lines += [row for r in remedies if (row := _exponent_row(done, r)) is not None]
    return "\n".join(lines)


def _run_child(nodes: int, pods: int, remedies: Sequence[str], scans: int) -> dict[str, Any]:
    """One size measured in a fresh process (its progress on our stderr)."""
    command = [sys.executable, __file__, CHILD_FLAG, f"{nodes}:{pods}"]
    command += ["--remedies", ",".join(remedies), "--scans", str(scans)]
    done = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        return {"requested": [nodes, pods], "error": f"exited with {done.returncode}"}
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _commit() -> str | None:
    done = subprocess.run(
        ["git", "-C", str(BENCH), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or None


def _child(size: str, remedies: Sequence[str], scans: int) -> int:
    """Measures one size; the JSON on stdout, everything else on stderr."""
    (nodes, pods), out = parse_sizes(size)[0], sys.stdout
    sys.stdout = sys.stderr  # nothing but the figures on the parent's pipe
    figures = measure(nodes, pods, remedies, scans)
    json.dump(figures, out)
    out.flush()
    return 0


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=DEFAULT_SIZES, help="NODES:PODS,... (%(default)s)")
    parser.add_argument("--remedies", default="evict", help="comma-separated: evict, ...")
    parser.add_argument("--scans", type=int, default=3, help="unchanged and changed scans each")
    parser.add_argument("--out", type=Path, help="the JSON file (bench/out/scan-curves-*.json)")
    parser.add_argument(CHILD_FLAG, metavar="NODES:PODS", help=argparse.SUPPRESS)
    parser.add_argument(EMIT_FLAG, metavar="NODES:PODS", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.remedies = [r.strip() for r in args.remedies.split(",") if r.strip()]
    unknown = [r for r in args.remedies if r not in operator_scan.REMEDIES]
    if unknown or not args.remedies:
        parser.error(f"--remedies: {unknown or 'none'}; known: {sorted(operator_scan.REMEDIES)}")
    if args.scans < 1:
        parser.error("--scans: at least 1")
    try:
        args.size_list = parse_sizes(args.sizes)
    except ValueError as e:
        parser.error(str(e))
    return args


def main(argv: list[str] | None = None) -> int:
    args = _arguments(argv)
    child = getattr(args, CHILD_FLAG.lstrip("-").replace("-", "_"))
    if child:
        return _child(child, args.remedies, args.scans)
    emit = getattr(args, EMIT_FLAG.lstrip("-").replace("-", "_"))
    if emit:
        (nodes, pods), out = parse_sizes(emit)[0], sys.stdout.buffer
        sys.stdout = sys.stderr  # nothing but the objects on the pipe
        emit_population(nodes, pods, out)
        return 0
    stamp = datetime.now(UTC)
    run: dict[str, Any] = {
        "started": stamp.isoformat(timespec="seconds"),
        "commit": _commit(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "scans": args.scans,
        "remedies": args.remedies,
        "sizes": [],
    }
    for nodes, pods in args.size_list:
        _progress(f"{nodes}:{pods}: measuring in a fresh process (load {os.getloadavg()[0]:.1f})")
        run["sizes"].append(_run_child(nodes, pods, args.remedies, args.scans))
        if "error" in run["sizes"][-1]:
            _progress(f"{nodes}:{pods}: the measuring process {run['sizes'][-1]['error']}")
    run["loadavg_end"] = os.getloadavg()
    path = args.out or BENCH / "out" / f"scan-curves-{stamp:%Y%m%d-%H%M%S}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(run, indent=1) + "\n")
    print(table(run["sizes"], args.remedies))
    print(f"\nraw figures: {path}")
    return 1 if any("error" in s for s in run["sizes"]) else 0


if __name__ == "__main__":
    sys.exit(main())

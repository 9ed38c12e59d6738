"""respread and the real descheduler side by side, on one control plane and one population.

bench/operator_scale.py's control plane and population (bench/scale_population.py: Ready,
untainted nodes over four zones, Deployments with zone and hostname constraints, budgets on a
third, a tenth skewed). Then, one after the other so that neither slows the other:

- respread: `respread run`, a DryRun policy with eviction, every `--interval`, for `--cycles`
  reports (operator_scale.measure);
- the descheduler: sigs.k8s.io/descheduler's own binary (hack/descheduler builds it from the Go
  module proxy and caches it by version), `--dry-run`, `--descheduling-interval`, a profile with
  only RemovePodsViolatingTopologySpreadConstraint (constraints [DoNotSchedule], its defaults
  otherwise: topologyBalanceNodeFit true; DefaultEvictor at its defaults), for `--cycles` cycles.

For each: RSS (steady median after the first cycle, and peak), time per cycle (respread: its
scans' own durations; the descheduler: from its "Resetting pod evictor counters" line to its
"Number of evictions/requests" line, klog's timestamps), API requests per cycle (the audit log,
each tool its own user, between the second and the last cycle), violations found (respread: the
status's count; the descheduler logs the constraints it found balanced, at -v=2, so its count is
the constraint groups respread counted in the same cluster less those), and evictions it would
make (respread: planned in the status; the descheduler: its "Evicted pod in dry run mode" lines
per cycle; the pods differ, the counts are what each would do).

    DESCHEDULER=$(hack/descheduler | tail -n1)
    .venv/bin/python bench/descheduler_side_by_side.py --sizes 170:5000 --cycles 3 --interval 20s

Figures go to stdout as a Markdown table and to bench/out/descheduler-side-by-side-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import config

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))

import operator_scale  # noqa: E402
from operator_scale import (  # noqa: E402
    POLICY,
    Row,
    _audit,
    _request_kind,
    _RssSampler,
    _ts,
    add_arguments,
    control_plane,
    measure,
)
from scale_population import populate  # noqa: E402

DESCHEDULER_USER = "respread-bench-descheduler"
operator_scale.AUDITED_USERS.append(DESCHEDULER_USER)

DESCHEDULER_POLICY = """\
apiVersion: descheduler/v1alpha2
kind: DeschedulerPolicy
profiles:
  - name: spread
    pluginConfig:
      - name: DefaultEvictor
        args: {}
      - name: RemovePodsViolatingTopologySpreadConstraint
        args:
          constraints: [DoNotSchedule]
    plugins:
      balance:
        enabled: [RemovePodsViolatingTopologySpreadConstraint]
"""
# klog: I1126 18:50:01.123456   12345 file.go:123] "message" key=value ...
KLOG = re.compile(r"^[IWEF](\d{4}) (\d\d:\d\d:\d\d\.\d+)\s+\d+ [^\]]+\] (.*)$")
CYCLE_START = "Resetting pod evictor counters"
CYCLE_END = "Number of evictions/requests"
DRY_EVICTION = "Evicted pod in dry run mode"
BALANCED = "Skipping topology constraint because it is already balanced"


@dataclass
class Descheduler:
    version: str
    cycles: list[float] = field(default_factory=list)  # seconds per cycle
    evictions: list[int] = field(default_factory=list)  # per cycle
    balanced: list[int] = field(default_factory=list)  # constraints found balanced, per cycle
    workloads_evicted: list[int] = field(default_factory=list)  # owners with an eviction
    rss_steady_mb: float | None = None
    rss_peak_mb: float = 0.0
    requests_per_cycle: dict[str, float] | None = None  # None: fewer than two cycles
    startup_requests: dict[str, int] = field(default_factory=dict)  # before the first cycle ended
    errors: list[str] = field(default_factory=list)


def _klog_time(day: str, clock: str) -> float:
    year = time.gmtime().tm_year
    return datetime.strptime(f"{year}{day} {clock}", "%Y%m%d %H:%M:%S.%f").timestamp()


def read_cycles(log: str) -> tuple[Descheduler, list[tuple[float, float]]]:
    """The cycles in a descheduler log (-v=3): durations, dry-run evictions, balanced
    constraints; and each cycle's (start, end) on the wall clock (UTC, as klog writes it)."""
    out = Descheduler("")
    spans: list[tuple[float, float]] = []
    start: float | None = None
    evicted = balanced = 0
    owners: set[str] = set()
    for line in log.splitlines():
        m = KLOG.match(line)
        if m is None:
            continue
        at, text = _klog_time(m.group(1), m.group(2)), m.group(3)
        if line.startswith("E"):
            out.errors.append(line[:200])
        if CYCLE_START in text:
            start, evicted, balanced, owners = at, 0, 0, set()
        elif DRY_EVICTION in text:
            evicted += 1
            pod = re.search(r'pod="([^"]+)"', text)
            if pod:  # <namespace>/<app>-<hash>-<n>: the workload is <namespace>/<app>
                owners.add(pod.group(1).rsplit("-", 2)[0])
        elif BALANCED in text:
            balanced += 1
        elif CYCLE_END in text and start is not None:
            spans.append((start, at))
            out.cycles.append(at - start)
            out.evictions.append(evicted)
            out.balanced.append(balanced)
            out.workloads_evicted.append(len(owners))
            start = None
    return out, spans


def run_descheduler(cp: Any, binary: str, args: argparse.Namespace) -> Descheduler:
    kubeconfig = cp.user_kubeconfig(DESCHEDULER_USER, groups=["system:masters"])
    policy = cp.tmp / "descheduler-policy.yaml"
    policy.write_text(DESCHEDULER_POLICY)
    log_path = cp.tmp / "descheduler.log"
    started = time.time()
    with log_path.open("w") as out:
        proc = subprocess.Popen(
            [
                binary,
                f"--kubeconfig={kubeconfig}",
                f"--policy-config-file={policy}",
                "--dry-run",
                f"--descheduling-interval={args.interval}",
                "--disable-metrics",
                "--secure-port=0",
                "--v=3",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    sampler = _RssSampler(proc.pid)
    deadline = time.monotonic() + args.timeout
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"the descheduler exited: {log_path.read_text()[-3000:]}")
            if log_path.read_text(errors="replace").count(CYCLE_END) >= args.cycles:
                break
            time.sleep(0.5)
    finally:
        sampler.stop()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
    result, spans = read_cycles(log_path.read_text(errors="replace"))
    result.version = subprocess.run(
        [binary, "version"], capture_output=True, text=True, check=False
    ).stdout.strip()
    samples = sampler.samples
    result.rss_peak_mb = max((r for _, r in samples), default=0.0)
    if spans:
        # monotonic samples against wall-clock spans: the offset at the start is enough
        offset = time.time() - time.monotonic()
        after = [r for t, r in samples if t + offset >= spans[0][1]]
        result.rss_steady_mb = statistics.median(after) if after else None
    _requests(cp, spans, started, result)
    return result


def _requests(cp: Any, spans: list[tuple[float, float]], since: float, out: Descheduler) -> None:
    """The descheduler's requests from the end of its first cycle to the end of its last, per
    cycle, and those before (the informers' LISTs and WATCHes: its start-up)."""
    first = spans[0][1] if spans else float("inf")
    last = spans[-1][1] if spans else float("inf")
    counts: dict[str, int] = {}
    for e in _audit(cp.audit.path):
        if (e.get("user") or {}).get("username") != DESCHEDULER_USER:
            continue
        at = _ts(e.get("requestReceivedTimestamp", ""))
        if at < since:
            continue
        kind = _request_kind(e)
        if at <= first:
            out.startup_requests[kind] = out.startup_requests.get(kind, 0) + 1
        elif at <= last:
            counts[kind] = counts.get(kind, 0) + 1
    if len(spans) >= 2:
        out.requests_per_cycle = {
            k: round(v / (len(spans) - 1), 2) for k, v in sorted(counts.items())
        }


def table(row: Row, groups: int | None, d: Descheduler) -> str:
    def med(xs: list[float] | list[int]) -> str:
        """The median of the later cycles (the first may run before its cache is complete:
        at 5,000 pods it saw 212 balanced constraints, the later ones 731)."""
        later = xs[1:] or xs
        return f"{statistics.median(later):g}" if later else "-"

    respread_later = statistics.median(row.later_scans_s) if row.later_scans_s else None
    respread_reqs = ", ".join(f"{v:g} {k}" for k, v in row.requests_per_scan.items()) or "-"
    if d.requests_per_cycle is None:
        d_reqs = "-"
    else:
        d_reqs = ", ".join(f"{v:g} {k}" for k, v in d.requests_per_cycle.items()) or "0"
    d_reqs += (
        " (start-up: "
        + (", ".join(f"{v} {k}" for k, v in d.startup_requests.items()) or "none")
        + ")"
    )
    d_cycle = statistics.median(d.cycles[1:] or d.cycles) if d.cycles else None
    found = (
        f"{groups - int(statistics.median(d.balanced))}"
        if groups is not None and d.balanced
        else "-"
    )
    lines = [
        f"{row.pods:,} pods / {row.nodes:,} nodes; descheduler: {d.version}",
        "",
        "| | respread (DryRun, evict) | descheduler (dry-run, RemovePodsViolating"
        "TopologySpreadConstraint) |",
        "|---|---|---|",
        f"| RSS steady (peak) | {row.rss_steady_mb or 0:.0f} MB ({row.rss_peak_mb:.0f}) "
        f"| {d.rss_steady_mb or 0:.0f} MB ({d.rss_peak_mb:.0f}) |",
        f"| time per cycle (first; later median) | {row.first_scan_s or 0:.2f} s; "
        f"{respread_later or 0:.2f} s | {d.cycles[0] if d.cycles else 0:.2f} s; "
        f"{d_cycle or 0:.2f} s |",
        f"| API requests per cycle | {respread_reqs} | {d_reqs} |",
        f"| violations found | {row.violations} (unfixable {row.unfixable}) "
        f"| {found} (of {groups} constraint groups, {med(d.balanced)} balanced) |",
        f"| evictions it would make (per cycle) | {row.planned} "
        f"| {med(d.evictions)} (from {med(d.workloads_evicted)} workloads) |",
        f"| ERROR lines in the log | {len(row.log_errors)} | {len(d.errors)} |",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="170:5000", help="comma-separated NODES:PODS")
    parser.add_argument("--cycles", type=int, default=4, help="cycles of each tool")
    parser.add_argument("--descheduler", default=os.environ.get("DESCHEDULER", ""))
    add_arguments(parser)
    args = parser.parse_args()
    args.scans = args.cycles
    binary = (
        args.descheduler
        or subprocess.run(
            [str(REPO / "hack" / "descheduler")], capture_output=True, text=True, check=True
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    results = []
    for size in args.sizes.split(","):
        nodes, pods = (int(x) for x in size.split(":"))
        tmp = Path(tempfile.mkdtemp(prefix="respread-vs-descheduler-"))
        cp = control_plane(tmp)
        try:
            api = config.new_client_from_config(config_file=str(cp.kubeconfig))
            print(f"building {nodes} nodes / {pods} pods ...", file=sys.stderr, flush=True)
            pop = populate(api, nodes, pods, prefix="b")
            row = Row(len(pop.nodes), pop.pods)
            measure(cp, row, args, policy=f"{POLICY}-evict")
            groups = row.constraint_groups
            d = run_descheduler(cp, binary, args)
        finally:
            cp.stop()
            if not args.keep:
                subprocess.run(["rm", "-rf", str(tmp)], check=False)
        print(table(row, groups, d), flush=True)
        results.append(
            {"respread": asdict(row), "constraint_groups": groups, "descheduler": asdict(d)}
        )
    out = REPO / "bench" / "out"
    out.mkdir(exist_ok=True)
    path = out / f"descheduler-side-by-side-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2))
    print(f"\nresults: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

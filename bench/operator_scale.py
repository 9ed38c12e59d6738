"""The operator at scale, on the real control plane: memory, time to a first report, scan times
and the requests it makes.

For each size it starts etcd and kube-apiserver (no controller-manager, scheduler or kwok: the
pods are bound directly and nothing else writes), creates N fake nodes over three zones and
ReplicaSet-owned pods bound to them (a tenth of the workloads skewed), then runs `respread run`
as its own user with a DryRun policy scanning every 30 s, and reports:

- listed: seconds from the operator's start until every kind was listed (its log says when);
- first status: seconds from the operator's start until the policy's first report was written;
- first scan / later scans: the scans' own durations (the operator's one INFO line per scan);
- RSS: the operator's resident memory, steady (median over the later scans) and peak;
- requests per scan: what the operator sent the API server between two scans, from the audit
  log (LIST, WATCH, PATCH, Event creates), for the later scans;
- Events: how many the operator created.

    .venv/bin/python bench/operator_scale.py                       # 10k, 30k, 60k, 150k pods
    .venv/bin/python bench/operator_scale.py --sizes 500:10000 --scans 3

Figures go to stdout as a Markdown table and to bench/out/operator-scale-<time>.json.
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
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client, config

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "cluster"))
from kube_harness import ControlPlane, resolve_assets  # noqa: E402
from population import populate  # noqa: E402

OPERATOR_USER = "respread-bench-operator"
POLICY = "bench"
# Only the operator's requests are audited (the population's would swamp the log).
AUDIT_POLICY = f"""\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
  - level: Metadata
    users: ["{OPERATOR_USER}"]
  - level: None
"""
SCAN_LINE = re.compile(r"RebalancePolicy (\S+) \(\w+\): .* ([0-9.]+)s$")


@dataclass
class Row:
    nodes: int
    pods: int
    populate_s: float = 0.0
    listed_s: float | None = None
    first_status_s: float | None = None
    first_scan_s: float | None = None
    later_scans_s: list[float] = field(default_factory=list)
    rss_steady_mb: float | None = None
    rss_peak_mb: float = 0.0
    requests_per_scan: dict[str, float] = field(default_factory=dict)
    events_created: int = 0
    scans: int = 0
    log_lines: int = 0
    violations: int | None = None


# --------------------------------------------------------------------------- measuring


def _rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _audit(path: Path) -> list[dict[str, Any]]:
    out = []
    with path.open() as f:
        for line in f:
            e = json.loads(line)
            if e.get("stage") == "ResponseComplete":
                out.append(e)
    return out


def _request_kind(e: dict[str, Any]) -> str:
    ref = e.get("objectRef") or {}
    verb = e.get("verb", "")
    resource = ref.get("resource", "")
    if ref.get("subresource"):
        resource += "/" + ref["subresource"]
    return f"{verb} {resource}"


class _RssSampler:
    """A process's resident memory, every quarter second, on a thread of its own."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[tuple[float, float]] = []  # (monotonic, MB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = _rss_mb(self.pid)
            if rss is not None:
                self.samples.append((time.monotonic(), rss))
            self._stop.wait(0.25)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def measure(cp: ControlPlane, row: Row, args: argparse.Namespace, policy: str = POLICY) -> None:
    kubeconfig = cp.user_kubeconfig(OPERATOR_USER, groups=["system:masters"])
    api = config.new_client_from_config(config_file=str(cp.kubeconfig))
    log_path = cp.tmp / "operator.log"
    started, started_wall = time.monotonic(), time.time()
    run = _Run(
        _start_operator(kubeconfig, log_path, args, cp.tmp),
        client.CustomObjectsApi(api),
        log_path,
        policy,
        started,
        started_wall,
    )
    sampler = _RssSampler(run.proc.pid)
    _create_policy(run.custom, policy, args.interval)
    try:
        run.follow(row, args.scans, args.timeout)
    finally:
        sampler.stop()
        if args.profile_memory and run.proc.poll() is None:
            _keep_memory_profile(run.proc, cp.tmp, row.pods)
        _stop_operator(run.proc)
    _record_scans(row, run, sampler.samples)
    _record_requests(row, _audit(cp.audit.path), run)


def _start_operator(
    kubeconfig: Path, log_path: Path, args: argparse.Namespace, tmp: Path
) -> subprocess.Popen[bytes]:
    with log_path.open("w") as out:
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "respread.cli",
                "run",
                "--kubeconfig",
                str(kubeconfig),
                "--metrics-port",
                "0",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=REPO,
            env=_operator_env(args, tmp),
        )


def _create_policy(custom: client.CustomObjectsApi, policy: str, interval: str) -> None:
    custom.create_cluster_custom_object(
        "respread.io",
        "v1alpha1",
        "rebalancepolicies",
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": policy},
            "spec": {"mode": "DryRun", "schedule": {"interval": interval}},
        },
    )


@dataclass
class _Run:
    """One operator being followed: its process and log, the policy it scans, and what it has
    shown so far (its scans, from the log; its reports, from the status)."""

    proc: subprocess.Popen[bytes]
    custom: client.CustomObjectsApi
    log_path: Path
    policy: str
    started: float  # monotonic, when the operator was started
    started_wall: float  # the same moment on the wall clock (the audit log's)
    scan_times: list[tuple[float, float]] = field(default_factory=list)  # (seen, duration)
    written: list[float] = field(default_factory=list)  # monotonic, when each report was seen
    log_lines: int = 0  # lines of the log read
    last_scan: str | None = None  # the last report's lastScanTime

    def follow(self, row: Row, scans: int, timeout: float) -> None:
        """The log and the status, until ``scans`` reports were written or ``timeout`` is up."""
        deadline = time.monotonic() + timeout
        while len(self.written) < scans and time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the operator exited: {self.log_path.read_text()[-3000:]}")
            self._read_log(row)
            self._read_status(row)
            time.sleep(0.5)

    def _read_log(self, row: Row) -> None:
        """The log's new lines: when every kind was listed, and each scan of the policy."""
        lines = self.log_path.read_text(errors="replace").splitlines()
        for line in lines[self.log_lines :]:
            if row.listed_s is None and "listed every watched kind" in line:
                row.listed_s = time.monotonic() - self.started
            m = SCAN_LINE.search(line)
            if m and m.group(1) == self.policy:
                self.scan_times.append((time.monotonic(), float(m.group(2))))
        self.log_lines = len(lines)

    def _read_status(self, row: Row) -> None:
        """A new report in the policy's status (another lastScanTime)."""
        policy = self.custom.get_cluster_custom_object(
            "respread.io", "v1alpha1", "rebalancepolicies", self.policy
        )
        st = policy.get("status") or {}
        if st.get("summary") and st.get("lastScanTime") != self.last_scan:
            self.last_scan = st.get("lastScanTime")
            self.written.append(time.monotonic())
            if row.first_status_s is None:
                row.first_status_s = self.written[0] - self.started
                row.violations = st["summary"].get("violations")


def _keep_memory_profile(proc: subprocess.Popen[bytes], tmp: Path, pods: int) -> None:
    """Ask the operator for its tracemalloc snapshot (SIGUSR2) and keep it under bench/out/."""
    proc.send_signal(signal.SIGUSR2)
    profile = tmp / "memprofile.txt"
    for _ in range(600):  # a snapshot of a large heap takes minutes
        if profile.exists():
            break
        time.sleep(1)
    if profile.exists():
        kept = REPO / "bench" / "out" / f"memprofile-{pods}.txt"
        kept.parent.mkdir(exist_ok=True)
        kept.write_text(profile.read_text())
        print(f"memory profile: {kept}", file=sys.stderr)


def _stop_operator(proc: subprocess.Popen[bytes]) -> None:
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()


def _record_scans(row: Row, run: _Run, samples: list[tuple[float, float]]) -> None:
    """The scans' durations, the reports seen, and the memory: peak, and steady (the median
    after the first report)."""
    row.log_lines = len(run.log_path.read_text(errors="replace").splitlines())
    row.scans = len(run.written)
    if run.scan_times:
        row.first_scan_s = run.scan_times[0][1]
        row.later_scans_s = [d for _, d in run.scan_times[1:]]
    row.rss_peak_mb = max((r for _, r in samples), default=0.0)
    if len(run.written) >= 2:
        after_first = [r for t, r in samples if t >= run.written[0]]
        row.rss_steady_mb = statistics.median(after_first) if after_first else None


def _record_requests(row: Row, events: list[dict[str, Any]], run: _Run) -> None:
    """The Events the operator created, and its requests per scan: those between the second
    and the last report seen (the first scan's Events, posted after its report, stay out)."""
    row.events_created = sum(
        1
        for e in events
        if _request_kind(e) == "create events" and e.get("responseStatus", {}).get("code", 0) < 300
    )
    written = run.written
    if len(written) < 3:
        return
    first_wall = run.started_wall + (written[1] - run.started)
    last_wall = run.started_wall + (written[-1] - run.started)
    counts: dict[str, int] = {}
    for e in events:
        at = _ts(e.get("requestReceivedTimestamp", ""))
        if first_wall < at <= last_wall:
            kind = _request_kind(e)
            counts[kind] = counts.get(kind, 0) + 1
    n = len(written) - 2
    row.requests_per_scan = {k: round(v / n, 2) for k, v in sorted(counts.items())}


def _operator_env(args: argparse.Namespace, tmp: Path) -> dict[str, str]:
    env = dict(os.environ)
    paths = []
    if args.operator_src:  # another checkout's respread (e.g. an older commit, for comparison)
        paths.append(str(Path(args.operator_src).resolve() / "operator"))
    if args.profile_memory:
        paths.append(str(REPO / "bench" / "memprofile"))
        env["RESPREAD_MEMPROFILE"] = str(tmp / "memprofile.txt")
    if paths:
        env["PYTHONPATH"] = os.pathsep.join([*paths, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def _ts(text: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def run_sizes(sizes: list[tuple[int, int]], args: argparse.Namespace) -> list[Row]:
    """One control plane, grown from one size to the next (nodes and pods added, each size's
    share skewed alike), with a fresh operator and policy measured at each size."""
    rows: list[Row] = []
    tmp = Path(tempfile.mkdtemp(prefix="respread-scale-"))
    cp = ControlPlane(resolve_assets(), tmp)
    cp.audit_policy.write_text(AUDIT_POLICY)
    try:
        cp.start()
        api = config.new_client_from_config(config_file=str(cp.kubeconfig))
        ext = client.ApiextensionsV1Api(api)
        ext.create_custom_resource_definition(
            yaml.safe_load((REPO / "crds" / "rebalancepolicy.yaml").read_text())
        )
        have_nodes = have_pods = 0
        for i, (nodes, pods) in enumerate(sizes):
            row = Row(nodes, pods)
            t0 = time.monotonic()
            print(f"growing to {nodes} nodes / {pods} pods ...", file=sys.stderr, flush=True)
            populate(api, nodes - have_nodes, pods - have_pods, prefix=f"b{i}")
            have_nodes, have_pods = nodes, pods
            row.populate_s = time.monotonic() - t0
            time.sleep(3)
            measure(cp, row, args, policy=f"{POLICY}-{i}")
            client.CustomObjectsApi(api).delete_cluster_custom_object(
                "respread.io", "v1alpha1", "rebalancepolicies", f"{POLICY}-{i}"
            )
            rows.append(row)
            print(table([row]).splitlines()[-1], flush=True)
    finally:
        cp.stop()
        if not args.keep:
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return rows


def table(rows: list[Row]) -> str:
    def f(x: float | None, fmt: str = "{:.1f}") -> str:
        return "-" if x is None else fmt.format(x)

    out = [
        "| pods / nodes | listed | first status | first scan | later scans (median) "
        "| RSS steady (peak) | per pod | requests per later scan | Events | log lines |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        later = statistics.median(r.later_scans_s) if r.later_scans_s else None
        per_pod = (r.rss_steady_mb or r.rss_peak_mb) * 1024 * 1024 / r.pods
        reqs = ", ".join(f"{v:g} {k}" for k, v in r.requests_per_scan.items()) or "-"
        out.append(
            f"| {r.pods:,} / {r.nodes:,} | {f(r.listed_s)} s | {f(r.first_status_s)} s | "
            f"{f(r.first_scan_s, '{:.2f}')} s | {f(later, '{:.2f}')} s | "
            f"{f(r.rss_steady_mb, '{:.0f}')} MB ({r.rss_peak_mb:.0f}) | {per_pod / 1024:.1f} KB | "
            f"{reqs} | {r.events_created} in {r.scans} scans | {r.log_lines} |"
        )
    return "\n".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="500:10000,1000:30000,2000:60000,5000:150000",
        help="comma-separated NODES:PODS",
    )
    parser.add_argument("--scans", type=int, default=4, help="scans to wait for per size")
    parser.add_argument("--interval", default="30s")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per size")
    parser.add_argument("--keep", action="store_true", help="keep the control plane's files")
    parser.add_argument("--operator-src", help="run the respread of another checkout (a path)")
    parser.add_argument(
        "--profile-memory",
        action="store_true",
        help="tracemalloc in the operator; its top allocation sites go to bench/out/",
    )
    args = parser.parse_args()
    sizes = [(int(n), int(p)) for n, p in (x.split(":") for x in args.sizes.split(","))]
    rows = run_sizes(sorted(sizes), args)
    print()
    print(table(rows))
    outdir = REPO / "bench" / "out"
    outdir.mkdir(exist_ok=True)
    path = outdir / f"operator-scale-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps([asdict(r) for r in rows], indent=2))
    print(f"\nresults: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

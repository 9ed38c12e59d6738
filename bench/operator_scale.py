"""The operator at scale, on the real control plane, with planning on: memory, time to a first
report, scan times, the requests it makes, and how soon it sees a change.

For each size it starts etcd and kube-apiserver (no controller-manager, scheduler or kubelet: the
pods are bound directly and nothing else writes) and builds bench/scale_population.py's cluster:
nodes over four zones, Ready and untainted (the API server taints every node it creates
`node.kubernetes.io/not-ready:NoSchedule`; nothing lifted it before, so every violation was
unfixable and the planner did almost nothing), Deployments of 3 to 30 replicas with their
ReplicaSets, a zone constraint on all and a hostname constraint too on half, budgets (with the
disruption controller's status) on a third, a tenth of the workloads skewed. Then:

1. for each remedy (`evict`; `evict` + `deletionCost`; `evict` + `surge`), a fresh `respread run`
   as its own user with a DryRun policy scanning every `--interval`, measured until `--scans`
   reports: listed, first status, first and later scans, RSS steady and peak, requests per scan
   (the audit log), Events, the status's violations / unfixable / planned evictions (planning is
   on when planned > 0), and the log's ERROR and Traceback lines;
2. churn (`--churn N` rounds; 0 skips it), with every remedy on: a scale-down, a node loss, a
   node add and half a rollout, one at a time; for each, the seconds from the change until a
   report from a scan that started after it (`scan after`), and until the status shows it
   (`shown`: the workload's violation, the node count, the rollout's new ReplicaSet's group);
   RSS over the whole phase, by minute.

    .venv/bin/python bench/operator_scale.py --sizes 170:5000 --scans 3 --churn 1   # ~6 min
    .venv/bin/python bench/operator_scale.py --sizes 5000:150000 --scans 4 --churn 2

Figures go to stdout as Markdown tables and to bench/out/operator-scale-<time>.json.
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
sys.path.insert(0, str(REPO / "bench"))
from kube_harness import ControlPlane, resolve_assets  # noqa: E402

from scale_population import (  # noqa: E402
    Change,
    Population,
    Requests,
    add_nodes,
    lose_node,
    populate,
    roll_out,
    scale_down,
)

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


REMEDIES: dict[str, dict[str, Any]] = {  # spec.remediation of each measured policy
    "evict": {},
    "evict+deletionCost": {"deletionCost": {"enabled": True}},
    "evict+surge": {"surge": {"enabled": True}},
}
EVERY_REMEDY = {"deletionCost": {"enabled": True}, "surge": {"enabled": True}}


@dataclass
class Row:
    nodes: int
    pods: int
    remedy: str = "evict"
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
    constraint_groups: int | None = None
    unfixable: int | None = None
    planned: int | None = None
    blocked: int | None = None
    log_errors: list[str] = field(default_factory=list)  # ERROR and Traceback lines


@dataclass
class Detected:
    kind: str
    what: str
    scan_after_s: float | None  # a report from a scan started after the change
    shown_s: float | None  # the status shows the change itself
    cause: str | None = None  # the cause the status gives the change's violation, if listed
    # a ViolationFound Event names the change's workload (the status lists only the worst
    # report.maxItems violations: a small new one can be found and told, yet not listed)
    told_s: float | None = None


@dataclass
class Churn:
    pods: int
    changes: list[Detected] = field(default_factory=list)
    rss_by_minute: list[tuple[int, float, float]] = field(default_factory=list)  # min, med, max
    log_errors: list[str] = field(default_factory=list)


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


def measure(
    cp: ControlPlane,
    row: Row,
    args: argparse.Namespace,
    policy: str = POLICY,
    remediation: dict[str, Any] | None = None,
) -> None:
    kubeconfig = cp.user_kubeconfig(OPERATOR_USER, groups=["system:masters"])
    api = config.new_client_from_config(config_file=str(cp.kubeconfig))
    log_path = cp.tmp / f"operator-{policy}.log"
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
    _create_policy(run.custom, policy, args.interval, remediation or {})
    try:
        run.follow(row, args.scans, args.timeout)
    finally:
        sampler.stop()
        if args.profile_memory and run.proc.poll() is None:
            _keep_memory_profile(run.proc, cp.tmp, row.pods)
        _stop_operator(run.proc)
        _delete_policy(run.custom, policy)
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


def _create_policy(
    custom: client.CustomObjectsApi, policy: str, interval: str, remediation: dict[str, Any]
) -> None:
    custom.create_cluster_custom_object(
        "respread.io",
        "v1alpha1",
        "rebalancepolicies",
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": policy},
            "spec": {
                "mode": "DryRun",
                "schedule": {"interval": interval},
                "remediation": remediation,
                "report": {"maxItems": 500},  # the churn phase looks for its changes there
                # The population is minutes old: at the default minPodAge (5m) every pod is
                # too young to evict and nothing is planned.
                "eviction": {"minPodAge": "0s"},
            },
        },
    )


def _delete_policy(custom: client.CustomObjectsApi, policy: str) -> None:
    try:
        custom.delete_cluster_custom_object("respread.io", "v1alpha1", "rebalancepolicies", policy)
    except client.ApiException as exc:
        if exc.status != 404:
            raise


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
    status: dict[str, Any] = field(default_factory=dict)  # the last status read

    def follow(self, row: Row | None, scans: int, timeout: float) -> None:
        """The log and the status, until ``scans`` reports were written or ``timeout`` is up."""
        deadline = time.monotonic() + timeout
        while len(self.written) < scans and time.monotonic() < deadline:
            self.poll(row)
            time.sleep(0.5)

    def poll(self, row: Row | None) -> bool:
        """Read the log and the status once; True when a new report was written."""
        if self.proc.poll() is not None:
            raise RuntimeError(f"the operator exited: {self.log_path.read_text()[-3000:]}")
        self._read_log(row)
        return self._read_status(row)

    def _read_log(self, row: Row | None) -> None:
        """The log's new lines: when every kind was listed, and each scan of the policy."""
        lines = self.log_path.read_text(errors="replace").splitlines()
        for line in lines[self.log_lines :]:
            if row is not None and row.listed_s is None and "listed every watched kind" in line:
                row.listed_s = time.monotonic() - self.started
            m = SCAN_LINE.search(line)
            if m and m.group(1) == self.policy:
                self.scan_times.append((time.monotonic(), float(m.group(2))))
        self.log_lines = len(lines)

    def _read_status(self, row: Row | None) -> bool:
        """A new report in the policy's status (another lastScanTime)."""
        policy = self.custom.get_cluster_custom_object(
            "respread.io", "v1alpha1", "rebalancepolicies", self.policy
        )
        st = policy.get("status") or {}
        if not (st.get("summary") and st.get("lastScanTime") != self.last_scan):
            return False
        self.last_scan = st.get("lastScanTime")
        self.status = st
        self.written.append(time.monotonic())
        if row is not None:
            summary = st["summary"]
            if row.first_status_s is None:
                row.first_status_s = self.written[0] - self.started
            row.violations = summary.get("violations")
            row.constraint_groups = summary.get("constraintGroups")
            row.unfixable = summary.get("unfixable")
            row.planned = summary.get("plannedEvictions")
            row.blocked = summary.get("blocked")
        return True


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


def log_errors(path: Path) -> list[str]:
    """The log's ERROR lines and tracebacks (none is the target: issue 23)."""
    lines = path.read_text(errors="replace").splitlines()
    return [ln[:200] for ln in lines if " ERROR " in ln or ln.startswith("Traceback")]


def _record_scans(row: Row, run: _Run, samples: list[tuple[float, float]]) -> None:
    """The scans' durations, the reports seen, and the memory: peak, and steady (the median
    after the first report)."""
    row.log_lines = len(run.log_path.read_text(errors="replace").splitlines())
    row.log_errors = log_errors(run.log_path)
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
    since = run.started_wall
    mine = [e for e in events if _ts(e.get("requestReceivedTimestamp", "")) >= since]
    row.events_created = sum(
        1
        for e in mine
        if _request_kind(e) == "create events" and e.get("responseStatus", {}).get("code", 0) < 300
    )
    written = run.written
    if len(written) < 3:
        return
    first_wall = run.started_wall + (written[1] - run.started)
    last_wall = run.started_wall + (written[-1] - run.started)
    counts: dict[str, int] = {}
    for e in mine:
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


# --------------------------------------------------------------------------- churn

CHANGES = (scale_down, lose_node, add_nodes, roll_out)


def churn(
    cp: ControlPlane, pop: Population, args: argparse.Namespace, policy: str = f"{POLICY}-churn"
) -> Churn:
    """Every remedy on; `args.churn` rounds of the four changes, one at a time, each followed
    until the status shows it (or twice the interval and a minute have passed)."""
    import random

    result = Churn(pop.pods)
    kubeconfig = cp.user_kubeconfig(OPERATOR_USER, groups=["system:masters"])
    api = config.new_client_from_config(config_file=str(cp.kubeconfig))
    req = Requests(api)
    rng = random.Random(7)
    log_path = cp.tmp / f"operator-{policy}.log"
    run = _Run(
        _start_operator(kubeconfig, log_path, args, cp.tmp),
        client.CustomObjectsApi(api),
        log_path,
        policy,
        time.monotonic(),
        time.time(),
    )
    sampler = _RssSampler(run.proc.pid)
    _create_policy(run.custom, policy, args.interval, EVERY_REMEDY)
    wait = 2 * _seconds(args.interval) + 60
    try:
        run.follow(None, 2, args.timeout)  # settled: two reports before the first change
        for _ in range(args.churn):
            for make in CHANGES:
                change = make(req, pop, rng)
                print(f"  {change.kind}: {change.what}", file=sys.stderr, flush=True)
                result.changes.append(_detect(run, change, wait))
    finally:
        sampler.stop()
        _stop_operator(run.proc)
        _delete_policy(run.custom, policy)
    result.log_errors = log_errors(log_path)
    result.rss_by_minute = _by_minute(sampler.samples, run.started)
    return result


def _detect(run: _Run, change: Change, wait: float) -> Detected:
    """Until the status shows the change and its Event (if it has one) is seen, or an Event has
    told it and the status of that scan (written before its Events) has been read, or `wait`
    seconds have passed; an Event is awaited for at most 5 s once the status shows the change."""
    out = Detected(change.kind, change.what, None, None)
    deadline = time.time() + wait
    events = client.CoreV1Api(run.custom.api_client)
    told_then = None  # how many reports had been read when the Event was seen
    while time.time() < deadline:
        if run.poll(None):
            scanned = _ts(run.status.get("lastScanTime", ""))
            now = time.time()
            # lastScanTime has whole seconds: a scan that started in the change's second counts
            if out.scan_after_s is None and scanned >= int(change.done_wall):
                out.scan_after_s = now - change.done_wall
            if out.shown_s is None and change.seen(run.status):
                out.shown_s = now - change.done_wall
                out.cause = _cause(run.status, change)
        if change.workload and out.told_s is None and _told(events, run.policy, change):
            out.told_s = time.time() - change.done_wall
            told_then = len(run.written)
        if out.shown_s is not None and (
            out.told_s is not None
            or not change.workload
            or time.time() - change.done_wall > out.shown_s + 5
        ):
            break
        if out.shown_s is None and told_then is not None and len(run.written) > told_then:
            break
        time.sleep(0.25)
    return out


def _told(api: client.CoreV1Api, policy: str, change: Change) -> bool:
    """Whether an Event about the policy, created since the change, names its workload as a
    new violation."""
    found = api.list_namespaced_event(
        "default", field_selector=f"involvedObject.name={policy}"
    ).items
    named = (f"{change.workload}: ", f"{change.workload} (")  # one found, or several
    return any(
        e.reason in ("ViolationFound", "ViolationsFound")
        and any(n in (e.message or "") for n in named)
        and e.metadata.creation_timestamp is not None
        and e.metadata.creation_timestamp.timestamp() >= int(change.done_wall)
        for e in found
    )


def _cause(status: dict[str, Any], change: Change) -> str | None:
    name = change.what.split(" ")[0]
    for v in status.get("violations") or []:
        if f"{v.get('namespace')}/{(v.get('workload') or {}).get('name')}" == name:
            return str(v.get("cause"))
    return None


def _seconds(interval: str) -> float:
    units = {"s": 1, "m": 60, "h": 3600}
    return float(interval[:-1]) * units[interval[-1]]


def _by_minute(samples: list[tuple[float, float]], start: float) -> list[tuple[int, float, float]]:
    minutes: dict[int, list[float]] = {}
    for t, rss in samples:
        minutes.setdefault(int((t - start) // 60), []).append(rss)
    return [(m, statistics.median(v), max(v)) for m, v in sorted(minutes.items())]


# --------------------------------------------------------------------------- sizes

AUDITED_USERS = [OPERATOR_USER]


def control_plane(tmp: Path) -> ControlPlane:
    """etcd + kube-apiserver, auditing only the users measured, with the CRD."""
    cp = ControlPlane(resolve_assets(), tmp)
    users = ", ".join(f'"{u}"' for u in AUDITED_USERS)
    cp.audit_policy.write_text(AUDIT_POLICY.replace(f'["{OPERATOR_USER}"]', f"[{users}]"))
    cp.start()
    api = config.new_client_from_config(config_file=str(cp.kubeconfig))
    client.ApiextensionsV1Api(api).create_custom_resource_definition(
        yaml.safe_load((REPO / "crds" / "rebalancepolicy.yaml").read_text())
    )
    return cp


def run_size(nodes: int, pods: int, args: argparse.Namespace) -> tuple[list[Row], Churn | None]:
    """A fresh control plane and population; each remedy measured, then the churn."""
    tmp = Path(tempfile.mkdtemp(prefix="respread-scale-"))
    cp = control_plane(tmp)
    rows: list[Row] = []
    result = None
    try:
        api = config.new_client_from_config(config_file=str(cp.kubeconfig))
        t0 = time.monotonic()
        print(f"building {nodes} nodes / {pods} pods ...", file=sys.stderr, flush=True)
        pop = populate(api, nodes, pods, prefix="b")
        populate_s = time.monotonic() - t0
        print(f"  built in {populate_s:.0f}s", file=sys.stderr, flush=True)
        time.sleep(3)
        for i, (name, remediation) in enumerate(REMEDIES.items()):
            if args.remedies and name not in args.remedies.split(","):
                continue
            row = Row(len(pop.nodes), pop.pods, name, populate_s)
            measure(cp, row, args, policy=f"{POLICY}-{i}", remediation=remediation)
            rows.append(row)
            print(table([row]).splitlines()[-1], flush=True)
        if args.churn:
            result = churn(cp, pop, args)
    finally:
        cp.stop()
        if not args.keep:
            subprocess.run(["rm", "-rf", str(tmp)], check=False)
    return rows, result


def table(rows: list[Row]) -> str:
    def f(x: float | None, fmt: str = "{:.1f}") -> str:
        return "-" if x is None else fmt.format(x)

    out = [
        "| pods / nodes | remedies | listed | first status | first scan | later scans (median) "
        "| RSS steady (peak) | per pod | violations / unfixable / planned | requests per later "
        "scan | Events | ERROR lines |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        later = statistics.median(r.later_scans_s) if r.later_scans_s else None
        per_pod = (r.rss_steady_mb or r.rss_peak_mb) * 1024 * 1024 / r.pods
        reqs = ", ".join(f"{v:g} {k}" for k, v in r.requests_per_scan.items()) or "-"
        out.append(
            f"| {r.pods:,} / {r.nodes:,} | {r.remedy} | {f(r.listed_s)} s | "
            f"{f(r.first_status_s)} s | {f(r.first_scan_s, '{:.2f}')} s | {f(later, '{:.2f}')} s | "
            f"{f(r.rss_steady_mb, '{:.0f}')} MB ({r.rss_peak_mb:.0f}) | {per_pod / 1024:.1f} KB | "
            f"{r.violations} / {r.unfixable} / {r.planned} | {reqs} | "
            f"{r.events_created} in {r.scans} scans | {len(r.log_errors)} |"
        )
    return "\n".join(out)


def churn_table(c: Churn) -> str:
    def f(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f} s"

    out = [
        f"churn at {c.pods:,} pods, every remedy on (ERROR lines in the log: {len(c.log_errors)})",
        "",
        "| change | what | scan after it | shown in the status | told in an Event | cause shown |",
        "|---|---|---|---|---|---|",
    ]
    for d in c.changes:
        out.append(
            f"| {d.kind} | {d.what} | {f(d.scan_after_s)} | {f(d.shown_s)} | {f(d.told_s)} "
            f"| {d.cause or '-'} |"
        )
    out.append("")
    out.append(
        "RSS by minute (median / max MB): "
        + ", ".join(f"{m}: {med:.0f}/{mx:.0f}" for m, med, mx in c.rss_by_minute)
    )
    return "\n".join(out)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--scans", type=int, default=4, help="scans to wait for per remedy")
    parser.add_argument("--interval", default="30s")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per measurement")
    parser.add_argument("--keep", action="store_true", help="keep the control plane's files")
    parser.add_argument("--operator-src", help="run the respread of another checkout (a path)")
    parser.add_argument(
        "--profile-memory",
        action="store_true",
        help="tracemalloc in the operator; its top allocation sites go to bench/out/",
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", default="170:5000,5000:150000", help="comma-separated NODES:PODS"
    )
    parser.add_argument("--churn", type=int, default=1, help="rounds of the four changes")
    parser.add_argument("--remedies", default="", help="only these (comma-separated names)")
    add_arguments(parser)
    args = parser.parse_args()
    sizes = [(int(n), int(p)) for n, p in (x.split(":") for x in args.sizes.split(","))]
    rows: list[Row] = []
    churns: list[Churn] = []
    for nodes, pods in sorted(sizes):
        got, churned = run_size(nodes, pods, args)
        rows.extend(got)
        if churned is not None:
            churns.append(churned)
            print(churn_table(churned), flush=True)
    print()
    print(table(rows))
    for c in churns:
        print()
        print(churn_table(c))
    outdir = REPO / "bench" / "out"
    outdir.mkdir(exist_ok=True)
    path = outdir / f"operator-scale-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(
        json.dumps(
            {"rows": [asdict(r) for r in rows], "churn": [asdict(c) for c in churns]}, indent=2
        )
    )
    print(f"\nresults: {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

"""The `respread` command: `plan` and `explain` on a snapshot, `run` for the operator."""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import logging
import os
import stat
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

import yaml

from respread import __version__
from respread.analysis.pending import pending_pod
from respread.core.collector import gc_paused
from respread.core.limits import DEFAULT_LIMITS, Limits, printable, printable_lines, shown
from respread.core.quantity import QuantityError, units
from respread.core.timestamps import parse_rfc3339
from respread.inputs.documents import InputError, LeftOut, decode
from respread.inputs.objects import LoadResult, documents_from_text, load_documents, load_texts
from respread.inputs.policy import (
    DEFAULT_POLICY,
    KIND,
    Mode,
    PolicyError,
    RebalancePolicy,
    parse_policy,
)
from respread.inputs.scoping import within_namespace
from respread.pipeline import NO_MEMORY, Memory, scan
from respread.remedies.cost.release import lifecycle_of
from respread.remedies.evict.ledger import LEDGER, LedgerData
from respread.report.compact import render_compact
from respread.report.contract import move_json, pending_json, report_json
from respread.report.model import CoverageSection, Report
from respread.report.move import Context, would_move
from respread.report.pending_text import pending_pod_text
from respread.report.text import move_text, render_text
from respread.scheduling.explain import Explanation, explain_pod

SNAPSHOT_SUFFIXES = (".yaml", ".yml", ".json")


class UsageError(Exception):
    """A problem with the command's input: printed as one line, exit status 2."""


class OutputError(UsageError):
    """The report could not be written (standard output closed, a full disk)."""


def _fail(message: str) -> NoReturn:
    raise UsageError(message)


READ_CHUNK = 8 * 2**20


def _read_bounded(stream: Any, what: str, budget: int) -> bytes:
    """Everything ``stream`` holds, read in chunks (a size is never allocated ahead), refused
    as soon as it passes ``budget`` bytes."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk: bytes = stream.read(min(READ_CHUNK, budget - total + 1))
        if not chunk:
            return b"".join(chunks)
        total += len(chunk)
        if total > budget:
            _fail(
                f"{what} is larger than the snapshot limit of {budget} bytes"
                " (raise it with --max-snapshot-size)"
            )
        chunks.append(chunk)


def _read_path(path: Path, what: str, budget: int) -> bytes:
    """A regular file, or a pipe someone writes to (``<(kubectl get ...)``, a FIFO), read
    within the budget. A FIFO no one has opened for writing is refused at once, where reading
    it would wait forever; anything else that is not a regular file (a device, a socket) is
    refused, where it might never end."""
    mode = path.stat().st_mode
    if stat.S_ISREG(mode):
        with path.open("rb") as stream:
            return _read_bounded(stream, what, budget)
    if not stat.S_ISFIFO(mode):
        _fail(f"{what} is not a regular file or a pipe")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # never waits for a writer
    with os.fdopen(fd, "rb", buffering=0) as stream:
        try:
            first = os.read(fd, min(READ_CHUNK, budget + 1))
        except BlockingIOError:  # a writer is there, and has written nothing yet
            first = None
        if first == b"":
            _fail(f"{what} is a pipe with no writer (start the writer first, or redirect it to -)")
        if first is not None and len(first) > budget:
            _fail(f"{what} is larger than the snapshot limit of {budget} bytes")
        os.set_blocking(fd, True)
        head = first or b""
        return head + _read_bounded(stream, what, budget - len(head))


def _stdin() -> Any:
    if sys.stdin is None:
        _fail("cannot read standard input: it is closed")
    return sys.stdin.buffer


def _text(data: bytes, what: str) -> str:
    try:
        return decode(data)
    except InputError as err:
        _fail(f"cannot read {what}: {err}")


def read_snapshot(
    paths: Sequence[str], max_bytes: int = DEFAULT_LIMITS.max_bytes
) -> list[tuple[str, str]]:
    """(source, text) for each file named, each manifest in a directory, or standard input.

    The files together may hold at most ``max_bytes``; each must be UTF-8. A file named twice
    is read twice (its objects are then reported as duplicates), its second name marked.
    """
    texts: list[tuple[str, str]] = []
    budget = max_bytes
    named: set[str] = set()

    def add(source: str, data: bytes) -> None:
        nonlocal budget
        budget -= len(data)
        label = source if source not in named else f"{source} (named again)"
        named.add(source)
        texts.append((label, _text(data, source)))

    for raw in paths:
        if raw == "-":
            add("<stdin>", _read_bounded(_stdin(), "standard input", budget))
            continue
        path = Path(raw)
        if path.is_dir():
            files = sorted(
                p for p in path.rglob("*") if p.is_file() and p.suffix in SNAPSHOT_SUFFIXES
            )
            if not files:
                _fail(f"snapshot directory {raw} holds no .yaml, .yml or .json file")
        elif path.exists():
            files = [path]
        else:
            _fail(f"cannot read snapshot {raw}: no such file or directory")
        for f in files:
            try:
                data = _read_path(f, f"snapshot {f}", budget)
            except OSError as err:
                _fail(f"cannot read snapshot {f}: {err.strerror or err}")
            add(str(f), data)
    return texts


MAX_WARNINGS = 100  # warnings printed one by one; beyond, a count


SLOW = 2.0  # seconds: a stage that takes longer says so on stderr


def note(quiet: bool, started: float, what: str) -> None:
    """A progress line on stderr for a stage that took a noticeable time."""
    elapsed = time.monotonic() - started
    if not quiet and elapsed >= SLOW:
        print(f"respread: {what} in {elapsed:.1f}s", file=sys.stderr)


def warn(problems: Sequence[object], quiet: bool) -> None:
    if quiet:
        return
    for problem in problems[:MAX_WARNINGS]:
        print(f"respread: warning: {problem} (left out)", file=sys.stderr)
    if len(problems) > MAX_WARNINGS:
        print(
            f"respread: warning: {len(problems) - MAX_WARNINGS} more objects left out (not shown)",
            file=sys.stderr,
        )


def load_snapshot(
    paths: Sequence[str], quiet: bool = False, limits: Limits = DEFAULT_LIMITS
) -> LoadResult:
    started = time.monotonic()
    texts = read_snapshot(paths, limits.max_bytes)
    with gc_paused():  # parsing makes hundreds of thousands of long-lived, acyclic objects
        result = load_texts(texts, taken_at=time.time(), limits=limits)
    state = result.state
    note(
        quiet,
        started,
        f"read {len(state.nodes)} nodes and {len(state.pods)} pods from {len(texts)} file(s)",
    )
    warn(result.problems, quiet)
    return result


POLICY_MAX_BYTES = 2**20  # the API server refuses objects over about 1.5 MiB anyway
POLICY_LIMITS = Limits(max_bytes=POLICY_MAX_BYTES)


def read_policy(path: str | None) -> RebalancePolicy:
    if path is None:
        return DEFAULT_POLICY
    budget = POLICY_MAX_BYTES
    try:
        if path == "-":
            data = _read_bounded(_stdin(), "the policy", budget)
        else:
            data = _read_path(Path(path), f"policy {path}", budget)
    except OSError as err:
        _fail(f"cannot read policy {path}: {err.strerror or err}")
    text = _text(data, f"policy {path}")
    try:
        docs = [d for _, d in documents_from_text(text, path, POLICY_LIMITS)]
    except InputError as err:
        _fail(f"policy {path} cannot be read: {err}")
    for doc in docs:
        if isinstance(doc, LeftOut):
            field = f"field {doc.field}: " if doc.field else ""
            _fail(f"policy {path} cannot be read: {field}{doc.message}")
    policies = [d for d in docs if isinstance(d, dict) and d.get("kind") == KIND]
    if len(policies) != 1:
        _fail(f"policy {path} must hold exactly one {KIND}, found {len(policies)}")
    try:
        return parse_policy(policies[0])
    except PolicyError as err:
        _fail(f"invalid policy in {path}: {err}")


def parse_now(value: str | None) -> float:
    if value is None:
        return time.time()
    try:
        return parse_rfc3339(value)
    except ValueError:
        _fail(f"--now expects an RFC 3339 time such as 2026-11-22T10:00:00Z, got {shown(value)}")


def emit(data: Any, output: str, text: str | None = None) -> None:
    """Writes the report; text is made safe for a terminal (JSON and YAML escape control
    characters themselves). OutputError when it cannot be written."""
    out = sys.stdout
    if out is None:
        raise OutputError("cannot write the report: standard output is closed")
    try:
        if output == "json":
            json.dump(data, out, indent=2, sort_keys=False)
            out.write("\n")
        elif output == "yaml":
            yaml.safe_dump(data, out, sort_keys=False, default_flow_style=False)
        else:
            out.write(printable_lines(text or ""))
        out.flush()
    except BrokenPipeError:
        raise  # the reader has gone (`| head`): not an error of respread's
    except (OSError, ValueError) as err:  # a full disk; a closed stream is a ValueError
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        raise OutputError(f"cannot write the report: {reason}") from None


def load_live(kubeconfig: str, quiet: bool, context: str | None = None) -> LoadResult:
    """One read of a live cluster (the kube layer is imported only when asked for)."""
    from respread.kube.client import api_client
    from respread.kube.reader import read_cluster

    def progress(line: str) -> None:
        if not quiet:
            print(f"respread: {printable(line)}", file=sys.stderr)

    with kube_calls():
        docs = read_cluster(api_client(kubeconfig, context), progress)
    result = load_documents(docs, taken_at=time.time())
    warn(result.problems, quiet)
    return result


@contextlib.contextmanager
def _logged() -> Iterator[list[str]]:
    """The error messages libraries log meanwhile (the kubernetes client logs an exec plugin's
    failure, urllib3 each retry), kept instead of printed: the command's error says it in one
    line. Without a handler of its own, the root logger would print them itself."""
    messages: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.ERROR:
                try:
                    messages.append(record.getMessage())
                except Exception:  # a record whose arguments do not fit its format
                    messages.append(str(record.msg))

    root = logging.getLogger()
    handler = Keep(logging.WARNING)
    root.addHandler(handler)
    try:
        yield messages
    finally:
        root.removeHandler(handler)


@contextlib.contextmanager
def kube_calls() -> Iterator[None]:
    """Requests to a live cluster: a KubeError ends the command in one line, with what the
    client logged before the request failed (an exec plugin's exit status and output)."""
    from respread.kube.client import KubeError

    with _logged() as logged:
        try:
            yield
        except KubeError as err:
            _fail(f"{err}{f' ({logged[0]})' if logged else ''}")


@dataclass(frozen=True, slots=True)
class Scope:
    """What `respread plan` scans with: the policy, the other policies (which of them orders a
    ReplicaSet's costs), the memory of the policy's earlier scans, and the evictions the
    eviction ledger records (every policy's)."""

    policy: RebalancePolicy
    others: tuple[RebalancePolicy, ...] = ()
    memory: Memory = NO_MEMORY
    recorded: LedgerData = field(default_factory=dict)


def live_scope(args: argparse.Namespace, name: str) -> Scope:
    """RebalancePolicy ``name`` read from a live cluster, as the operator scans it: in Enforce,
    with the eviction ledger in the operator's namespace too."""
    from respread.kube.client import api_client
    from respread.kube.reader import read_policies

    with kube_calls():
        api = api_client(args.kubeconfig, args.context)
        bodies = read_policies(api)
    scope = policy_scope(bodies, name, api.configuration.host, args.quiet)
    if scope.policy.mode is not Mode.ENFORCE:
        return scope  # DryRun defers nothing for the ledger
    return replace(scope, recorded=read_recorded(api, args.operator_namespace, args.quiet))


def read_recorded(api: Any, namespace: str, quiet: bool) -> LedgerData:
    """The eviction ledger's data, as the operator reads it before it plans; a ledger that
    cannot be read is warned about (in one line) and left out."""
    from respread.kube.client import KubeError
    from respread.kube.ledger import read_ledger

    with _logged():
        try:
            return read_ledger(api, namespace, LEDGER).data
        except KubeError as err:
            if not quiet:
                print(
                    f"respread: warning: {printable(str(err))}: planned without the eviction "
                    "ledger (the other policies' evictions do not hold their workloads)",
                    file=sys.stderr,
                )
            return {}


def policy_scope(
    bodies: Sequence[dict[str, Any]], name: str, server: str, quiet: bool = False
) -> Scope:
    """RebalancePolicy ``name`` as the operator scans it: its spec; its memory seeded from its
    status, as a newly elected leader seeds it; the other valid policies not being deleted."""
    from respread.runtime.memory import PolicyMemory

    def named(body: dict[str, Any]) -> object:
        return (body.get("metadata") or {}).get("name")

    body = next((b for b in bodies if named(b) == name), None)
    if body is None:
        _fail(f"RebalancePolicy {shown(name)} not found at {server}")
    try:
        policy = parse_policy(body)
    except PolicyError as err:
        _fail(str(err))
    if _deleting(body) and not quiet:
        print(
            f"respread: warning: RebalancePolicy {policy.name} is being deleted: the operator "
            "no longer scans it",
            file=sys.stderr,
        )
    others = []
    for other in bodies:
        if named(other) == name or _deleting(other):
            continue
        try:
            others.append(parse_policy(other))
        except PolicyError:  # the operator does not schedule an invalid policy
            continue
    return Scope(policy, tuple(others), PolicyMemory.from_status(body.get("status")).scan)


def _deleting(body: dict[str, Any]) -> bool:
    return lifecycle_of(body.get("metadata") or {}).deleting_since is not None


def cmd_plan(args: argparse.Namespace) -> int:
    scope = plan_scope(args)
    now = parse_now(args.now)
    scope = replace(scope, policy=within_namespace(scope.policy, args.namespace))
    loaded = load_input(args)
    # The loaded state lives until the process ends: keep the cyclic collector, paused while
    # the analysis runs, from walking its millions of objects on the collections that
    # rendering and writing the report trigger.
    gc.freeze()
    started = time.monotonic()
    result = scan(
        loaded.state, scope.policy, now, scope.memory, others=scope.others, recorded=scope.recorded
    )
    note(
        args.quiet, started, f"analysed {len(result.analysis.groups)} constraint groups and planned"
    )
    warn_coverage(result.report.coverage, args.quiet)
    if args.output == "text":
        emit(None, args.output, render_text(result.report))
    elif args.output == "compact":
        emit(None, "text", render_compact(result.report))
    else:
        emit(report_json(result.report), args.output)
    return plan_exit_code(result.report) if args.exit_code else 0


EXIT_VIOLATIONS = 3  # plan --exit-code: violations found (2 is kept for errors)
EXIT_NOT_CLEAR = 4  # plan --exit-code: none found, but the input was incomplete or empty


def plan_exit_code(report: Report) -> int:
    """`plan --exit-code`: 0 only for an all-clear the scan can vouch for."""
    if report.violations:
        return EXIT_VIOLATIONS
    coverage = report.coverage
    if coverage.nothing_selected or not coverage.complete:
        return EXIT_NOT_CLEAR
    return 0


def explanation_dict(ex: Explanation) -> dict[str, Any]:
    return {
        "pod": ex.pod,
        "node": ex.bound_to,
        "constraints": [
            {
                "topologyKey": c.topology_key,
                "whenUnsatisfiable": c.when,
                "maxSkew": c.max_skew,
                "minDomains": c.min_domains,
                "selfMatch": c.self_match,
                "domains": c.domains,
                "globalMinimum": c.global_minimum,
            }
            for c in ex.constraints
        ],
        "nodes": [
            {
                "name": n.name,
                "spreadFilter": n.spread_filter.value,
                "feasible": n.feasible,
                "reasons": list(n.reasons),
            }
            for n in ex.nodes
        ],
    }


def explanation_text(ex: Explanation) -> str:
    where = f"bound to {ex.bound_to}, judged as if placed again" if ex.bound_to else "not bound"
    out = [f"Pod {ex.pod} ({where})"]
    if not ex.constraints:
        out.append("No topology spread constraints apply: the spread filter passes everywhere.")
    for c in ex.constraints:
        out.append(
            f"  {c.topology_key} ({c.when}, maxSkew {c.max_skew}, minDomains {c.min_domains}"
            f", selector {'matches' if c.self_match else 'does not match'} the pod): "
            f"globalMinimum {c.global_minimum}"
        )
        counts = ", ".join(f"{d or chr(34) * 2}={n}" for d, n in c.domains.items())
        out.append(f"    domains: {counts or 'none eligible'}")
    out.append("")
    width = max((len(n.name) for n in ex.nodes), default=4)
    out.append(f"  {'NODE'.ljust(width)}  {'SPREAD FILTER'.ljust(28)}  FEASIBLE  REASONS")
    for n in ex.nodes:
        out.append(
            f"  {n.name.ljust(width)}  {n.spread_filter.value.ljust(28)}  "
            f"{('yes' if n.feasible else 'no').ljust(8)}  {'; '.join(n.reasons)}"
        )
    return "\n".join(out) + "\n"


def cmd_explain(args: argparse.Namespace) -> int:
    if args.pod.count("/") != 1 or not all(args.pod.split("/")) or args.pod.startswith("-"):
        _fail(f"expected NAMESPACE/POD, got {shown(args.pod)}")
    scope = plan_scope(args)
    namespace, name = args.pod.split("/")
    loaded = load_input(args)
    pod = next((p for p in loaded.state.pods if p.namespace == namespace and p.name == name), None)
    if pod is None:
        _fail(f"pod {shown(args.pod)} is not in the {'cluster' if args.kubeconfig else 'snapshot'}")
    now = parse_now(args.now)
    # The plan's own scan, so that the answer is the plan's: the same policy, memory and now.
    result = scan(
        loaded.state, scope.policy, now, scope.memory, others=scope.others, recorded=scope.recorded
    )
    ex = explain_pod(result.analysis.index, pod)
    context = Context(
        result.analysis,
        result.plan,
        scope.policy,
        now,
        result.memory.evictions.last_eviction,
        result.held,
    )
    answer = would_move(pod, context, ex) if pod.node_name is not None else None
    data = explanation_dict(ex) | ({"move": move_json(answer)} if answer is not None else {})
    text = explanation_text(ex) + (move_text(answer) if answer is not None else "")
    # An unbound pod that spread holds Pending: why, and what unblocks it.
    held = pending_pod(result.analysis.index, scope.policy, pod, now)
    if held is not None:
        data["pending"] = pending_json(held)
        text += "\n" + "\n".join(pending_pod_text(held)) + "\n"
    emit(data, args.output, text if args.output == "text" else None)
    return 0


def plan_scope(args: argparse.Namespace) -> Scope:
    """The policy, the other policies and the memory a scan runs with: --policy (or the
    defaults), or with --policy-name the live policy as the operator scans it."""
    named = args.policy_name
    if named is None:
        return Scope(read_policy(args.policy))
    if args.kubeconfig is None or args.snapshot or args.policy:
        _fail(
            "--policy-name reads the policy from a live cluster: give it with --kubeconfig,"
            " without --snapshot or --policy"
        )
    return live_scope(args, named)


def load_input(args: argparse.Namespace) -> LoadResult:
    """The cluster state from --snapshot, or read live with --kubeconfig (and --context); one
    without a single Node is refused: nothing in it could be counted."""
    if (args.snapshot is None) == (args.kubeconfig is None):
        _fail("give exactly one of --snapshot and --kubeconfig")
    if args.kubeconfig is not None:
        loaded = load_live(args.kubeconfig, args.quiet, args.context)
        where = "the cluster"
    else:
        if args.context is not None:
            _fail("--context needs --kubeconfig (a snapshot has no contexts)")
        loaded = load_snapshot(args.snapshot, quiet=args.quiet, limits=snapshot_limits(args))
        where = "the snapshot"
    if not loaded.state.nodes:
        pods = len(loaded.state.pods)
        _fail(
            f"{where} holds no Node object ({pods} Pod(s)): no pod can be counted without its "
            "node; include the nodes (kubectl get nodes,pods,... -A -o yaml)"
        )
    return loaded


def warn_coverage(coverage: CoverageSection, quiet: bool) -> None:
    """Pods on nodes the input lacks, by name, and a policy selecting nothing, on stderr (about
    the input as a whole: "incomplete input:" and "selection:" lines, not about one file)."""
    if quiet:
        return
    lines = [
        f"incomplete input: pod {p.namespace}/{p.pod} is bound to node {p.node}, which the "
        "input does not hold: left out of every count"
        for p in coverage.pods_on_unknown_nodes[:MAX_WARNINGS]
    ]
    lost = len(coverage.pods_on_unknown_nodes)
    if lost > MAX_WARNINGS:
        lines.append(f"incomplete input: {lost - MAX_WARNINGS} more such pods (not shown)")
    if lost:
        lines.append(
            f"incomplete input: {len(coverage.incomplete_groups)} constraint group(s) are "
            "counted without them: their results are incomplete"
        )
    if coverage.nothing_selected:
        lines.append(f"selection: the policy selects no pod: {coverage.nothing_selected}")
    elif coverage.missing_namespaces:
        lines.append(
            "selection: namespace(s) selected by name do not exist: "
            + ", ".join(coverage.missing_namespaces)
        )
    for line in lines:
        print(f"respread: warning: {printable(line)}", file=sys.stderr)


def snapshot_limits(args: argparse.Namespace) -> Limits:
    return Limits(max_bytes=args.max_snapshot_size)


def byte_size(value: str) -> int:
    """--max-snapshot-size: a byte count or a quantity such as 512Mi or 2Gi."""
    try:
        size = units(value)
    except QuantityError:
        raise argparse.ArgumentTypeError(f"expected a size such as 512Mi, got {value!r}") from None
    if size <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive size, got {value!r}")
    return size


class _Parser(argparse.ArgumentParser):
    """Usage errors on one line, exit status 2 (the README's promise for all bad input)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"respread: error: {printable(message)} (see {self.prog} --help)\n")


SIZE_HELP = "refuse a snapshot larger than this in total (default 512Mi; a quantity such as 2Gi)"
CONTEXT_HELP = "the kubeconfig context to use with --kubeconfig (default: its current context)"


def _operator_options(p: argparse.ArgumentParser, policy_name_help: str) -> None:
    """--policy-name and --operator-namespace: with --kubeconfig, as the operator would."""
    p.add_argument("--policy-name", metavar="NAME", help=policy_name_help)
    p.add_argument(
        "--operator-namespace",
        default="respread-system",
        metavar="NAMESPACE",
        help="with --policy-name: the operator's namespace, where its eviction ledger is"
        " (default: respread-system)",
    )


def _size_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-snapshot-size",
        type=byte_size,
        default=DEFAULT_LIMITS.max_bytes,
        metavar="SIZE",
        help=SIZE_HELP,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="respread",
        description="Find Pod Topology Spread violations and plan the evictions that fix them.",
    )
    parser.add_argument("--version", action="version", version=f"respread {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("plan", help="report violations and the eviction plan for a snapshot")
    p.add_argument(
        "--snapshot",
        action="append",
        metavar="PATH",
        help="a manifest file or directory (kubectl get -o yaml|json), - for stdin;"
        " repeat for several",
    )
    p.add_argument(
        "--policy", metavar="FILE", help="a RebalancePolicy manifest (default: defaults)"
    )
    p.add_argument(
        "--kubeconfig", metavar="FILE", help="read a live cluster once instead of a snapshot"
    )
    p.add_argument("--context", metavar="NAME", help=CONTEXT_HELP)
    _operator_options(
        p,
        "with --kubeconfig: plan as the operator plans RebalancePolicy NAME in that cluster"
        " (its spec; the causes, cooldowns and back-offs its status remembers; the other"
        " policies; in Enforce, the evictions its ledger records)",
    )
    p.add_argument(
        "-n",
        "--namespace",
        metavar="NAMESPACE",
        help="only this namespace's workloads (in place of the policy's namespaces)",
    )
    p.add_argument(
        "-o",
        "--output",
        choices=("text", "json", "yaml", "compact"),
        default="text",
        help="text (default), json or yaml (the report contract), compact (a line per violation)",
    )
    p.add_argument(
        "--exit-code",
        action="store_true",
        help=f"exit {EXIT_VIOLATIONS} when violations are found, {EXIT_NOT_CLEAR} when none are "
        "but the input was incomplete or the policy selects no pod (2 stays for errors)",
    )
    p.add_argument("--now", metavar="TIME", help="evaluate pod ages at this RFC 3339 time")
    p.add_argument("-q", "--quiet", action="store_true", help="do not warn about left-out objects")
    _size_option(p)
    p.set_defaults(func=cmd_plan)

    e = sub.add_parser(
        "explain",
        help="show how the scheduler judges one pod on every node, and whether respread would "
        "move it",
    )
    e.add_argument(
        "--snapshot",
        action="append",
        metavar="PATH",
        help="a manifest file or directory, - for stdin; repeat for several",
    )
    e.add_argument("--kubeconfig", metavar="FILE", help="read a live cluster instead")
    e.add_argument("--context", metavar="NAME", help=CONTEXT_HELP)
    e.add_argument(
        "--policy", metavar="FILE", help="a RebalancePolicy manifest (default: defaults)"
    )
    _operator_options(e, "with --kubeconfig: answer as the operator would for RebalancePolicy NAME")
    e.add_argument("--now", metavar="TIME", help="evaluate pod ages at this RFC 3339 time")
    e.add_argument("pod", metavar="NAMESPACE/POD")
    e.add_argument("-o", "--output", choices=("text", "json"), default="text")
    e.add_argument("-q", "--quiet", action="store_true")
    _size_option(e)
    e.set_defaults(func=cmd_explain)
    c = sub.add_parser(
        "convert", help="write the RebalancePolicy equivalent to a descheduler's policy"
    )
    c.add_argument(
        "--from-descheduler",
        required=True,
        metavar="FILE",
        help="a DeschedulerPolicy (v1alpha2 or v1alpha1), or the ConfigMap holding it; - for stdin",
    )
    c.add_argument("--name", help="the RebalancePolicy's name (default: the profile's)")
    c.set_defaults(func=cmd_convert)
    r = sub.add_parser("run", help="run the operator (in-cluster, or with --kubeconfig)")
    r.add_argument("--kubeconfig", metavar="FILE", help="default: $KUBECONFIG, then in-cluster")
    r.add_argument(
        "--leader-elect",
        action="store_true",
        help="elect one replica to act, on a coordination.k8s.io Lease (the others watch and "
        "wait); without it this process acts alone",
    )
    r.add_argument("--lease-name", default="respread", metavar="NAME", help="default: respread")
    r.add_argument(
        "--lease-namespace",
        metavar="NAMESPACE",
        help="default: the pod's namespace (its service account's), else respread-system",
    )
    r.add_argument(
        "--lease-duration",
        default="15s",
        metavar="DURATION",
        help="how long a Lease lasts without renewal, e.g. 15s (the renew deadline and retry "
        "period are 2/3 and 2/15 of it, as in client-go)",
    )
    r.add_argument(
        "--identity",
        metavar="NAME",
        help="this replica in the Lease; default: $POD_NAME, else hostname_pid",
    )
    r.add_argument(
        "--liveness", metavar="URL", help="serve liveness, e.g. http://0.0.0.0:8080/healthz"
    )
    r.add_argument(
        "--readiness", metavar="URL", help="serve readiness, e.g. http://0.0.0.0:8081/readyz"
    )
    r.add_argument("--metrics-port", type=int, default=9090, help="0 disables the metrics server")
    _bound_arguments(r)
    r.add_argument(
        "--scan-on-change",
        metavar="DURATION",
        default=os.environ.get("RESPREAD_SCAN_ON_CHANGE", "1s"),
        help="scan a policy on an interval once the cluster's changes have been quiet this "
        "long (at most 5s after the first; at once after a quiet spell, and at most a quarter "
        "of the time on a cluster that never stops changing); "
        "0 turns it off: scans come at the interval only (default: $RESPREAD_SCAN_ON_CHANGE, "
        "else 1s)",
    )
    r.add_argument("-v", "--verbose", action="store_true")
    r.set_defaults(func=cmd_run)
    return parser


# Every bound of `respread run` (DURATION, e.g. 30s or 500ms): the flag, else the environment
# variable, else the default.
BOUNDS = (
    ("--connect-timeout", "RESPREAD_CONNECT_TIMEOUT", "5s", "to connect to the API server"),
    ("--request-timeout", "RESPREAD_REQUEST_TIMEOUT", "30s", "for each answer of a request"),
    ("--scan-deadline", "RESPREAD_SCAN_DEADLINE", "2m", "for a scan, its requests included"),
    ("--plan-max-age", "RESPREAD_PLAN_MAX_AGE", "1m", "a plan older than this is not acted on"),
    ("--catch-up", "RESPREAD_CATCH_UP", "30s", "to show the watch cache current"),
    ("--pause-threshold", "RESPREAD_PAUSE_THRESHOLD", "5s", "a gap this long is a pause"),
)


def _bound_arguments(r: argparse.ArgumentParser) -> None:
    for flag, env, default, what in BOUNDS:
        r.add_argument(
            flag,
            metavar="DURATION",
            default=os.environ.get(env, default),
            help=f"{what} (default: ${env}, else {default})",
        )


def parse_bounds(args: argparse.Namespace) -> Any:
    """The Bounds the flags (or their variables) say; a UsageError names a bad one."""
    from respread.inputs.policy import PolicyError, parse_duration
    from respread.kube.client import Timeouts
    from respread.runtime.guard import ScanLimits
    from respread.runtime.heartbeat import PauseSettings
    from respread.runtime.operator import Bounds

    values = {}
    for flag, _, _, _ in BOUNDS:
        raw = getattr(args, flag[2:].replace("-", "_"))
        try:
            values[flag] = parse_duration(raw, flag)
        except PolicyError as err:
            raise UsageError(f"{flag}: {err.message}") from None
        if values[flag] <= 0:
            raise UsageError(f"{flag}: must be more than 0, got {raw}")
    threshold = values["--pause-threshold"]
    return Bounds(
        Timeouts(values["--connect-timeout"], values["--request-timeout"]),
        ScanLimits(values["--scan-deadline"], values["--plan-max-age"], values["--catch-up"]),
        PauseSettings(period=min(0.5, threshold / 4), threshold=threshold),
    )


def parse_prompts(args: argparse.Namespace) -> Any:
    """The PromptSettings `--scan-on-change` says; a UsageError names a bad value."""
    from respread.inputs.policy import PolicyError, parse_duration
    from respread.runtime.prompt import PromptSettings

    raw = args.scan_on_change
    try:
        quiet = 0.0 if raw.strip() == "0" else parse_duration(raw, "--scan-on-change")
    except PolicyError as err:
        raise UsageError(f"--scan-on-change: {err.message}") from None
    if quiet < 0:
        raise UsageError(f"--scan-on-change: must be 0 or more, got {raw}")
    return PromptSettings(quiet=quiet, longest=max(5.0, quiet))


def cmd_convert(args: argparse.Namespace) -> int:
    """`respread convert --from-descheduler FILE`: the RebalancePolicy a DeschedulerPolicy
    asks for, with comments where the two differ (respread.inputs.descheduler)."""
    from respread.inputs.annotated_yaml import render
    from respread.inputs.descheduler import ConversionError, convert, read_policy_text

    path = args.from_descheduler
    source = "<stdin>" if path == "-" else path
    try:
        if path == "-":
            data = _read_bounded(_stdin(), "standard input", POLICY_MAX_BYTES)
        else:
            data = _read_path(Path(path), path, POLICY_MAX_BYTES)
    except OSError as err:
        _fail(f"cannot read {path}: {err.strerror or err}")
    try:
        doc = read_policy_text(_text(data, source), source, POLICY_LIMITS)
        conversions = convert(doc, args.name)
    except ConversionError as err:
        _fail(f"cannot convert {path}: {err}")
    texts = [render(c.manifest, [(n.path, n.text) for n in c.notes]) for c in conversions]
    emit(None, "text", "---\n".join(texts))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    import logging

    from respread.inputs.policy import PolicyError, parse_duration
    from respread.kube.client import KubeError
    from respread.runtime.leadership import LeadershipError, LeaseTiming
    from respread.runtime.operator import Election, run

    election = None
    if args.leader_elect:
        try:
            timing = LeaseTiming.for_duration(
                parse_duration(args.lease_duration, "--lease-duration")
            )
        except (PolicyError, LeadershipError) as err:
            raise UsageError(f"--lease-duration: {err}") from None
        election = Election(
            name=args.lease_name,
            namespace=args.lease_namespace,
            identity=args.identity,
            timing=timing,
        )
    bounds = parse_bounds(args)
    prompts = parse_prompts(args)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    if not args.verbose:
        # One INFO line per scan is respread's own; the scheduler's per-run lines and kopf's
        # per-handler lines (every status write comes back as a policy event) stay at DEBUG.
        for noisy in ("apscheduler", "kopf.objects"):
            logging.getLogger(noisy).setLevel(logging.WARNING)
    try:
        run(
            kubeconfig=args.kubeconfig,
            election=election,
            liveness=args.liveness,
            metrics_port=args.metrics_port or None,
            bounds=bounds,
            readiness=args.readiness,
            namespace=args.lease_namespace,
            prompts=prompts,
        )
    except KubeError as err:
        _fail(str(err))
    return 0


def usable_streams() -> None:
    """Standard streams that can be written: a name with a lone surrogate (JSON allows
    "\\ud800") is printed escaped, not a crash; a closed standard error (`2>&-`) is a null
    device, so that nothing meant for it lands on standard output."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the life of the process
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")


def drop_stdout() -> None:
    """Standard output to the null device: what is still buffered for a stream that cannot be
    written (a full disk, a reader gone) must not fail again, with a traceback, at exit."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"respread: error: {printable(line)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    usable_streams()
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as done:  # --help, --version, or a usage error already printed
        return done.code if isinstance(done.code, int) else 2
    try:
        code: int = args.func(args)
        return code
    except UsageError as err:
        if isinstance(err, OutputError):
            drop_stdout()
        _say(str(err))
        return 2
    except MemoryError:
        # Under a memory limit (ulimit -v, a container's): one line, not a traceback.
        _say("out of memory (the input is too large for this memory limit)")
        return 2
    except BrokenPipeError:
        drop_stdout()
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

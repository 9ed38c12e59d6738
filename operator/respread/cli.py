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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NoReturn

import yaml

from respread import __version__
from respread.analysis.groups import build_index
from respread.analysis.pending import pending_pod
from respread.core.collector import gc_paused
from respread.core.limits import DEFAULT_LIMITS, Limits, printable, printable_lines, shown
from respread.core.quantity import QuantityError, units
from respread.core.timestamps import parse_rfc3339
from respread.inputs.documents import InputError, LeftOut, decode
from respread.inputs.objects import LoadResult, documents_from_text, load_documents, load_texts
from respread.inputs.policy import DEFAULT_POLICY, KIND, PolicyError, RebalancePolicy, parse_policy
from respread.inputs.scoping import within_namespace
from respread.pipeline import NO_MEMORY, Memory, scan
from respread.remedies.cost.release import lifecycle_of
from respread.report.contract import pending_json, report_json
from respread.report.pending_text import pending_pod_text
from respread.report.text import render_text
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
    if not result.state.nodes and not result.state.pods:
        _fail("the snapshot holds no Node and no Pod objects")
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
    ReplicaSet's costs) and the memory of the policy's earlier scans."""

    policy: RebalancePolicy
    others: tuple[RebalancePolicy, ...] = ()
    memory: Memory = NO_MEMORY


def live_scope(kubeconfig: str, context: str | None, name: str, quiet: bool) -> Scope:
    """RebalancePolicy ``name`` read from a live cluster, as the operator scans it."""
    from respread.kube.client import api_client
    from respread.kube.reader import read_policies

    with kube_calls():
        api = api_client(kubeconfig, context)
        bodies = read_policies(api)
    return policy_scope(bodies, name, api.configuration.host, quiet)


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
    named = args.policy_name
    if named is not None and (args.kubeconfig is None or args.snapshot or args.policy):
        _fail(
            "--policy-name reads the policy from a live cluster: give it with --kubeconfig,"
            " without --snapshot or --policy"
        )
    scope = Scope(read_policy(args.policy))
    now = parse_now(args.now)
    if named is not None:
        scope = live_scope(args.kubeconfig, args.context, named, args.quiet)
    scope = replace(scope, policy=within_namespace(scope.policy, args.namespace))
    loaded = load_input(args)
    # The loaded state lives until the process ends: keep the cyclic collector, paused while
    # the analysis runs, from walking its millions of objects on the collections that
    # rendering and writing the report trigger.
    gc.freeze()
    started = time.monotonic()
    result = scan(loaded.state, scope.policy, now, scope.memory, others=scope.others)
    note(
        args.quiet, started, f"analysed {len(result.analysis.groups)} constraint groups and planned"
    )
    if args.output == "text":
        emit(None, args.output, render_text(result.report))
    else:
        emit(report_json(result.report), args.output)
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
    policy = read_policy(args.policy)
    if args.pod.count("/") != 1 or not all(args.pod.split("/")) or args.pod.startswith("-"):
        _fail(f"expected NAMESPACE/POD, got {shown(args.pod)}")
    namespace, name = args.pod.split("/")
    loaded = load_input(args)
    pod = next((p for p in loaded.state.pods if p.namespace == namespace and p.name == name), None)
    if pod is None:
        _fail(f"pod {shown(args.pod)} is not in the {'cluster' if args.kubeconfig else 'snapshot'}")
    index = build_index(loaded.state, policy)
    ex = explain_pod(index, pod)
    held = pending_pod(index, policy, pod, parse_now(args.now))
    data = explanation_dict(ex)
    text = explanation_text(ex) if args.output == "text" else None
    if held is not None:  # an unbound pod that spread holds Pending: why, and what unblocks it
        data["pending"] = pending_json(held)
        text = text and text + "\n" + "\n".join(pending_pod_text(held)) + "\n"
    emit(data, args.output, text)
    return 0


def load_input(args: argparse.Namespace) -> LoadResult:
    """The cluster state from --snapshot, or read live with --kubeconfig (and --context)."""
    if (args.snapshot is None) == (args.kubeconfig is None):
        _fail("give exactly one of --snapshot and --kubeconfig")
    if args.kubeconfig is not None:
        return load_live(args.kubeconfig, args.quiet, args.context)
    if args.context is not None:
        _fail("--context needs --kubeconfig (a snapshot has no contexts)")
    return load_snapshot(args.snapshot, quiet=args.quiet, limits=snapshot_limits(args))


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
    p.add_argument(
        "--policy-name",
        metavar="NAME",
        help="with --kubeconfig: plan as the operator plans RebalancePolicy NAME in that cluster"
        " (its spec; the causes, cooldowns and back-offs its status remembers; the other"
        " policies)",
    )
    p.add_argument(
        "-n",
        "--namespace",
        metavar="NAMESPACE",
        help="only this namespace's workloads (in place of the policy's namespaces)",
    )
    p.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    p.add_argument("--now", metavar="TIME", help="evaluate pod ages at this RFC 3339 time")
    p.add_argument("-q", "--quiet", action="store_true", help="do not warn about left-out objects")
    p.add_argument(
        "--max-snapshot-size",
        type=byte_size,
        default=DEFAULT_LIMITS.max_bytes,
        metavar="SIZE",
        help=SIZE_HELP,
    )
    p.set_defaults(func=cmd_plan)

    e = sub.add_parser("explain", help="show how the scheduler judges one pod on every node")
    e.add_argument(
        "--snapshot",
        action="append",
        metavar="PATH",
        help="a manifest file or directory, - for stdin; repeat for several",
    )
    e.add_argument("--kubeconfig", metavar="FILE", help="read a live cluster instead")
    e.add_argument("--context", metavar="NAME", help=CONTEXT_HELP)
    e.add_argument("--policy", metavar="FILE")
    e.add_argument("pod", metavar="NAMESPACE/POD")
    e.add_argument(
        "--now", metavar="TIME", help="evaluate pod ages (of pods a move would evict) at this time"
    )
    e.add_argument("-o", "--output", choices=("text", "json"), default="text")
    e.add_argument("-q", "--quiet", action="store_true")
    e.add_argument(
        "--max-snapshot-size",
        type=byte_size,
        default=DEFAULT_LIMITS.max_bytes,
        metavar="SIZE",
        help=SIZE_HELP,
    )
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
    r.add_argument("--metrics-port", type=int, default=9090, help="0 disables the metrics server")
    r.add_argument("-v", "--verbose", action="store_true")
    r.set_defaults(func=cmd_run)
    return parser


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

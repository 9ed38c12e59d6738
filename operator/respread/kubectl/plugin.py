"""`kubectl respread`: respread as a kubectl plugin (the `kubectl-respread` command on PATH).

    kubectl respread plan [-n NAMESPACE] [--policy FILE] [-o text|json|yaml]
    kubectl respread explain NAMESPACE/POD | POD [-n NAMESPACE] [-o text|json]
    kubectl respread status [POLICY] [-n NAMESPACE] [-o text|json|yaml]

against the current context, with the flags kubectl users expect, before or after the command:
--kubeconfig (else $KUBECONFIG, which may list several files, else ~/.kube/config), --context,
-n/--namespace, -A/--all-namespaces. `plan` and `status` cover every namespace unless -n names
one (policies are cluster-scoped); `explain` takes the pod's namespace from NAMESPACE/POD, else
-n, else the context's namespace, else `default`, as kubectl does.

`plan` and `explain` are `respread plan|explain --kubeconfig ...` (the same pipeline and output);
`status` reads the RebalancePolicies' statuses the operator wrote.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from respread import __version__, cli
from respread.core.limits import printable
from respread.kube.client import api_client, context_namespace
from respread.kube.policies import list_policies
from respread.kubectl import status as status_text

PROG = "kubectl respread"


class PluginError(Exception):
    """Bad input or an unreachable cluster: one line on stderr, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{PROG}: error: {printable(message)} (see {self.prog} --help)\n")


def kube_flags(in_subcommand: bool) -> _Parser:
    """kubectl's connection flags. Given on the main parser and on every subcommand, so that
    they may stand before or after the command; a subcommand's copy leaves the attribute alone
    when the flag is not given there (SUPPRESS), keeping what the main parser read."""
    unset = argparse.SUPPRESS if in_subcommand else None
    flags = _Parser(add_help=False)
    group = flags.add_argument_group("kubectl flags")
    group.add_argument("--kubeconfig", metavar="FILE", default=unset,
                       help="default: $KUBECONFIG, else ~/.kube/config")  # fmt: skip
    group.add_argument("--context", metavar="NAME", default=unset,
                       help="a kubeconfig context (default: the current one)")  # fmt: skip
    group.add_argument("-n", "--namespace", metavar="NAMESPACE", default=unset)
    group.add_argument(
        "-A",
        "--all-namespaces",
        action="store_true",
        default=argparse.SUPPRESS if in_subcommand else False,
        help="every namespace (the default for plan and status)",
    )
    return flags


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog=PROG,
        description="Pod Topology Spread violations and the evictions that fix them, "
        "in the cluster kubectl points at.",
        parents=[kube_flags(False)],
    )
    parser.add_argument("--version", action="version", version=f"respread {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    flags = [kube_flags(True)]

    p = sub.add_parser("plan", parents=flags, help="violations and the eviction plan, now")
    p.add_argument("--policy", metavar="FILE", help="a RebalancePolicy manifest")
    p.add_argument("--policy-name", metavar="NAME", help="plan as the operator plans this policy")
    p.add_argument("-o", "--output", choices=("text", "json", "yaml", "compact"), default="text")
    p.add_argument(
        "--exit-code", action="store_true", help="exit 3 on violations, 4 on no all-clear"
    )
    p.add_argument("--now", metavar="TIME", help="evaluate pod ages at this RFC 3339 time")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress or warnings")

    e = sub.add_parser("explain", parents=flags, help="how the scheduler judges one pod")
    e.add_argument("pod", metavar="NAMESPACE/POD | POD")
    e.add_argument("--policy", metavar="FILE")
    e.add_argument("-o", "--output", choices=("text", "json"), default="text")
    e.add_argument("-q", "--quiet", action="store_true")

    s = sub.add_parser("status", parents=flags, help="what the operator reported, per policy")
    s.add_argument("policy", metavar="POLICY", nargs="?", help="one RebalancePolicy by name")
    s.add_argument("-o", "--output", choices=("text", "json", "yaml"), default="text")
    return parser


def kubeconfig_of(args: argparse.Namespace) -> str:
    """The kubeconfig kubectl would read: --kubeconfig, else $KUBECONFIG, else ~/.kube/config."""
    given = args.kubeconfig or os.environ.get("KUBECONFIG")
    if given:
        return str(given)
    home = Path.home() / ".kube" / "config"
    if home.is_file():
        return str(home)
    raise PluginError("no kubeconfig: give --kubeconfig, set KUBECONFIG or create ~/.kube/config")


def scope(args: argparse.Namespace) -> str | None:
    """The namespace plan and status narrow to; None for every namespace."""
    if args.all_namespaces and args.namespace:
        raise PluginError("give -n/--namespace or -A/--all-namespaces, not both")
    return None if args.all_namespaces else args.namespace


def connection(args: argparse.Namespace) -> list[str]:
    context = ["--context", args.context] if args.context else []
    return ["--kubeconfig", kubeconfig_of(args), *context]


def plan_argv(args: argparse.Namespace) -> list[str]:
    namespace = scope(args)
    argv = ["plan", *connection(args), "-o", args.output]
    argv += ["--namespace", namespace] if namespace else []
    argv += ["--policy", args.policy] if args.policy else []
    argv += ["--policy-name", args.policy_name] if args.policy_name else []
    argv += ["--now", args.now] if args.now else []
    argv += ["--exit-code"] if args.exit_code else []
    return argv + (["-q"] if args.quiet else [])


def pod_namespace(args: argparse.Namespace) -> str:
    """explain's NAMESPACE/POD: the argument's namespace, else -n, else the context's, else
    `default` (kubectl's order)."""
    if "/" in args.pod:
        return str(args.pod)
    if args.all_namespaces:
        raise PluginError("explain judges one pod: name its namespace, not -A")
    namespace = args.namespace or context_namespace(kubeconfig_of(args), args.context)
    return f"{namespace or 'default'}/{args.pod}"


def explain_argv(args: argparse.Namespace) -> list[str]:
    pod = pod_namespace(args)
    argv = ["explain", *connection(args), "-o", args.output, pod]
    argv += ["--policy", args.policy] if args.policy else []
    return argv + (["-q"] if args.quiet else [])


def cmd_status(args: argparse.Namespace) -> int:
    namespace = scope(args)
    with cli.kube_calls():
        policies = list_policies(api_client(kubeconfig_of(args), args.context))
    chosen = status_text.select(policies, args.policy)
    if args.policy is not None and not chosen:
        raise PluginError(f"no RebalancePolicy named {args.policy}")
    if args.output == "text":
        cli.emit(None, "text", status_text.render(chosen, namespace))
    else:
        cli.emit([status_text.digest(p, namespace) for p in chosen], args.output)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.command == "plan":
        return cli.main(plan_argv(args))
    if args.command == "explain":
        return cli.main(explain_argv(args))
    return cmd_status(args)


def _say(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"{PROG}: error: {printable(line)}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """The command's edges are respread's (respread.cli.main): one line and exit status 2 for
    bad input, an unreachable cluster or output that cannot be written; never a traceback."""
    cli.usable_streams()
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as done:  # --help, --version, or a usage error already printed
        return done.code if isinstance(done.code, int) else 2
    try:
        return run(args)
    except (PluginError, cli.UsageError) as err:
        if isinstance(err, cli.OutputError):
            cli.drop_stdout()
        _say(str(err))
        return 2
    except BrokenPipeError:
        cli.drop_stdout()
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

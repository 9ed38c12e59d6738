"""The golden cases: every bundled example and every conformance scenario, each planned under a
few policies (the defaults, Enforce with the caps lifted, every remedy on), in the compact form
with --exit-code under the defaults, and explained for the pods a scenario singles out (and, in
the examples, for every bound pod: would respread move it?).

`python -m tests.golden.record` writes what today's code prints for each case under outputs/;
test_golden_outputs.py requires the same bytes. A change that means to alter the output
re-records and shows the difference in its diff; a refactor must leave outputs/ untouched.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from respread.cli import main

HERE = Path(__file__).parent
REPO = HERE.parents[1]
OUTPUTS = HERE / "outputs"
POLICIES = HERE / "policies"
NOW = "2030-01-01T00:00:00Z"


@dataclass(frozen=True, slots=True)
class Case:
    name: str  # the output file's stem
    argv: tuple[str, ...]  # the command's arguments; for ".status.json", (cluster, policy or "")
    suffix: str  # .json, .txt, or .status.json (two operator scans' statuses)


def _inputs() -> Iterator[tuple[str, Path, Path | None]]:
    """(name, cluster file, its own policy if it has one) for every cluster the repo holds."""
    for d in _cluster_folders(REPO / "examples"):
        yield f"example-{d.name}", d / "cluster.yaml", None
    conformance = REPO / "tests" / "scenarios" / "conformance"
    for family in ("scheduler-filter", "descheduler"):
        for d in _cluster_folders(conformance / family):
            yield f"{family}-{d.name}", d / "cluster.yaml", None
    for f in sorted((conformance / "review").glob("*.yaml")):
        yield f"review-{f.stem}", f, None
    for d in _cluster_folders(REPO / "tests" / "scenarios" / "golden"):
        yield f"golden-{d.name}", d / "cluster.yaml", d / "policy.yaml"
    for d in _cluster_folders(REPO / "tests" / "scenarios" / "domains"):  # issue 24
        yield f"domains-{d.name}", d / "cluster.yaml", None
    for d in sorted((REPO / "tests" / "scenarios" / "found").rglob("cluster.yaml")):
        yield f"found-{d.parent.name}", d, None
    for f in sorted((HERE / "clusters").glob("*.yaml")):  # surges settled and in flight
        yield f"golden-cluster-{f.stem}", f, None


def _cluster_folders(folder: Path) -> list[Path]:
    """The folders in ``folder`` that hold a cluster.yaml, by name."""
    return [d for d in sorted(folder.iterdir()) if (d / "cluster.yaml").is_file()]


def _incoming(cluster: Path) -> list[str]:
    """NAMESPACE/POD of the pods a scheduler-filter scenario asks about."""
    out = []
    for doc in yaml.safe_load_all(cluster.read_text()):
        if not isinstance(doc, dict) or doc.get("kind") != "Pod":
            continue
        meta = doc.get("metadata") or {}
        if (meta.get("annotations") or {}).get("scenario/incoming") == "true":
            out.append(f"{meta.get('namespace', 'default')}/{meta['name']}")
    return out


def _bound(cluster: Path) -> list[str]:
    """NAMESPACE/POD of the pods bound to a node in a cluster file."""
    out = []
    for doc in yaml.safe_load_all(cluster.read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "Pod" and doc["spec"].get("nodeName"):
            meta = doc["metadata"]
            out.append(f"{meta.get('namespace', 'default')}/{meta['name']}")
    return out


def cases() -> list[Case]:
    out: list[Case] = []
    policies = sorted(POLICIES.glob("*.yaml"))
    for name, cluster, own in _inputs():
        base = ("plan", "--snapshot", str(cluster), "--now", NOW, "-q")
        out.append(Case(f"{name}.default", (*base, "-o", "json"), ".json"))
        out.append(Case(f"{name}.default", (*base, "-o", "text"), ".txt"))
        out.append(Case(f"{name}.compact", (*base, "-o", "compact", "--exit-code"), ".txt"))
        for policy in policies:
            argv = (*base, "--policy", str(policy), "-o", "json")
            out.append(Case(f"{name}.{policy.stem}", argv, ".json"))
        if own is not None:
            out.append(Case(f"{name}.own", (*base, "--policy", str(own), "-o", "json"), ".json"))
        out.append(Case(f"{name}.default", (str(cluster), ""), ".status.json"))
        for policy in policies:
            out.append(Case(f"{name}.{policy.stem}", (str(cluster), str(policy)), ".status.json"))
        if name.startswith("example-"):  # would respread move it? every bound pod
            for pod in _bound(cluster):
                stem = f"{name}.explain-{pod.replace('/', '_')}"
                argv = ("explain", "--snapshot", str(cluster), pod, "--now", NOW, "-q")
                out.append(Case(stem, (*argv, "-o", "json"), ".json"))
                out.append(Case(stem, (*argv, "-o", "text"), ".txt"))
        for pod in _incoming(cluster):
            out.append(
                Case(
                    f"{name}.explain-{pod.replace('/', '_')}",
                    ("explain", "--snapshot", str(cluster), pod, "-q", "-o", "json"),
                    ".json",
                )
            )
    return out


def operator_statuses(cluster: str, policy_file: str) -> str:
    """The status the operator writes after its first scan of the cluster and after a second
    scan of the same state 60 s later (its memory carried over, its analysis reused as the
    operator reuses it for an unchanged cluster), as JSON."""
    from respread.core.timestamps import format_rfc3339, parse_rfc3339
    from respread.inputs.objects import load_texts
    from respread.inputs.policy import DEFAULT_POLICY, parse_policy
    from respread.pipeline import scan
    from respread.report.contract import status_json
    from respread.report.status import build_status, cooldowns_status
    from respread.runtime.memory import PolicyMemory

    state = load_texts([(cluster, Path(cluster).read_text())]).state
    policy = parse_policy(yaml.safe_load(Path(policy_file).read_text())) if policy_file else None
    policy = policy or DEFAULT_POLICY
    memory = PolicyMemory()
    statuses = []
    for now in (parse_rfc3339(NOW), parse_rfc3339(NOW) + 60):
        computed = scan(
            state, policy, now, memory.scan, memo=memory.cost_memo, analyses=memory.analyses
        )
        memory.scan = computed.memory
        status = status_json(
            build_status(
                computed.report,
                policy,
                format_rfc3339(now),
                previous=memory.previous_status,
                cooldowns=cooldowns_status(memory.histories(), now, policy.eviction.cooldown),
            )
        )
        memory.previous_status = status
        statuses.append(status)
    return json.dumps(statuses, indent=2)


def run(case: Case) -> bytes:
    """What `respread ARGV` prints, with the repository's path written as <repo>; for a
    status case, the operator's statuses."""
    if case.suffix == ".status.json":
        return operator_statuses(*case.argv).replace(str(REPO), "<repo>").encode()
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        code = main(list(case.argv))
    text = stdout.getvalue().replace(str(REPO), "<repo>")
    if case.suffix == ".json":
        json.loads(text)  # the contract: one JSON document
    return f"exit {code}\n{stderr.getvalue().replace(str(REPO), '<repo>')}---\n{text}".encode()

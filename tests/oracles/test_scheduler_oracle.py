"""Differential tests: respread's `explain` against kube-scheduler's real filter plugins.

The oracle (tests/oracles/scheduler/main.go) runs the release's own PodTopologySpread,
NodeAffinity and TaintToleration plugins; see tests/oracles/scheduler/build.py for how it is
built and cached. Every comparison is per node:

* PodTopologySpread Filter status (`spreadFilter`) must be identical;
* NodeAffinity and TaintToleration must agree with respread's matchers (`affinity_matches`,
  `untolerated_taint`);
* respread's `feasible` must equal "all three filters pass" (no cordons and no resources are
  generated, so respread's other checks never bite).

Generated clusters are serialized as real Kubernetes JSON objects, which both sides read.
A disagreement is shrunk by hypothesis and the minimal case is written as a scenario directory
under tests/scenarios/found/<name>/ (cluster.yaml + expect.yaml, the expectations being the
oracle's answers), and the test fails.

    RESPREAD_ORACLE_EXAMPLES=5000 .venv/bin/python -m pytest -m oracle tests/oracles
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.control import current_build_context

from respread.analysis.groups import build_index
from respread.core.selectors import affinity_matches, untolerated_taint
from respread.inputs.objects import load_documents
from respread.inputs.policy import DEFAULT_POLICY
from respread.scheduling.explain import explain_pod
from tests.support.constants import HOST, ZONE

from ..scenarios.conftest import scenario_dirs
from .scheduler.build import OracleBuildError, ensure_built, k8s_version

pytestmark = pytest.mark.oracle

REPO = Path(__file__).resolve().parents[2]
FOUND = REPO / "tests" / "scenarios" / "found"
EXAMPLES = int(os.environ.get("RESPREAD_ORACLE_EXAMPLES", "200"))
INCOMING_ANNOTATION = "scenario/incoming"

Json = dict[str, Any]


# --------------------------------------------------------------------------------------------
# The oracle process


class Oracle:
    """One long-lived `scheduler-oracle -serve`: a JSON case per line in, an answer per line out."""

    def __init__(self, binary: Path) -> None:
        self.binary = binary
        self._stderr: IO[str] = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed in close())
        self._proc = subprocess.Popen(
            [str(binary), "-serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            bufsize=1,
        )

    def ask(self, case: Json | list[Json]) -> Any:
        proc = self._proc
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.write(json.dumps(case, separators=(",", ":")) + "\n")
            proc.stdin.flush()
        except BrokenPipeError:
            pass
        line = proc.stdout.readline()
        if not line:
            self._stderr.seek(0)
            raise AssertionError(
                f"the oracle {self.binary} died (exit {proc.poll()}): {self._stderr.read()}"
            )
        reply = json.loads(line)
        if isinstance(reply, dict) and "error" in reply:
            raise AssertionError(f"the oracle rejected the case: {reply['error']}")
        return reply

    def close(self) -> None:
        if self._proc.stdin is not None:
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()
        self._stderr.close()


@dataclass
class Stats:
    """How many generated clusters were compared, and where the time went."""

    clusters: int = 0
    nodes: int = 0
    oracle_s: float = 0.0
    respread_s: float = 0.0
    found: list[str] = field(default_factory=list)


@contextlib.contextmanager
def _uncaptured(request: pytest.FixtureRequest) -> Iterator[None]:
    """Let build progress and the summary reach the terminal even under output capture."""
    capman = request.config.pluginmanager.getplugin("capturemanager")
    if capman is None:
        yield
        return
    with capman.global_and_fixture_disabled():
        yield


@pytest.fixture(scope="session")
def oracle(request: pytest.FixtureRequest) -> Iterator[Oracle]:
    with _uncaptured(request):
        try:
            binary = ensure_built()
        except OracleBuildError as err:
            pytest.fail(f"cannot build the scheduler oracle: {err}", pytrace=False)
    proc = Oracle(binary)
    yield proc
    proc.close()


@pytest.fixture(scope="session")
def stats(request: pytest.FixtureRequest) -> Iterator[Stats]:
    s = Stats()
    yield s
    if s.clusters:
        with _uncaptured(request):
            per = (s.oracle_s + s.respread_s) / s.clusters * 1000
            print(
                f"\n[scheduler-oracle] compared {s.clusters} generated clusters "
                f"({s.nodes} node verdicts): {per:.1f} ms per cluster "
                f"(oracle {s.oracle_s / s.clusters * 1000:.1f} ms, "
                f"respread {s.respread_s / s.clusters * 1000:.1f} ms)"
            )
            for path in s.found:
                print(f"[scheduler-oracle] disagreement written to {path}")


# --------------------------------------------------------------------------------------------
# Generated clusters, as Kubernetes JSON

RACK = "example.com/rack"
TIER = "example.com/tier"
CPUS = "example.com/cpus"
TOPOLOGY_KEYS = (ZONE, HOST, RACK)
NAMESPACES = ("default", "other")
POD_LABELS = {"app": ("web", "db"), "version": ("1", "2"), "track": ("stable", "")}
NODE_VOCABULARY = {
    ZONE: ("zone-a", "zone-b", "zone-c"),
    HOST: ("shared-host",),  # besides each node's own name
    RACK: ("rack-1", "rack-2", ""),
    TIER: ("gold", "silver"),
    CPUS: ("2", "16", "007", "many", ""),
}
TAINT_KEYS = ("dedicated", "gpu", "node.kubernetes.io/unschedulable")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
DELETED_AT = "2024-01-01T00:00:00Z"


def _weighted(p_true: float) -> st.SearchStrategy[bool]:
    """True with roughly probability p_true; shrinks towards True (the simpler, usual case)."""
    n = 20
    return st.integers(0, n - 1).map(lambda x: x < round(p_true * n))


@st.composite
def node_labels(draw: st.DrawFn, name: str) -> dict[str, str]:
    labels: dict[str, str] = {}
    if draw(_weighted(0.9)):
        labels[ZONE] = draw(st.sampled_from(NODE_VOCABULARY[ZONE]))
    if draw(_weighted(0.85)):
        labels[HOST] = draw(st.sampled_from((name, *NODE_VOCABULARY[HOST])))
    if draw(_weighted(0.6)):
        labels[RACK] = draw(st.sampled_from(NODE_VOCABULARY[RACK]))
    for key in (TIER, CPUS):
        if draw(_weighted(0.5)):
            labels[key] = draw(st.sampled_from(NODE_VOCABULARY[key]))
    return labels


taint = st.fixed_dictionaries(
    {"key": st.sampled_from(TAINT_KEYS), "effect": st.sampled_from(EFFECTS)},
    optional={"value": st.sampled_from(("x", "y"))},
)


@st.composite
def taints(draw: st.DrawFn) -> list[Json]:
    if draw(_weighted(0.7)):
        return []
    return draw(
        st.lists(taint, min_size=1, max_size=2, unique_by=lambda t: (t["key"], t["effect"]))
    )


@st.composite
def nodes(draw: st.DrawFn) -> list[Json]:
    out = []
    for i in range(draw(st.integers(1, 7))):
        name = f"node-{i}"
        node: Json = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": draw(node_labels(name))},
            "spec": {},
        }
        node_taints = draw(taints())
        if node_taints:
            node["spec"]["taints"] = node_taints
        out.append(node)
    return out


@st.composite
def pod_labels(draw: st.DrawFn) -> dict[str, str]:
    labels = {}
    for key, values in POD_LABELS.items():
        if draw(_weighted(0.8 if key == "app" else 0.6)):
            labels[key] = draw(st.sampled_from(values))
    return labels


def _pod(name: str, namespace: str, labels: dict[str, str], spec: Json) -> Json:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}], **spec},
    }


@st.composite
def existing_pods(draw: st.DrawFn, node_names: list[str]) -> list[Json]:
    out = []
    for i in range(draw(st.integers(0, 20))):
        namespace = draw(st.sampled_from(NAMESPACES)) if draw(_weighted(0.2)) else "default"
        pod = _pod(f"pod-{i}", namespace, draw(pod_labels()), {})
        # Mostly bound to a node of the cluster (a third of them piled on node-0, so that skew
        # builds up); sometimes to a node that is gone, or unbound.
        where: str | None
        if draw(_weighted(0.85)):
            where = "node-0" if draw(_weighted(0.3)) else draw(st.sampled_from(node_names))
        else:
            where = draw(st.sampled_from(("node-gone", None)))
        if where is None:
            pod["status"] = {"phase": "Pending"}
        else:
            pod["spec"]["nodeName"] = where
            phase = (
                "Running"
                if draw(_weighted(0.75))
                else draw(st.sampled_from(("Succeeded", "Failed", "Pending", "Unknown")))
            )
            pod["status"] = {"phase": phase}
        if draw(_weighted(0.12)):
            pod["metadata"]["deletionTimestamp"] = DELETED_AT
        out.append(pod)
    return out


def _values_for(key: str) -> tuple[str, ...]:
    """Values to select nodes by (the empty label value included, it is a value like any)."""
    if key == HOST:
        return ("node-0", "node-1", "shared-host")
    return NODE_VOCABULARY[key]


@st.composite
def node_selector_requirement(draw: st.DrawFn) -> Json:
    key = draw(st.sampled_from((TIER, ZONE, CPUS, HOST, RACK)))
    op = draw(st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")))
    req: Json = {"key": key, "operator": op}
    if op in ("In", "NotIn"):
        req["values"] = draw(
            st.lists(st.sampled_from(_values_for(key)), min_size=1, max_size=2, unique=True)
        )
    elif op in ("Gt", "Lt"):
        # Values must be valid label values (API validation since v1.31); "-1" or "+3" parse
        # as integers but make the scheduler drop the whole term (found/affinity-gt-invalid-*).
        req["values"] = [draw(st.sampled_from(("3", "7", "007", "0")))]
    return req


@st.composite
def node_selector_term(draw: st.DrawFn) -> Json:
    term: Json = {}
    exprs = draw(st.lists(node_selector_requirement(), max_size=2))
    if exprs:
        term["matchExpressions"] = exprs
    if draw(_weighted(0.15)):
        term["matchFields"] = [
            {
                "key": "metadata.name",
                "operator": draw(st.sampled_from(("In", "NotIn"))),
                "values": [draw(st.sampled_from(("node-0", "node-1", "node-2")))],
            }
        ]
    return term


@st.composite
def tolerations(draw: st.DrawFn) -> list[Json]:
    out = []
    for _ in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(("equal", "exists", "everything")))
        tol: Json
        if kind == "everything":
            tol = {"operator": "Exists"}
        elif kind == "exists":
            tol = {"key": draw(st.sampled_from(TAINT_KEYS)), "operator": "Exists"}
        else:
            tol = {"key": draw(st.sampled_from(TAINT_KEYS)), "value": draw(st.sampled_from("xy"))}
            if draw(st.booleans()):
                tol["operator"] = "Equal"
        effect = draw(st.sampled_from(("", *EFFECTS)))
        if effect:
            tol["effect"] = effect
        out.append(tol)
    return out


SELECTORS: tuple[Json | None, ...] = (
    {"matchLabels": {"app": "web"}},
    None,
    {},
    {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "db"]}]},
    {"matchExpressions": [{"key": "app", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "version", "operator": "NotIn", "values": ["1"]}]},
    {"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]},
    {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "version", "operator": "In", "values": ["1"]}],
    },
)


def _selector_keys(selector: Json) -> set[str]:
    keys = set(selector.get("matchLabels", {}))
    keys.update(e["key"] for e in selector.get("matchExpressions", []))
    return keys


@st.composite
def spread_constraint(draw: st.DrawFn, labels: dict[str, str]) -> Json:
    when = "DoNotSchedule" if draw(_weighted(0.8)) else "ScheduleAnyway"
    c: Json = {
        "maxSkew": 1 if draw(_weighted(0.6)) else draw(st.integers(1, 3)),
        "topologyKey": draw(st.sampled_from((ZONE, HOST, ZONE, HOST, RACK))),
        "whenUnsatisfiable": when,
    }
    selector = draw(st.sampled_from(SELECTORS))
    if selector is not None:
        selector = json.loads(json.dumps(selector))  # a private copy, it may be extended below
        c["labelSelector"] = selector
    if when == "DoNotSchedule" and draw(_weighted(0.3)):
        c["minDomains"] = draw(st.integers(1, 4))
    for policy in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
        value = draw(st.sampled_from((None, "Honor", "Ignore")))
        if value:
            c[policy] = value
    if selector is not None and draw(_weighted(0.3)):
        # matchLabelKeys (validation: a selector is required; a key may not be in it).
        free = [k for k in POD_LABELS if k not in _selector_keys(selector)]
        keys = draw(st.lists(st.sampled_from(free), min_size=1, unique=True)) if free else []
        if keys:
            c["matchLabelKeys"] = keys
            # kube-apiserver >= v1.34 merges `key In [value]` into the selector at creation;
            # "stale" stands for a label changed after creation.
            merge = draw(st.sampled_from(("none", "merged", "stale")))
            if merge != "none":
                exprs = selector.setdefault("matchExpressions", [])
                for key in keys:
                    if key in labels:
                        value = labels[key] if merge == "merged" else "0"
                        exprs.append({"key": key, "operator": "In", "values": [value]})
    return c


@st.composite
def incoming_pod(draw: st.DrawFn) -> Json:
    namespace = draw(st.sampled_from(NAMESPACES)) if draw(_weighted(0.2)) else "default"
    labels = draw(pod_labels())
    spec: Json = {}
    if draw(_weighted(0.25)):
        keys = draw(
            st.lists(st.sampled_from((TIER, ZONE, RACK)), min_size=1, max_size=2, unique=True)
        )
        spec["nodeSelector"] = {k: draw(st.sampled_from(_values_for(k))) for k in keys}
    if draw(_weighted(0.35)):
        terms = draw(st.lists(node_selector_term(), min_size=1, max_size=2))
        spec["affinity"] = {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}
            }
        }
    tols = draw(tolerations())
    if tols:
        spec["tolerations"] = tols
    constraints = (
        draw(st.lists(spread_constraint(labels), min_size=1, max_size=3))
        if draw(_weighted(0.9))
        else []
    )
    if constraints:
        spec["topologySpreadConstraints"] = constraints
    pod = _pod("incoming", namespace, labels, spec)
    pod["status"] = {"phase": "Pending"}
    return pod


@st.composite
def clusters(draw: st.DrawFn) -> Json:
    node_list = draw(nodes())
    names = [n["metadata"]["name"] for n in node_list]
    return {"nodes": node_list, "pods": draw(existing_pods(names)), "pod": draw(incoming_pod())}


# --------------------------------------------------------------------------------------------
# Comparing


@dataclass(frozen=True)
class Verdict:
    spread: str
    affinity: bool
    taints: bool
    feasible: bool


def respread_verdicts(case: Json) -> dict[str, Verdict]:
    """respread's answer for the incoming (unbound) pod, per node."""
    docs = [("case", d) for d in (*case["nodes"], *case["pods"], case["pod"])]
    loaded = load_documents(docs)
    assert loaded.problems == (), [str(p) for p in loaded.problems]
    meta = case["pod"]["metadata"]
    key = f"{meta['namespace']}/{meta['name']}"
    pod = next(p for p in loaded.state.pods if p.key == key)
    ex = explain_pod(build_index(loaded.state, DEFAULT_POLICY), pod)
    by_name = {n.name: n for n in loaded.state.nodes}
    return {
        v.name: Verdict(
            v.spread_filter.value,
            affinity_matches(pod.spec.affinity, by_name[v.name]),
            untolerated_taint(pod.spec.tolerations, by_name[v.name].taints) is None,
            v.feasible,
        )
        for v in ex.nodes
    }


def oracle_verdicts(answer: Json) -> dict[str, Verdict]:
    out = {}
    for name, v in answer["nodes"].items():
        ok = v["spreadFilter"] == "Success" and v["nodeAffinity"] and v["taintToleration"]
        out[name] = Verdict(v["spreadFilter"], v["nodeAffinity"], v["taintToleration"], ok)
    return out


def disagreements(want: dict[str, Verdict], got: dict[str, Verdict]) -> list[str]:
    """What respread (got) says differently from the scheduler (want), one line per finding."""
    if set(want) != set(got):
        return [f"node sets differ: scheduler {sorted(want)}, respread {sorted(got)}"]
    out = []
    for name in sorted(want):
        w, g = want[name], got[name]
        for attr, label in (
            ("spread", "spreadFilter"),
            ("affinity", "nodeAffinity"),
            ("taints", "taintToleration"),
            ("feasible", "feasible"),
        ):
            if getattr(w, attr) != getattr(g, attr):
                out.append(
                    f"{name}: {label}: scheduler {getattr(w, attr)}, respread {getattr(g, attr)}"
                )
    return out


# --------------------------------------------------------------------------------------------
# Scenario files (the shared scheduler-filter format)


def case_from_scenario(path: Path) -> Json:
    docs = [d for d in yaml.safe_load_all((path / "cluster.yaml").read_text()) if d]
    incoming = [
        d
        for d in docs
        if d.get("kind") == "Pod"
        and (d["metadata"].get("annotations") or {}).get(INCOMING_ANNOTATION) == "true"
    ]
    assert len(incoming) == 1, f"{path}: want exactly one pod annotated {INCOMING_ANNOTATION}"
    return {
        "nodes": [d for d in docs if d.get("kind") == "Node"],
        "pods": [d for d in docs if d.get("kind") == "Pod" and d is not incoming[0]],
        "pod": incoming[0],
    }


def write_scenario(case: Json, answer: Json, found: list[str]) -> Path:
    """Save a disagreement as tests/scenarios/found/<name>/, the oracle's answer as expected."""
    want = oracle_verdicts(answer)
    kind = found[0].split(": ")[1] if ": " in found[0] else "nodes"
    text = json.dumps(case, sort_keys=True)
    name = f"{kind.lower()}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"
    incoming = json.loads(json.dumps(case["pod"]))
    incoming["metadata"].setdefault("annotations", {})[INCOMING_ANNOTATION] = "true"
    cluster = [*case["nodes"], *case["pods"], incoming]
    expect = {
        "source": {
            "tool": "tests/oracles/test_scheduler_oracle.py (hypothesis, shrunk)",
            "oracle": (
                f"k8s.io/kubernetes@{k8s_version()} scheduler plugins podtopologyspread, "
                "nodeaffinity, tainttoleration (tests/oracles/scheduler/main.go)"
            ),
            "assertion": "statusByNode and feasibleNodesAllFilters are the oracle's answers",
        },
        "featureGates": answer.get("features", {}),
        "feasibleNodes": sorted(n for n, v in want.items() if v.spread == "Success"),
        "statusByNode": {n: v.spread for n, v in sorted(want.items())},
        "feasibleNodesAllFilters": sorted(n for n, v in want.items() if v.feasible),
        "notes": "respread disagreed: " + "; ".join(found),
    }
    out = FOUND / name
    out.mkdir(parents=True, exist_ok=True)
    (out / "cluster.yaml").write_text(yaml.safe_dump_all(cluster, sort_keys=False))
    (out / "expect.yaml").write_text(yaml.safe_dump(expect, sort_keys=False, width=100))
    return out


def check_case(oracle: Oracle, stats: Stats, case: Json) -> None:
    t0 = time.perf_counter()
    answer = oracle.ask(case)
    t1 = time.perf_counter()
    got = respread_verdicts(case)
    t2 = time.perf_counter()
    stats.clusters += 1
    stats.nodes += len(case["nodes"])
    stats.oracle_s += t1 - t0
    stats.respread_s += t2 - t1
    found = disagreements(oracle_verdicts(answer), got)
    if not found:
        return
    if current_build_context().is_final:  # the shrunk example, replayed last
        path = write_scenario(case, answer, found)
        stats.found.append(str(path))
        found.append(f"minimal case written to {path.relative_to(REPO)}")
    raise AssertionError(
        "respread disagrees with kube-scheduler:\n  "
        + "\n  ".join(found)
        + "\noracle spread reasons: "
        + json.dumps(answer.get("spreadReasons", {}))
    )


# --------------------------------------------------------------------------------------------
# Tests


@pytest.mark.timeout(max(900, EXAMPLES))  # about 35 ms per example; leave room on a busy machine
@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=clusters())
def test_explain_agrees_with_the_scheduler_plugins(
    oracle: Oracle, stats: Stats, case: Json
) -> None:
    check_case(oracle, stats, case)


SHARED = scenario_dirs("scheduler-filter")
FOUND_DIRS = sorted(p for p in FOUND.glob("*") if (p / "cluster.yaml").is_file())


@pytest.fixture(scope="module")
def shared_answers(oracle: Oracle) -> dict[str, Json]:
    """The oracle's answers to every shared scenario, in one batched request."""
    dirs = [*SHARED, *FOUND_DIRS]
    answers = oracle.ask([case_from_scenario(d) for d in dirs])
    return {str(d): a for d, a in zip(dirs, answers, strict=True)}


@pytest.mark.parametrize(
    "scenario",
    [*SHARED, *FOUND_DIRS],
    ids=[*(p.name for p in SHARED), *(f"found/{p.name}" for p in FOUND_DIRS)],
)
def test_the_oracle_reproduces_the_reference_answers(
    scenario: Path, shared_answers: dict[str, Json]
) -> None:
    """The harness self-test: the real plugins give each scenario's recorded answers."""
    expect = yaml.safe_load((scenario / "expect.yaml").read_text())
    want = oracle_verdicts(shared_answers[str(scenario)])
    assert {n: v.spread for n, v in want.items()} == expect["statusByNode"]
    assert sorted(n for n, v in want.items() if v.spread == "Success") == sorted(
        expect["feasibleNodes"]
    )
    assert sorted(n for n, v in want.items() if v.feasible) == sorted(
        expect["feasibleNodesAllFilters"]
    )


@pytest.mark.parametrize("scenario", FOUND_DIRS, ids=[p.name for p in FOUND_DIRS])
def test_found_disagreements_are_fixed(scenario: Path, shared_answers: dict[str, Json]) -> None:
    """Each saved disagreement, replayed: respread must now give the scheduler's answer."""
    case = case_from_scenario(scenario)
    found = disagreements(oracle_verdicts(shared_answers[str(scenario)]), respread_verdicts(case))
    assert not found, "\n".join(found)


def test_the_oracle_reports_default_feature_gates(oracle: Oracle) -> None:
    answer = oracle.ask({"nodes": [], "pods": [], "pod": _pod("p", "default", {}, {})})
    assert answer["features"] == {
        "NodeInclusionPolicyInPodTopologySpread": True,
        "MatchLabelKeysInPodTopologySpread": True,
    }

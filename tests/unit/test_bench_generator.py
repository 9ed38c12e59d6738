"""The benchmark's synthetic cluster generator (bench/generate.py): deterministic, exact sizes,
manifests the real loader reads without problems, and skew for the analysis to find."""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from respread.analysis.groups import analyze
from respread.inputs.objects import load_documents, load_texts
from respread.inputs.policy import DEFAULT_POLICY

GENERATE = Path(__file__).resolve().parents[2] / "bench" / "generate.py"


@cache
def gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_generate", GENERATE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while being defined
    spec.loader.exec_module(module)
    return module


@cache
def cluster(nodes: int, pods: int, seed: int) -> list[dict[str, Any]]:
    manifests: list[dict[str, Any]] = gen().generate(nodes, pods, seed)
    return manifests


def kinds(manifests: list[dict[str, Any]]) -> Counter[str]:
    return Counter(m["kind"] for m in manifests)


def test_same_seed_same_manifests_other_seed_others() -> None:
    assert gen().to_json(cluster(30, 900, 3)) == gen().to_json(gen().generate(30, 900, 3))
    assert gen().to_json(cluster(30, 900, 3)) != gen().to_json(cluster(30, 900, 4))


def test_exact_node_and_pod_counts() -> None:
    for nodes, pods in ((30, 900), (60, 1800), (12, 40)):
        counted = kinds(cluster(nodes, pods, 1))
        assert counted["Node"] == nodes
        assert counted["Pod"] == pods


def test_json_and_yaml_load_to_the_same_state_without_problems() -> None:
    manifests = cluster(30, 900, 3)
    from_json = load_texts([("x.json", gen().to_json(manifests))])
    from_yaml = load_texts([("x.yaml", gen().to_yaml(manifests))])
    direct = load_documents([("x", m) for m in manifests])
    assert not from_json.problems and not from_yaml.problems and not direct.problems
    assert from_json.state == from_yaml.state == direct.state
    assert len(from_json.state.pods) == 900


def test_owners_exist_and_chain_to_deployments() -> None:
    state = load_documents([("x", m) for m in cluster(60, 1800, 2)]).state
    workloads = {w.key: w for w in state.workloads}
    for pod in state.pods:
        assert pod.owner is not None
        owner = workloads[(pod.namespace, pod.owner.kind, pod.owner.name)]
        if owner.kind == "ReplicaSet":
            assert owner.owner is not None and owner.owner.kind == "Deployment"
            assert pod.labels["pod-template-hash"] in owner.name


def test_realistic_shape() -> None:
    manifests = cluster(60, 1800, 1)
    counted = kinds(manifests)
    assert counted["StatefulSet"] > 0 and counted["Deployment"] > counted["StatefulSet"]
    assert counted["PodDisruptionBudget"] > 0 and counted["Service"] > 0
    nodes = [m for m in manifests if m["kind"] == "Node"]
    assert all(gen().ZONE_KEY in n["metadata"]["labels"] for n in nodes)
    assert len({n["metadata"]["labels"][gen().ZONE_KEY] for n in nodes}) == 3
    budgets = [m for m in manifests if m["kind"] == "PodDisruptionBudget"]
    assert any(b["status"]["disruptionsAllowed"] == 0 for b in budgets)
    replicas = [
        m["spec"]["replicas"] for m in manifests if m["kind"] in ("Deployment", "StatefulSet")
    ]
    assert min(replicas) >= 2 and max(replicas) <= 100


def test_history_leaves_skew_to_find() -> None:
    state = load_documents([("x", m) for m in cluster(60, 1800, 1)]).state
    analysis = analyze(state, DEFAULT_POLICY)
    assert 0 < len(analysis.violations) < len(analysis.groups)

"""The inputs that reach respread's worst case per MB, and what `respread plan` takes on them.

Each class below writes a snapshot of about ``--mb`` megabytes that is shaped to cost the most
time or memory per byte in one part of respread (docs/dev/input-bounds.md, "The worst case per
MB"), then runs ``respread plan`` (and ``explain`` where it matters) on it in a fresh process,
``--repeats`` times, and prints the median wall-clock time and peak resident memory, per MB of
input.

    .venv/bin/python bench/hostile.py                      # every class at 1 MB
    .venv/bin/python bench/hostile.py --mb 4 --only affinity-in taints
    .venv/bin/python bench/hostile.py --keep /tmp/hostile  # keep the files

Run it on a quiet machine: the figures are wall-clock.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
NOW = "2026-11-22T10:00:00Z"


def node(name: str, zone: str, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {ZONE: zone, HOST: name}},
        "spec": extra.pop("spec", {}),
        "status": {"allocatable": {"cpu": "64", "memory": "256Gi", "pods": "1000"}},
        **extra,
    }


def pod(name: str, node_name: str | None, spec: dict[str, Any], labels: dict[str, str]) -> Any:
    """A pod of the ReplicaSet `a` (see replica_set)."""
    body: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}], **spec}
    if node_name:
        body["nodeName"] = node_name
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "controller": True}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "labels": labels,
            "ownerReferences": [owner],
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": body,
        "status": {"phase": "Running" if node_name else "Pending"},
    }


def replica_set(replicas: int, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": {"name": "a", "namespace": "bench"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "a"}}, "spec": spec},
        },
    }


def spread(key: str = ZONE, **extra: Any) -> dict[str, Any]:
    return {
        "maxSkew": 1,
        "topologyKey": key,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "a"}},
        **extra,
    }


def listed(items: list[Any]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": items})


def affinity_in(size: int) -> str:
    """One pod whose required node affinity is an `In` of as many values as fit, over 1,000
    nodes: the filter checks every node against every value."""
    nodes = [node(f"n{i}", f"z{i % 3}") for i in range(1000)]
    values = [f"v{i:07d}" for i in range(max(1, (size - 150_000) // 11))]
    term = {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["z0", *values]}]}
    spec = {
        "topologySpreadConstraints": [spread()],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
            }
        },
    }
    pods = [pod(f"p{i}", f"n{i % 3}", spec, {"app": "a"}) for i in range(4)]
    return listed([*nodes, *pods, replica_set(4, spec)])


def taints(size: int) -> str:
    """Three nodes with as many taints as fit and pods tolerating as many (nodeTaintsPolicy
    Honor): every taint against every toleration."""
    n = max(1, size // 150)
    marks = [{"key": f"k{i}", "value": "v", "effect": "NoSchedule"} for i in range(n)]
    tolerations = [{"key": f"k{i}", "operator": "Equal", "value": "v"} for i in range(n)]
    nodes = [node(f"n{i}", f"z{i}", spec={"taints": marks}) for i in range(3)]
    spec = {
        "topologySpreadConstraints": [spread(nodeTaintsPolicy="Honor")],
        "tolerations": tolerations,
    }
    pods = [pod(f"p{i}", f"n{i % 3}", spec, {"app": "a"}) for i in range(4)]
    return listed([*nodes, *pods, replica_set(4, spec)])


def empty_items_yaml(size: int) -> str:
    """A YAML `kind: List` of `{}` items: the most objects per byte."""
    return "kind: List\nitems:\n" + "- {}\n" * (size // 5)


def empty_items_json(size: int) -> str:
    """The same in JSON."""
    return '{"kind": "List", "items": [' + ",".join(["{}"] * (size // 3)) + "]}"


def documents_yaml(size: int) -> str:
    """`---`-separated empty documents: the most documents per byte."""
    return "---\n{}\n" * (size // 7)


def budgets(size: int) -> str:
    """Budgets that all select the same pods: every reason names the budgets covering a pod."""
    nodes = [node(f"n{i}", f"z{i % 3}") for i in range(6)]
    n_pods = 2000
    spec = {"topologySpreadConstraints": [spread()]}
    pods = [pod(f"p{i}", f"n{i % 2}", spec, {"app": "a"}) for i in range(n_pods)]
    n = max(1, (size - 700 * n_pods) // 170)
    pdbs = [
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"budget-{i}", "namespace": "bench"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}},
            "status": {"disruptionsAllowed": 1, "observedGeneration": 0},
        }
        for i in range(n)
    ]
    return listed([*nodes, *pods, *pdbs, replica_set(n_pods, spec)])


def selectors(size: int) -> str:
    """Pods whose spread selectors hold long `In` lists, counted over many nodes."""
    nodes = [node(f"n{i}", f"z{i % 10}") for i in range(500)]
    values = [f"v{i:06d}" for i in range(max(1, (size - 400_000) // 5000))]
    sel = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", *values]}]}
    spec = {"topologySpreadConstraints": [{**spread(HOST), "labelSelector": sel}]}
    pods = [pod(f"p{i}", f"n{i % 500}", spec, {"app": "a"}) for i in range(500)]
    return listed([*nodes, *pods, replica_set(500, spec)])


def labels_many(size: int) -> str:
    """One node with as many distinct labels as fit: the most mapping entries per byte, each
    kept twice (the document, then the record's labels)."""
    count = max(1, size // 18)
    labels = "".join(f"  k{i:07d}: v{i % 10}\n" for i in range(count))
    return (
        "kind: Node\nmetadata:\n  name: n0\n  labels:\n"
        + "".join("  " + line + "\n" for line in labels.splitlines())
        + "---\nkind: Pod\nmetadata: {name: p, namespace: bench}\nspec: {nodeName: n0}\n"
    )


def short_scalars(size: int) -> str:
    """One annotation holding a flow list of one-character scalars: the most YAML events
    per byte (the object is left out: the value is no string)."""
    count = max(1, size // 3)
    return (
        "kind: Node\nmetadata:\n  name: n0\n  annotations:\n    a: ["
        + ", ".join(["x"] * count)
        + "]\n---\nkind: Node\nmetadata: {name: n1}\n"
    )


def nested_empties_json(size: int) -> str:
    """One object holding a list of empty lists: the most containers per byte held at once
    (only List items and documents are handed on one by one; an object is read whole)."""
    count = max(1, size // 3)
    return (
        '{"kind": "Node", "metadata": {"name": "n0", "annotations": {"a": ['
        + ",".join(["[]"] * count)
        + "]}}}"
    )


def nested_empties_yaml(size: int) -> str:
    """The same in YAML's flow style."""
    count = max(1, size // 4)
    return (
        "kind: Node\nmetadata:\n  name: n0\n  annotations:\n    a: ["
        + ", ".join(["[]"] * count)
        + "]\n"
    )


def bare_pods(size: int) -> str:
    """Bare pods (each its own workload) that one spread selector counts, two nodes of three
    zones holding them: every workload's plan looks at every other's pods."""
    nodes = [node(f"n{i}", f"z{i % 3}") for i in range(6)]
    pods = []
    for i in range(max(1, size // 620)):
        bare = pod(f"p{i}", f"n{i % 2}", {"topologySpreadConstraints": [spread()]}, {"app": "a"})
        del bare["metadata"]["ownerReferences"]
        pods.append(bare)
    return listed([*nodes, *pods])


CLASSES: dict[str, tuple[Callable[[int], str], str, list[str]]] = {
    "affinity-in": (affinity_in, "json", ["explain", "bench/p0"]),
    "taints": (taints, "json", ["explain", "bench/p0"]),
    "empty-items-yaml": (empty_items_yaml, "yaml", []),
    "empty-items-json": (empty_items_json, "json", []),
    "documents-yaml": (documents_yaml, "yaml", []),
    "budgets": (budgets, "json", []),
    "selectors": (selectors, "json", []),
    "labels-many": (labels_many, "yaml", []),
    "nested-empties-json": (nested_empties_json, "json", []),
    "nested-empties-yaml": (nested_empties_yaml, "yaml", []),
    "short-scalars": (short_scalars, "yaml", []),
    "bare-pods": (bare_pods, "json", []),
}


def measure(argv: list[str]) -> tuple[float, float, float, int, int]:
    """Wall-clock and CPU seconds, peak RSS in MB, exit status and output bytes of one run (in
    a process that has started no other child: ru_maxrss of children is their maximum)."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "respread.cli", *argv],
        capture_output=True,
        check=False,
    )
    elapsed = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = usage.ru_utime + usage.ru_stime
    return elapsed, cpu, usage.ru_maxrss / 1024, done.returncode, len(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", nargs="*", choices=sorted(CLASSES))
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="hostile-"))
    folder.mkdir(parents=True, exist_ok=True)
    size = int(args.mb * 1_000_000)
    print(
        f"{'class':<20} {'command':<14} {'MB':>6} {'wall s':>7} {'CPU s':>7} {'CPU/MB':>7} "
        f"{'peak MB':>7} {'exit':>4} {'out MB':>7}   (medians of --repeats runs)"
    )
    for name in args.only or CLASSES:
        make, suffix, explain = CLASSES[name]
        path = folder / f"{name}.{suffix}"
        path.write_text(make(size))
        mb = path.stat().st_size / 1e6
        commands = [["plan", "-o", "text"], ["plan", "-o", "json"]] + ([explain] if explain else [])
        for command in commands:
            argv = [*command, "--snapshot", str(path), "-q"]
            if command[0] == "plan":
                argv += ["--now", NOW]
            # Each run in a process of its own (ru_maxrss of children is their maximum).
            runs = [_isolated(argv) for _ in range(args.repeats)]
            seconds, cpu, peak = (statistics.median(r[i] for r in runs) for i in range(3))
            code, out = runs[0][3], runs[0][4]
            print(
                f"{name:<20} {' '.join(command[:3]):<14} {mb:>6.2f} {seconds:>7.2f} "
                f"{cpu:>7.2f} {cpu / mb:>7.2f} {peak:>7.0f} {code:>4} {out / 1e6:>7.2f}",
                flush=True,
            )


def _isolated(argv: list[str]) -> tuple[float, float, float, int, int]:
    """measure() in a child of its own, so that ru_maxrss is this run's alone."""
    code = (
        "import json, sys; sys.path.insert(0, 'bench'); from hostile import measure; "
        f"print(json.dumps(measure({argv!r})))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    seconds, cpu, peak, status, out = json.loads(done.stdout)
    return seconds, cpu, peak, status, out


if __name__ == "__main__":
    main()

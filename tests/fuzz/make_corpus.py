"""Writes the hand-made hostile corpus (tests/fuzz/corpus/): one file per class of bad input.

Run it after changing a recipe: ``.venv/bin/python tests/fuzz/make_corpus.py``. The files are
committed; test_hostile_corpus.py runs the real command on each of them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).parent / "corpus"

NODE = (
    "kind: Node\napiVersion: v1\nmetadata:\n  name: n1\n"
    "  labels: {topology.kubernetes.io/zone: a}\n"
)
POD = (
    "kind: Pod\napiVersion: v1\nmetadata:\n  name: p1\n  namespace: default\n"
    "spec:\n  nodeName: n1\n  containers: [{name: c, image: i}]\n"
)
POLICY = "apiVersion: respread.io/v1alpha1\nkind: RebalancePolicy\nmetadata:\n  name: p\n"


def json_node(name: str, zone: str = "a", **spec: object) -> dict[str, object]:
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
        "spec": spec,
    }


def json_pod(name: str, node: str, **spec: object) -> dict[str, object]:
    """A pod of the ReplicaSet a (budgets_over_pods has it)."""
    owner = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "a", "controller": True}
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "default",
            "labels": {"app": "a"},
            "ownerReferences": [owner],
        },
        "spec": {
            "nodeName": node,
            "containers": [{"name": "c", "image": "i"}],
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "a"}},
                    "nodeTaintsPolicy": "Honor",
                }
            ],
            **spec,
        },
    }


def nodes_in_zones(count: int) -> list[dict[str, object]]:
    return [json_node(f"n{i}", f"z{i % 3}") for i in range(count)]


def affinity_pod(values: int) -> dict[str, object]:
    term = {
        "matchExpressions": [
            {
                "key": "topology.kubernetes.io/zone",
                "operator": "In",
                "values": ["z0", *(f"v{i}" for i in range(values))],
            }
        ]
    }
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}
        }
    }
    return json_pod("p", "n0", affinity=affinity)


def tainted(count: int) -> list[dict[str, object]]:
    taints = [{"key": f"k{i}", "value": "v", "effect": "NoSchedule"} for i in range(count)]
    tolerations = [{"key": f"k{i}", "operator": "Equal", "value": "v"} for i in range(count)]
    nodes = [json_node(f"n{i}", f"z{i}", taints=taints) for i in range(3)]
    return [*nodes, *(json_pod(f"p{i}", f"n{i % 3}", tolerations=tolerations) for i in range(4))]


def budgets_over_pods(budgets: int, pods: int) -> list[dict[str, object]]:
    pdbs = [
        {
            "kind": "PodDisruptionBudget",
            "metadata": {"name": f"budget-{i}", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "a"}}},
            "status": {"disruptionsAllowed": 1},
        }
        for i in range(budgets)
    ]
    replica_set = {
        "kind": "ReplicaSet",
        "metadata": {"name": "a", "namespace": "default"},
        "spec": {"replicas": pods, "selector": {"matchLabels": {"app": "a"}}},
    }
    nodes = nodes_in_zones(6)
    return [*nodes, *(json_pod(f"p{i}", f"n{i % 2}") for i in range(pods)), *pdbs, replica_set]


def bomb(levels: int, fan_out: int, tail: str) -> str:
    lines = [f"x0: &x0 [{', '.join(['lol'] * fan_out)}]"]
    for i in range(1, levels):
        lines.append(f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * fan_out)}]")
    return "\n".join(lines) + "\n" + tail.replace("BOMB", f"*x{levels - 1}")


SNAPSHOTS: dict[str, Callable[[], str | bytes]] = {
    # dates
    "date-feb-30.yaml": lambda: NODE + "  creationTimestamp: 2026-02-30T00:00:00Z\n",
    "date-quoted-bad.yaml": lambda: NODE + '  creationTimestamp: "2026-13-40T99:99:99Z"\n',
    "date-not-a-date.json": lambda: json.dumps(
        {"kind": "Pod", "metadata": {"name": "p", "creationTimestamp": "yesterday"}}
    ),
    "date-as-number.yaml": lambda: NODE + "  creationTimestamp: 1700000000\n",
    # integers
    "int-5000-digits.yaml": lambda: POD + "  priority: " + "9" * 5000 + "\n",
    "int-5000-digits.json": lambda: (
        '{"kind":"Pod","metadata":{"name":"p"},"spec":{"priority":' + "9" * 5000 + "}}"
    ),
    "int-over-int64.yaml": lambda: POD + "  priority: 9223372036854775808\n",
    "int-replicas-2e63.json": lambda: json.dumps(
        {"kind": "Deployment", "metadata": {"name": "d"}, "spec": {"replicas": 2**63}}
    ),
    "int-maxskew-over-int32.yaml": lambda: (
        POD + "  topologySpreadConstraints:\n  - {maxSkew: 4294967296, topologyKey: zone,"
        " whenUnsatisfiable: DoNotSchedule}\n"
    ),
    "int-sexagesimal-huge.yaml": lambda: POD + "  priority: " + ":".join(["59"] * 150) + "\n",
    # quantities
    "quantity-exp-million.yaml": lambda: NODE + "status: {allocatable: {cpu: 1e1000000}}\n",
    "quantity-inf.yaml": lambda: NODE + "status: {allocatable: {memory: .inf}}\n",
    "quantity-nan.yaml": lambda: NODE + "status: {allocatable: {pods: .nan}}\n",
    "quantity-1e999.json": lambda: (
        '{"kind":"Node","metadata":{"name":"n"},"status":{"allocatable":{"cpu":1e999}}}'
    ),
    "quantity-1e999-string.yaml": lambda: NODE + 'status: {allocatable: {cpu: "1e999"}}\n',
    "quantity-huge-exponent.yaml": lambda: (
        NODE + 'status: {allocatable: {memory: "1e99999999999999999999"}}\n'
    ),
    "quantity-request-inf.yaml": lambda: POD.replace(
        "[{name: c, image: i}]", "[{name: c, resources: {requests: {cpu: .inf}}}]"
    ),
    # names and keys that are not strings
    "resource-name-int.yaml": lambda: NODE + "status: {allocatable: {1: 2, cpu: 1}}\n",
    "label-key-int.yaml": lambda: NODE.replace("labels: {", "labels: {1: x, "),
    "label-value-mapping.yaml": lambda: NODE.replace("labels: {", "labels: {k: {a: b}, "),
    "name-int.yaml": lambda: "kind: Node\nmetadata: {name: 42}\n",
    "name-list.yaml": lambda: "kind: Node\nmetadata: {name: [a, b]}\n",
    "kind-mapping.yaml": lambda: "kind: {a: b}\nmetadata: {name: n}\n",
    "selector-key-int.yaml": lambda: (
        POD + "  topologySpreadConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable:"
        " DoNotSchedule, labelSelector: {matchLabels: {1: a, b: c}}}\n"
    ),
    # nesting
    "nested-list-1000.yaml": lambda: "[" * 999 + "]" * 999 + "\n",
    "nested-block-30000.yaml": lambda: "- " * 30000 + "x\n",
    "nested-map-300.yaml": lambda: "".join(" " * i + "k:\n" for i in range(300)),
    "nested-json-100000.json": lambda: "[" * 100000 + "]" * 100000,
    "nested-in-label.yaml": lambda: NODE.replace("labels: {", "labels: {k: " + "[" * 200).replace(
        "}\n", "]" * 200 + "}\n", 1
    ),
    "self-referring-list.yaml": lambda: "&a [*a]\n",
    "self-referring-items.yaml": lambda: "&a {kind: List, items: [*a]}\n",
    # alias bombs
    "bomb-list-items.yaml": lambda: bomb(9, 9, "kind: List\nitems: BOMB\n"),
    "bomb-label-value.yaml": lambda: bomb(9, 9, NODE.replace("labels: {", "labels: {x: BOMB, ")),
    "bomb-namespace.yaml": lambda: bomb(9, 9, POD.replace("namespace: default", "namespace: BOMB")),
    "bomb-binary-30.yaml": lambda: bomb(30, 2, "kind: List\nitems: BOMB\n"),
    # encodings
    "non-utf8.yaml": lambda: NODE.encode() + b"  annotations: {a: \xff\xfe}\n",
    "latin1.yaml": lambda: NODE.replace("n1", "n\u00e9").encode("latin-1"),
    "utf16.yaml": lambda: NODE.encode("utf-16"),
    "nul-bytes.yaml": lambda: NODE.encode() + b"\x00\x00",
    "lone-surrogate.json": lambda: '{"kind":"Node","metadata":{"name":"n\\ud800"}}',
    # long values
    "label-value-100k.yaml": lambda: NODE.replace(
        "labels: {", "labels: {big: " + "v" * 100_000 + ", "
    ),
    "name-100k.yaml": lambda: "kind: Node\nmetadata: {name: " + "n" * 100_000 + "}\n",
    "quantity-100k-digits.yaml": lambda: (
        NODE + 'status: {allocatable: {cpu: "' + "9" * 100_000 + '"}}\n'
    ),
    "name-with-newline.yaml": lambda: (
        'kind: Pod\nmetadata: {name: "a\\nb", namespace: "x\\ry"}\n' + "spec: {priority: x}\n"
    ),
    "label-key-with-newline.yaml": lambda: NODE.replace("labels: {", 'labels: {"k\\n": [1], '),
    # duplicates
    "duplicate-pod.yaml": lambda: NODE + "---\n" + POD + "---\n" + POD,
    # tags and odd YAML
    "tag-binary.yaml": lambda: NODE + "  annotations: {a: !!binary aGk=}\n",
    "tag-python.yaml": lambda: "!!python/object/apply:os.system [echo hi]\n",
    "tag-set.yaml": lambda: NODE.replace("labels: {", "labels: !!set {"),
    "merge-key-loop.yaml": lambda: "a: &a {<<: *a}\n",
    "undefined-alias.yaml": lambda: "kind: Node\nmetadata: {name: *nope}\n",
    "truncated.json": lambda: '{"kind": "List", "items": [{"kind": "Node", "metadata": {"na',
    "not-a-mapping.yaml": lambda: "- 1\n- [2]\n- just text\n",
    "list-items-not-list.yaml": lambda: "kind: List\nitems: {a: b}\n",
    "empty.yaml": lambda: "",
    "only-comments.yaml": lambda: "# nothing\n",
    # what kubectl writes unquoted, and YAML's other special words (issue 22): read, not dropped
    "kubectl-unquoted.yaml": lambda: (
        NODE
        + "---\n"
        + POD.replace(
            "[{name: c, image: i}]",
            "[{name: c, image: i, args: [=, 0x_, 0b_, -0b_, 1:20, <<, 0o17, 1e400],"
            " env: [{name: A, value: =}, {name: B, value: 0x_}]}]",
        )
        + "  nodeSelector: {a: =, b: 0x_, c: 1:20, d: 0o17, f: 2001-12-14}\n"
    ),
    "bom-after-separator.yaml": lambda: (
        NODE + "---\n\ufeff" + POD + "---\ufeff\n" + POD.replace("p1", "p2")
    ),
    "one-bad-document.yaml": lambda: NODE + "---\nkind: Pod\nmetadata: {name: [x\n---\n" + POD,
    "tag-bool-maybe.yaml": lambda: NODE + "spec: {unschedulable: !!bool maybe}\n---\n" + POD,
    "tag-int-empty.yaml": lambda: POD + '  priority: !!int ""\n',
    "tag-int-dash.yaml": lambda: POD + '  priority: !!int "-"\n',
    "tag-float-empty.yaml": lambda: NODE + 'status: {allocatable: {cpu: !!float ""}}\n',
    "tag-null-text.yaml": lambda: NODE.replace("labels: {", "labels: {x: !!null text, "),
    "key-null.yaml": lambda: NODE.replace("labels: {", "labels: {~: a, "),
    "merge-not-a-mapping.yaml": lambda: NODE.replace("labels: {", "labels: {<<: 5, "),
    "control-chars-in-names.yaml": lambda: (
        NODE + "---\n" + POD.replace("name: p1", 'name: "p\\e[31m\\a\\r1"')
    ),
    "list-cut-short.json": lambda: json.dumps(
        {"apiVersion": "v1", "items": [json_node(f"n{i}") for i in range(3)], "kind": "List"}
    )[:-60],
    "list-item-nan.json": lambda: (
        '{"kind": "List", "items": [' + json.dumps(json_node("n1")) + ', {"kind": "Node",'
        ' "metadata": {"name": "n2"}, "status": {"allocatable": {"cpu": NaN}}}]}'
    ),
    "list-item-5000-digits.json": lambda: (
        '{"kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "p"}, "spec":'
        ' {"priority": ' + "9" * 5000 + "}}, " + json.dumps(json_node("n1")) + "]}"
    ),
    "json-then-yaml.json": lambda: json.dumps(json_node("n1")) + "\n---\n" + POD,
    "anchors-10001.yaml": lambda: (
        "kind: List\nitems:\n" + "".join(f"- &a{i} {{}}\n" for i in range(10_001))
    ),
    "list-of-50000-empty-items.yaml": lambda: "kind: List\nitems:\n" + "- {}\n" * 50_000,
    # time: a long value list over many nodes, many taints against many tolerations, many
    # budgets covering many pods (bounded by indexes and by names counted beyond a few)
    "affinity-in-20000-values.json": lambda: json.dumps(
        {"kind": "List", "items": [*nodes_in_zones(300), affinity_pod(20_000)]}
    ),
    "taints-1000-by-1000.json": lambda: json.dumps({"kind": "List", "items": tainted(1000)}),
    "budgets-500-over-200-pods.json": lambda: json.dumps(
        {"kind": "List", "items": budgets_over_pods(500, 200)}
    ),
}

POLICIES: dict[str, Callable[[], str | bytes]] = {
    "policy-cron-superscript.yaml": lambda: POLICY + 'spec: {schedule: {cron: "² * * * *"}}\n',
    "policy-cron-step-superscript.yaml": lambda: (
        POLICY + 'spec: {schedule: {cron: "*/² * * * *"}}\n'
    ),
    "policy-cron-arabic-digits.yaml": lambda: POLICY + 'spec: {schedule: {cron: "٣ * * * *"}}\n',
    "policy-cron-huge-number.yaml": lambda: (
        POLICY + 'spec: {schedule: {cron: "' + "9" * 5000 + ' * * * *"}}\n'
    ),
    "policy-interval-overflow.yaml": lambda: POLICY + "spec: {schedule: {interval: 3000000h}}\n",
    "policy-interval-huge.yaml": lambda: (
        POLICY + "spec: {schedule: {interval: " + "9" * 400 + "h}}\n"
    ),
    "policy-maxperrun-2e63.yaml": lambda: (
        POLICY + "spec: {eviction: {maxPerRun: 9223372036854775808}}\n"
    ),
    "policy-maxperrun-inf.yaml": lambda: POLICY + "spec: {eviction: {maxPerRun: .inf}}\n",
    "policy-bomb.yaml": lambda: bomb(
        9, 9, POLICY + "spec: {selector: {namespaces: {include: BOMB}}}\n"
    ),
    "policy-deep.yaml": lambda: POLICY + "spec: " + "[" * 5000 + "]" * 5000 + "\n",
    "policy-non-utf8.yaml": lambda: POLICY.encode() + b"spec: {mode: \xff}\n",
    "policy-unknown-field-long.yaml": lambda: POLICY + "spec: {" + "x" * 100_000 + ": 1}\n",
    "policy-label-int-key.yaml": lambda: (
        POLICY + "spec: {selector: {podSelector: {matchLabels: {1: a}}}}\n"
    ),
    "policy-null-everything.yaml": lambda: (
        POLICY
        + "spec: {mode: null, schedule: null, eviction: {requireFit: null, minPodAge: null}}\n"
    ),
    # issue 22: what the API server refuses (or kubectl cannot send), refused here too
    "policy-cron-long-s.yaml": lambda: POLICY + 'spec: {schedule: {cron: "0 0 * * \u017fun"}}\n',
    "policy-cron-step-19-digits.yaml": lambda: (
        POLICY + 'spec: {schedule: {cron: "*/1234567890123456789 * * * *"}}\n'
    ),
    "policy-cron-zero-padded.yaml": lambda: (
        POLICY + 'spec: {schedule: {cron: "' + "0" * 40 + '5 * * * *"}}\n'
    ),
    "policy-interval-9999.9999999999999ms.yaml": lambda: (
        POLICY + "spec: {schedule: {interval: 9999.9999999999999ms}}\n"
    ),
    "policy-interval-2-63-ns.yaml": lambda: (
        POLICY + "spec: {schedule: {interval: 2562047h47m16.854775808s}}\n"
    ),
    "policy-maxperrun-sexagesimal.yaml": lambda: POLICY + "spec: {eviction: {maxPerRun: 1:20}}\n",
    "policy-bool-maybe.yaml": lambda: POLICY + "spec: {eviction: {requireFit: !!bool maybe}}\n",
    "policy-int-empty.yaml": lambda: POLICY + 'spec: {eviction: {maxPerRun: !!int ""}}\n',
    "policy-bom-after-separator.yaml": lambda: "# joined\n---\n\ufeff" + POLICY,
}


def main() -> None:
    for folder, recipes in (("snapshots", SNAPSHOTS), ("policies", POLICIES)):
        out = HERE / folder
        out.mkdir(parents=True, exist_ok=True)
        for old in out.iterdir():
            old.unlink()
        for name, recipe in recipes.items():
            data = recipe()
            (out / name).write_bytes(data.encode() if isinstance(data, str) else data)
    print(f"wrote {len(SNAPSHOTS)} snapshots and {len(POLICIES)} policies under {HERE}")


if __name__ == "__main__":
    main()

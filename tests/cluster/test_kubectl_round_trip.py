"""What kubectl writes, respread reads with every value intact (the real kubectl, the real API).

Pods are created on kube-apiserver whose strings cover YAML's hard cases: every YAML 1.1 and
go-yaml special word (``=``, ``~``, ``<<``, ``0x_``, ``1:20``, ``yes``, ``no``, ``on``, ``off``,
``y``, ``n``, ``.inf``, ``.nan``, ``0o17``, ``017``, ``0b101``, ``+1``, ``1_000``, ``2001-12-14``,
``null``, ``true``, ...), YAML's indicators, white space at either end, line breaks, control
characters, byte order marks, non-ASCII text, and a seeded random sample of odd strings: as
label values (where label syntax allows), annotations, environment values and arguments. They
are dumped with ``kubectl get -o yaml`` and ``-o json``; respread must read every object, and
every one of those values exactly as created.

kubectl cannot write some strings as YAML at all (tests/oracles/test_yaml_oracle.py found it in
its YAML code): DEL and the C1 control characters make ``kubectl get -o yaml`` fail, and NEL,
LS and PS are folded into spaces before they are written. Those strings are read back from
``-o json`` only.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from respread.inputs.documents import LeftOut, documents_from_text
from respread.inputs.objects import load_texts

pytestmark = pytest.mark.cluster

SPECIALS = [
    *[
        "=",
        "~",
        "<<",
        "0x_",
        "0b_",
        "-0b_",
        "0x_1",
        "1:20",
        "190:20:30",
        "yes",
        "Yes",
        "YES",
        "no",
        "No",
        "on",
        "On",
        "off",
        "Off",
        "y",
        "Y",
        "n",
        "N",
    ],
    *[
        ".inf",
        "-.inf",
        "+.inf",
        ".Inf",
        ".nan",
        ".NaN",
        "0o17",
        "017",
        "0755",
        "08",
        "0b101",
        "-0b101",
        "+1",
        "-1",
        "1_000",
        "1e3",
        "1E3",
    ],
    *[
        "1.5",
        "1.",
        ".5",
        "2001-12-14",
        "2001-12-14T21:59:43.10-05:00",
        "null",
        "Null",
        "NULL",
        "true",
        "True",
        "TRUE",
    ],
    *[
        "false",
        "False",
        "FALSE",
        "0x1F",
        "0X1F",
        "1e400",
        "99999999999999999999",
        "18446744073709551616",
        "Inf",
    ],
    "",
    " ",
    "~ ",
    " leading",
    "trailing ",
    "a  b",
    "\t",
    "tab\there",
    "line\nbreak",
    "\n",
    "trailing newline\n",
    "\n\nleading newlines",
    "crlf\r\nend",
    "cr\rend",
    "- item",
    "-",
    "--",
    "---",
    "--- x",
    "...",
    "? key",
    ": value",
    "a: b",
    "a:b",
    "#comment",
    "a #b",
    "a#b",
    "&anchor",
    "*alias",
    "!tag",
    "!!str",
    "%directive",
    "@at",
    "`tick",
    "|",
    "|-",
    ">",
    "'single'",
    '"double"',
    "it's",
    '{"json": 1}',
    "[1, 2]",
    "{a: b}",
    "\\",
    "back\\slash",
    "\x00nul",
    "\x07bell",
    "\x1b[31mred\x1b[0m",
    "\ufeff",
    "\ufeffbom",
    "zero\u200bwidth",
    "é",
    "ſun",
    "中文",
    "\U0001f600",
    "a" * 300,
    "x " * 60,
]
# kubectl cannot write these as YAML (see the module's docstring): read back from JSON only.
NOT_FOR_YAML = ["\x7fdel", "c1\x80", "nel\x85", "ls\u2028", "ps\u2029"]
_ALPHABET = (
    "abcXYZ019 \t\n:#-?&*!|>'\"%@`,[]{}\\/.=~<+_\r\x00\x01\x1b\ufeffé中\U0001f600\u00a0\u200b"
)
LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
BATCH = 25  # strings per pod


def odd_strings(seed: int, count: int) -> list[str]:
    """A seeded sample of odd strings (the same every run)."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 12)))
        if rng.random() < 0.3:
            text = rng.choice(SPECIALS) + text
        out.append(text)
    return out


def pod_body(name: str, strings: list[str]) -> dict[str, Any]:
    labels = {
        f"l{i}": s for i, s in enumerate(strings) if len(s) <= 63 and LABEL_VALUE.fullmatch(s)
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": labels,
            "annotations": {f"example.com/a{i}": s for i, s in enumerate(strings)},
        },
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "args": list(strings),
                    "env": [{"name": f"E{i}", "value": s} for i, s in enumerate(strings)],
                }
            ],
        },
    }


def values_of(doc: dict[str, Any]) -> dict[str, Any]:
    """The values this test wrote into a pod, as a pod read back holds them."""
    meta, container = doc["metadata"], doc["spec"]["containers"][0]
    return {
        "labels": {k: v for k, v in (meta.get("labels") or {}).items() if k.startswith("l")},
        "annotations": {
            k: v for k, v in (meta.get("annotations") or {}).items() if k.startswith("example")
        },
        "args": container.get("args", []),
        "env": [(e["name"], e.get("value", "")) for e in container.get("env", [])],
    }


def kubectl(kubeconfig: Path, *args: str) -> str:
    done = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), *args],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return done.stdout.decode()


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl is not installed")
def test_respread_reads_what_kubectl_writes_with_every_value_intact(
    core_v1: client.CoreV1Api, namespace: str, kubeconfig: Path, tmp_path: Path
) -> None:
    strings = SPECIALS + odd_strings(seed=22, count=200)
    batches = [strings[i : i + BATCH] for i in range(0, len(strings), BATCH)]
    created = {f"odd-{i}": pod_body(f"odd-{i}", b) for i, b in enumerate(batches)}
    created["not-for-yaml"] = pod_body("not-for-yaml", NOT_FOR_YAML)
    for body in created.values():
        core_v1.create_namespaced_pod(namespace, body)

    for output in ("json", "yaml"):
        names = [n for n in created if output == "json" or n != "not-for-yaml"]
        text = kubectl(kubeconfig, "get", "pods", "-n", namespace, *names, "-o", output)
        path = tmp_path / f"pods.{output}"
        path.write_text(text)
        read = [d for _, d in documents_from_text(path.read_text(), str(path))]
        assert not [d for d in read if isinstance(d, LeftOut)], read
        by_name = {d["metadata"]["name"]: d for d in read}
        assert sorted(by_name) == sorted(names), output
        for name in names:
            assert values_of(by_name[name]) == values_of(created[name]), (output, name)
        # The snapshot parser reads every pod, its labels intact.
        loaded = load_texts([(str(path), text)])
        assert not loaded.problems, loaded.problems[:3]
        labels = {p.name: dict(p.labels) for p in loaded.state.pods}
        for name in names:
            assert labels[name] == created[name]["metadata"]["labels"], (output, name)
    covered = sum(len(b["metadata"]["annotations"]) for b in created.values())
    print(f"{len(created)} pods, {covered} strings, read back intact from -o json and -o yaml")

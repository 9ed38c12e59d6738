"""`kubectl respread` without a cluster: kubectl's flags (anywhere, and their defaults) become
respread's own command line; `status` renders the statuses the operator writes (every status
recorded in tests/golden). Through kubectl against the control plane:
tests/cluster/test_kubectl_plugin.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from respread.kube.client import context_namespace
from respread.kubectl import plugin
from respread.kubectl.status import digest, render, render_policy

NOW = "2030-01-01T00:00:00Z"
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "outputs"


def kubeconfig(path: Path, namespace: str | None = None) -> Path:
    context: dict[str, Any] = {"cluster": "c", "user": "u"}
    if namespace:
        context["namespace"] = namespace
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [
                    {"name": "main", "context": context},
                    {"name": "other", "context": {"cluster": "c", "user": "u", "namespace": "o"}},
                ],
                "current-context": "main",
            }
        )
    )
    return path


def translated(argv: list[str]) -> list[str]:
    args = plugin.build_parser().parse_args(argv)
    return plugin.plan_argv(args) if args.command == "plan" else plugin.explain_argv(args)


@pytest.mark.parametrize(
    ("argv", "want"),
    [
        (
            ["plan", "--kubeconfig", "k", "--context", "c", "-n", "shop", "-o", "json"],
            ["plan", "--kubeconfig", "k", "--context", "c", "-o", "json", "--namespace", "shop"],
        ),
        (  # kubectl's flags before the command, as kubectl users also write them
            ["--kubeconfig", "k", "-n", "shop", "plan", "-q"],
            ["plan", "--kubeconfig", "k", "-o", "text", "--namespace", "shop", "-q"],
        ),
        (
            ["plan", "--kubeconfig", "k", "-A", "--policy", "p.yaml", "--now", NOW],
            ["plan", "--kubeconfig", "k", "-o", "text", "--policy", "p.yaml",
             "--now", NOW],
        ),
        (
            ["explain", "--kubeconfig", "k", "shop/web-0", "-o", "json"],
            ["explain", "--kubeconfig", "k", "-o", "json", "shop/web-0"],
        ),
        (
            ["-n", "shop", "explain", "--kubeconfig", "k", "web-0"],
            ["explain", "--kubeconfig", "k", "-o", "text", "shop/web-0"],
        ),
    ],
)  # fmt: skip
def test_kubectls_flags_become_respreads(argv: list[str], want: list[str]) -> None:
    assert translated(argv) == want


def test_the_kubeconfig_is_kubectls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", "/a/config:/b/config")  # a list, as kubectl reads it
    assert translated(["plan"])[1:3] == ["--kubeconfig", "/a/config:/b/config"]
    monkeypatch.delenv("KUBECONFIG")
    (tmp_path / ".kube").mkdir()
    home = kubeconfig(tmp_path / ".kube" / "config")
    assert translated(["plan"])[1:3] == ["--kubeconfig", str(home)]


def test_a_pods_namespace_is_found_as_kubectl_finds_it(tmp_path: Path) -> None:
    path = str(kubeconfig(tmp_path / "config", namespace="ctx-ns"))
    assert translated(["explain", "--kubeconfig", path, "web-0"])[-1] == "ctx-ns/web-0"
    assert translated(["explain", "--kubeconfig", path, "--context", "other", "web-0"])[-1] == (
        "o/web-0"
    )
    assert translated(["explain", "--kubeconfig", path, "-n", "x", "web-0"])[-1] == "x/web-0"
    bare = str(kubeconfig(tmp_path / "bare"))
    assert translated(["explain", "--kubeconfig", bare, "web-0"])[-1] == "default/web-0"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["plan", "-n", "a", "-A"], "give -n/--namespace or -A/--all-namespaces, not both"),
        (["explain", "-A", "web-0"], "explain judges one pod"),
        (["plan"], "no kubeconfig: give --kubeconfig, set KUBECONFIG or create ~/.kube/config"),
        (["status", "-o", "wide"], "argument -o/--output: invalid choice"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_use_is_one_line_and_exit_2(
    argv: list[str],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    assert plugin.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("kubectl respread: error: ") and err.count("\n") == 1, err
    assert message in err


# --------------------------------------------------------------------------- status

STATUSES = sorted(GOLDEN.glob("*.every-remedy.status.json"))


def policies_from(path: Path) -> list[dict[str, Any]]:
    """The last status a golden scan recorded, as the policy the API server would return."""
    status = json.loads(path.read_text())[-1]
    return [{"metadata": {"name": path.stem}, "spec": {"mode": "Enforce"}, "status": status}]


def test_there_are_golden_statuses() -> None:
    assert len(STATUSES) > 50


@pytest.mark.parametrize("path", STATUSES, ids=lambda p: p.name.split(".")[0])
def test_every_violation_and_step_of_a_status_is_shown(path: Path) -> None:
    [policy] = policies_from(path)
    status = policy["status"]
    text = render([policy], None)
    assert text.startswith(f"Policy {path.stem} (Enforce), last scan {status['lastScanTime']}")
    for v in status.get("violations", []):
        assert f"{v['namespace']} {v['workload']['kind']}/{v['workload']['name']}" in text
    for step in status.get("plan", []):
        assert f"{step['namespace']}/{step['pod']} on {step['node']}" in text
    assert ("Violations (" in text) == bool(status.get("violations"))


def test_a_namespace_narrows_what_is_shown() -> None:
    policy = {
        "metadata": {"name": "p"},
        "status": {
            "lastScanTime": "2030-01-01T00:00:00Z",
            "violationsTotal": 2,
            "violations": [
                {"namespace": "a", "workload": {"kind": "Deployment", "name": "web"}},
                {"namespace": "b", "workload": {"kind": "Deployment", "name": "api"}},
            ],
        },
    }
    text = render_policy(policy, "a")
    assert "a Deployment/web" in text and "api" not in text
    assert "Violations (1 in this namespace)" in text
    assert "Nothing in namespace c." in render_policy(policy, "c")
    assert [v["namespace"] for v in digest(policy, "b")["status"]["violations"]] == ["b"]
    assert (
        render_policy({"metadata": {"name": "new"}}, None)
        == "Policy new (DryRun): not scanned yet\n"
    )
    assert render([], None) == "No RebalancePolicy found.\n"


def test_names_are_printed_escaped() -> None:
    policy = {
        "metadata": {"name": "p"},
        "status": {
            "lastScanTime": "2030-01-01T00:00:00Z",
            "plan": [{"namespace": "a", "pod": "web\x1b[31m", "node": "n\x07"}],
        },
    }
    text = render_policy(policy, None)
    assert "\x1b" not in text and "\x07" not in text
    assert "web\\x1b[31m on n\\x07" in text


def test_evictions_since_the_policy_was_created_and_the_next_one_due() -> None:
    status = {"lastScanTime": "2030-01-01T00:00:00Z", "summary": {"evicted": 0}}
    policy = {"metadata": {"name": "p"}, "status": status}
    assert "Evictions:" not in render_policy(policy, None)
    status |= {"evictedTotal": 4, "nextEvictionTime": "2030-01-01T00:10:00Z"}
    assert (
        "  Evictions: 4 since the policy was created; the next is due at 2030-01-01T00:10:00Z"
        in render_policy(policy, None)
    )


def test_counts_in_a_status_are_printed_escaped_too() -> None:
    # A status is anyone's to write who may patch it: its numbers may be strings.
    policy = {
        "metadata": {"name": "p"},
        "status": {
            "lastScanTime": "2030-01-01T00:00:00Z",
            "summary": {"nodes": "3\x1b[2J"},
            "violationsTotal": "\x07",
            "violations": [{"namespace": "a", "skew": "\x1b]0;t\x07", "maxSkew": 1}],
            "surges": [{"namespace": "a", "replicas": "\r", "targetReplicas": 2}],
        },
    }
    text = render_policy(policy, None)
    assert not any(c in text for c in "\x1b\x07\r"), text
    assert "3\\x1b[2J nodes" in text


UNREADABLE_KUBECONFIGS = {
    "bool-maybe": "current-context: x\ncontexts:\n- {name: x, context: {namespace: !!bool no}}\n"
    "users: [{name: u, user: {token: !!bool maybe}}]\n",
    "not-yaml": "[1, 2",
    "contexts-not-mappings": "current-context: x\ncontexts: [1, 2]\n",
    "context-not-a-mapping": "current-context: x\ncontexts:\n- {name: x, context: 5}\n",
}


@pytest.mark.parametrize("text", UNREADABLE_KUBECONFIGS.values(), ids=UNREADABLE_KUBECONFIGS)
def test_a_kubeconfig_that_cannot_be_read_names_no_namespace_and_fails_in_one_line(
    text: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    assert context_namespace(str(path)) is None
    assert context_namespace(str(path), "x") is None
    assert translated(["explain", "--kubeconfig", str(path), "web-0"])[-1] == "default/web-0"
    assert plugin.main(["explain", "--kubeconfig", str(path), "web-0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("respread: error: cannot load credentials from") and err.count("\n") == 1


def test_status_to_a_full_disk_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    [policy] = policies_from(STATUSES[0])
    monkeypatch.setattr(plugin, "api_client", lambda kubeconfig, context: None)
    monkeypatch.setattr(plugin, "list_policies", lambda api: [policy])
    for output in ("text", "json", "yaml"):
        with open("/dev/full", "w") as full:
            monkeypatch.setattr(sys, "stdout", full)
            argv = ["status", "--kubeconfig", str(kubeconfig(tmp_path / "k")), "-o", output]
            assert plugin.main(argv) == 2
        err = capsys.readouterr().err
        assert err == "kubectl respread: error: cannot write the report: No space left on device\n"


@pytest.mark.parametrize(
    ("entry", "said"),
    [
        ({"verdict": "Fixable", "fixable": True}, "; fixable"),
        ({"verdict": "Waiting", "fixable": False}, "; waiting for holds to lift"),
        (
            {"verdict": "PartlyFixable", "fixable": False, "remedy": "Evict"},
            "; partly fixable by eviction (remedy Evict)",
        ),
        ({"verdict": "NotFixable", "fixable": False}, "; not fixable by eviction"),
        ({"fixable": False}, "; not fixable by eviction"),  # a status written before verdicts
        ({"verdict": ["x"], "fixable": True}, "; fixable"),  # anyone may write a status
    ],
    ids=["fixable", "waiting", "partly", "not", "no-verdict", "bad-verdict"],
)
def test_status_says_each_violations_verdict(entry: dict[str, Any], said: str) -> None:
    violation = {"namespace": "a", "workload": {"kind": "Deployment", "name": "web"}} | entry
    status = {"lastScanTime": "2030-01-01T00:00:00Z", "violations": [violation]}
    text = render_policy({"metadata": {"name": "p"}, "status": status}, None)
    [line] = [line for line in text.splitlines() if "web" in line]
    assert line.endswith(said), line

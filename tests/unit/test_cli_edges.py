"""The command at its edges: whatever the streams, files and kubeconfigs it is given, it ends in
its report or in one line on standard error and exit status 2, never a traceback or a hang;
and text it writes for a terminal holds no control character from the input.

Each case runs `python -m respread.cli` in its own process, with real streams (a full device,
a closed descriptor, a pipe whose reader has gone, a FIFO).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from respread.core.limits import few_named, printable_lines

ROOT = Path(__file__).parents[2]
GOOD = ROOT / "examples" / "zone-scale-down" / "cluster.yaml"
NOW = "2026-11-22T10:00:00Z"
POD = "shop/web-7c9d5f-a01x"


def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[bytes]:
    kwargs.setdefault("stdout", subprocess.PIPE)
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.run(
        [sys.executable, "-m", "respread.cli", *argv], timeout=60, check=False, **kwargs
    )


def one_error_line(done: subprocess.CompletedProcess[bytes]) -> str:
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert err.count("\n") == 1 and err.startswith("respread: error: "), err
    return err


PLAN = ["plan", "--snapshot", str(GOOD), "--now", NOW]


@pytest.mark.parametrize("output", ["text", "json", "yaml"])
def test_a_full_disk_is_one_line(output: str) -> None:
    with open("/dev/full", "wb") as full:
        done = run([*PLAN, "-o", output], stdout=full)
    assert "No space left on device" in one_error_line(done)


def test_explain_to_a_full_disk_is_one_line() -> None:
    with open("/dev/full", "wb") as full:
        done = run(["explain", "--snapshot", str(GOOD), POD], stdout=full)
    assert "No space left on device" in one_error_line(done)


@pytest.mark.parametrize("output", ["text", "json"])
def test_a_closed_standard_output_is_one_line(output: str) -> None:
    done = run([*PLAN, "-o", output], stdout=None, pass_fds=(), preexec_fn=lambda: os.close(1))
    assert "standard output is closed" in one_error_line(done)


def test_a_reader_that_goes_away_ends_quietly() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "respread.cli", *PLAN, "-o", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()  # `| head -c 10`
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 0
    assert err == ""


def test_a_closed_standard_input_is_one_line() -> None:
    done = run(["plan", "--snapshot", "-"], stdin=None, preexec_fn=lambda: os.close(0))
    assert "standard input" in one_error_line(done)


def test_a_closed_standard_error_keeps_the_output_clean() -> None:
    done = run([*PLAN, "-o", "json"], stderr=None, preexec_fn=lambda: os.close(2))
    assert done.returncode == 0
    json.loads(done.stdout)


def test_a_fifo_no_one_writes_to_is_refused_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "snapshot.yaml"
    os.mkfifo(fifo)
    done = run(["plan", "--snapshot", str(fifo)])
    assert "pipe with no writer" in one_error_line(done)
    done = run([*PLAN, "--policy", str(fifo)])
    assert "pipe with no writer" in one_error_line(done)


def test_a_fifo_with_a_writer_is_read(tmp_path: Path) -> None:
    fifo = tmp_path / "snapshot.yaml"
    os.mkfifo(fifo)
    writer = subprocess.Popen(["sh", "-c", f"cat {GOOD} > {fifo}"])
    try:
        done = run(["plan", "--snapshot", str(fifo), "--now", NOW, "-o", "json", "-q"])
    finally:
        writer.wait(timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["summary"]["violations"] == 1


def test_a_pipe_is_read_within_the_size_bound() -> None:
    # /dev/zero is not a regular file: refused; a pipe of zeros is read up to the bound.
    assert "not a regular file" in one_error_line(run(["plan", "--snapshot", "/dev/zero"]))
    done = run(["plan", "--snapshot", "-", "--max-snapshot-size", "1Mi"], input=b"\0" * 3_000_000)
    assert "larger than the snapshot limit" in one_error_line(done)


def kubeconfig(tmp_path: Path, cluster: str, user: str) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters:\n- name: c\n  cluster: {cluster}\n"
        f"users:\n- name: u\n  user: {user}\n"
        "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
    )
    return path


@pytest.mark.parametrize(
    ("cluster", "user", "said"),
    [
        (
            '{server: "https://127.0.0.1:1", certificate-authority-data: "!!!x"}',
            "{token: t}",
            "base64",
        ),
        ("{server: 5}", "{token: t}", "AttributeError"),
        ('{server: "https://127.0.0.1:1", insecure-skip-tls-verify: !!bool maybe}', "{}", "maybe"),
        ("[1, 2", "{}", "ParserError"),
    ],
    ids=["bad-base64", "server-not-a-string", "bool-maybe", "not-yaml"],
)
def test_a_kubeconfig_the_client_cannot_load_is_one_line(
    tmp_path: Path, cluster: str, user: str, said: str
) -> None:
    done = run(["plan", "--kubeconfig", str(kubeconfig(tmp_path, cluster, user))])
    assert said in one_error_line(done)


# Every command that reads a live cluster: the snapshot, the policy by name, one pod.
LIVE = [[], ["--policy-name", "p"], ["--context", "x"]]


@pytest.mark.parametrize("extra", LIVE, ids=["plan", "policy-name", "context"])
def test_a_failing_exec_plugin_is_one_line(tmp_path: Path, extra: list[str]) -> None:
    plugin = "echo first >&2; echo second >&2; exit 3"
    user = (
        "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: sh, "
        f"args: [-c, {json.dumps(plugin)}]}}}}"
    )
    cluster = '{server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}'
    done = run(["plan", "--kubeconfig", str(kubeconfig(tmp_path, cluster, user)), *extra])
    line = one_error_line(done)
    assert "exec: process returned 3" in line and "second" in line, line


def test_kubectl_respread_status_says_an_exec_plugins_failure_in_one_line(tmp_path: Path) -> None:
    user = (
        "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: sh, "
        'args: [-c, "echo denied >&2; exit 3"]}}'
    )
    cluster = '{server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}'
    done = subprocess.run(
        [sys.executable, "-m", "respread.kubectl.plugin", "status"],
        env={**os.environ, "KUBECONFIG": str(kubeconfig(tmp_path, cluster, user))},
        capture_output=True,
        timeout=60,
        check=False,
    )
    err = done.stderr.decode()
    assert done.returncode == 2 and "Traceback" not in err, err
    assert err.count("\n") == 1 and err.startswith("kubectl respread: error: "), err
    assert "exec: process returned 3" in err and "denied" in err, err


BOOL_MAYBE = ('{server: "https://127.0.0.1:1", insecure-skip-tls-verify: !!bool maybe}', "{}")


@pytest.mark.parametrize(
    "argv",
    [["plan", "--policy-name", "p"], ["explain", POD], ["explain", "--context", "x", POD]],
    ids=["policy-name", "explain", "explain-context"],
)
def test_every_live_read_refuses_a_bad_kubeconfig_in_one_line(
    tmp_path: Path, argv: list[str]
) -> None:
    done = run([*argv, "--kubeconfig", str(kubeconfig(tmp_path, *BOOL_MAYBE))])
    assert "maybe" in one_error_line(done)


DESCHEDULER = ROOT / "tests" / "unit" / "inputs" / "descheduler_policies"
CONVERT = ["convert", "--from-descheduler"]


def test_convert_to_a_full_disk_is_one_line() -> None:
    source = sorted(DESCHEDULER.glob("*.yaml"))[0]
    with open("/dev/full", "wb") as full:
        done = run([*CONVERT, str(source)], stdout=full)
    assert "No space left on device" in one_error_line(done)


def test_convert_reads_as_plan_reads(tmp_path: Path) -> None:
    fifo = tmp_path / "policy.yaml"
    os.mkfifo(fifo)
    assert "pipe with no writer" in one_error_line(run([*CONVERT, str(fifo)]))
    assert "not a regular file" in one_error_line(run([*CONVERT, "/dev/zero"]))
    closed = run([*CONVERT, "-"], stdin=None, preexec_fn=lambda: os.close(0))
    assert "standard input" in one_error_line(closed)


ESCAPES = "\x1b[31m\x07\r\x1b]0;title\x07"


def escaped_snapshot(tmp_path: Path) -> Path:
    """The example with control characters in a pod's name and in a zone."""
    text = GOOD.read_text()
    payload = json.dumps(ESCAPES)[1:-1]  # as YAML escapes, inside double quotes
    text = text.replace("web-7c9d5f-a01x", f'"web-{payload}-a01x"').replace(
        "eu-west-1a", f'"eu-{payload}-1a"'
    )
    path = tmp_path / "escaped.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("command", ["plan", "explain"])
def test_text_output_escapes_control_characters(tmp_path: Path, command: str) -> None:
    snapshot = escaped_snapshot(tmp_path)
    if command == "plan":
        argv = ["plan", "--snapshot", str(snapshot), "--now", NOW]
    else:
        argv = ["explain", "--snapshot", str(snapshot), f"shop/web-{ESCAPES}-a01x"]
    done = run(argv)
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr
    assert "\\x1b[31m" in out  # the name is there, escaped
    for char in "\x1b\x07\r":
        assert char not in out and char not in done.stderr.decode()


def test_printable_lines_keeps_line_breaks_only() -> None:
    assert printable_lines("a\x1bb\nc\td\r\n") == "a\\x1bb\nc\\td\\r\n"
    assert printable_lines("plain\ntext\n") == "plain\ntext\n"


def test_long_lists_of_names_are_counted() -> None:
    assert few_named([]) == ""
    assert few_named(["a", "b", "c"]) == "a, b, c"
    assert few_named([f"b{i}" for i in range(5000)]) == "b0, b1, b2 and 4,997 more"

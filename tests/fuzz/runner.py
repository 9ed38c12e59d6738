"""Running the real `respread` command on hostile input, under a memory limit and a timeout.

``run_subprocess`` starts ``python -m respread.cli`` (what the installed script runs);
``run_forked`` forks this process, which has respread imported already, and calls the same
``main`` in the child, so that hundreds of generated cases fit in the time budget. Both set
RLIMIT_AS in the child, redirect its standard streams to files and kill it at the deadline.
``check`` holds the outcome to the README's promise.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

MEMORY_LIMIT = 2**30  # 1 GiB of address space
TIMEOUT = 60.0  # seconds; a case normally takes well under one
MAX_LINE = 1000  # characters: values in messages are cut at 80


@dataclass(frozen=True)
class Outcome:
    argv: tuple[str, ...]
    returncode: int  # negative: killed by that signal
    stdout: str
    stderr: str
    timed_out: bool = False


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_subprocess(argv: list[str], stdin: bytes = b"", cwd: Path | None = None) -> Outcome:
    try:
        done = subprocess.run(
            [sys.executable, "-m", "respread.cli", *argv],
            input=stdin,
            capture_output=True,
            timeout=TIMEOUT,
            preexec_fn=_limit_memory,
            cwd=cwd,
            check=False,
        )
    except subprocess.TimeoutExpired as err:
        return Outcome(tuple(argv), -9, _text(err.stdout), _text(err.stderr), timed_out=True)
    return Outcome(tuple(argv), done.returncode, _text(done.stdout), _text(done.stderr))


def _text(data: bytes | str | None) -> str:
    if data is None:
        return ""
    return data if isinstance(data, str) else data.decode("utf-8", "backslashreplace")


def run_forked(argv: list[str], stdin: bytes = b"") -> Outcome:
    if threading.active_count() > 1:
        # Forking a process with other threads can leave the child on a lock one of them
        # held: start a fresh interpreter instead (slower, same verdict).
        return run_subprocess(argv, stdin)
    from respread.cli import main

    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp, name) for name in ("in", "out", "err")]
        paths[0].write_bytes(stdin)
        pid = os.fork()
        if pid == 0:  # the child: never returns into pytest
            code = 1
            try:
                _limit_memory()
                for fd, path, mode in zip((0, 1, 2), paths, ("rb", "wb", "wb"), strict=True):
                    with path.open(mode) as f:
                        os.dup2(f.fileno(), fd)
                sys.stdin = open(0, encoding="utf-8", closefd=False)  # noqa: SIM115
                sys.stdout = open(1, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                sys.stderr = open(2, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
                code = main(argv)
            except BaseException:
                traceback.print_exc()
            finally:
                for stream in (sys.stdout, sys.stderr):
                    with contextlib.suppress(BaseException):
                        stream.flush()
                os._exit(code)
        deadline = time.monotonic() + TIMEOUT
        timed_out = False
        while True:
            waited, status = os.waitpid(pid, os.WNOHANG)
            if waited:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                _, status = os.waitpid(pid, 0)
                timed_out = True
                break
            time.sleep(0.005)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        return Outcome(
            tuple(argv),
            code,
            _text(paths[1].read_bytes()),
            _text(paths[2].read_bytes()),
            timed_out,
        )


_WARNING = re.compile(r"respread: warning: (?P<source>[^:]+(?: \(named again\))?): (?P<rest>.+)")
_OBJECT = re.compile(r"(?P<kind>[^ :]+)(?: (?P<name>.+?))?: field (?P<field>\S+): .+")


def check(outcome: Outcome, sources: tuple[str, ...] = ()) -> None:
    """Exit 0 with valid JSON on stdout, or exit 2 with one error line; never a traceback,
    a signal, a timeout or a runaway line. Every warning names its source (a file, or
    ``<stdin>``), and a warning about an object names its kind and name, and its field."""
    where = f"respread {' '.join(outcome.argv)}"
    assert not outcome.timed_out, f"{where}: no answer within {TIMEOUT}s"
    assert outcome.returncode >= 0, f"{where}: killed by signal {-outcome.returncode}"
    assert "Traceback" not in outcome.stderr, f"{where}:\n{outcome.stderr[-3000:]}"
    assert outcome.returncode in (0, 2), f"{where}: exit {outcome.returncode}\n{outcome.stderr}"
    lines = outcome.stderr.splitlines()
    for line in lines:
        assert len(line) <= MAX_LINE, f"{where}: a line of {len(line)} characters"
    errors = [line for line in lines if line.startswith("respread: error: ")]
    if outcome.returncode == 0:
        assert not errors, f"{where}: {errors}"
        json.loads(outcome.stdout)
    else:
        assert len(errors) == 1, f"{where}: {outcome.stderr[-3000:]}"
        assert lines[-1] == errors[0], f"{where}: the error is not the last line"
        assert outcome.stdout == "", f"{where}: output on failure"
    for line in lines:
        if line.startswith("respread: error: ") or line.startswith("respread: read "):
            continue
        if "more objects left out" in line:
            continue
        if line.startswith(
            ("respread: warning: incomplete input: ", "respread: warning: selection: ")
        ):
            continue  # about the input as a whole (pods on nodes it lacks), not one object
        match = _WARNING.fullmatch(line)
        assert match, f"{where}: unexpected line {line!r}"
        if sources:
            assert match["source"].removesuffix(" (named again)") in sources, line
        rest = match["rest"]
        if rest.startswith(("document:", "cannot be read")):
            continue  # about the text itself, not an object
        obj = _OBJECT.fullmatch(rest.removesuffix(" (left out)"))
        seen_twice = " seen twice, in " in rest
        assert obj or seen_twice, f"{where}: warning without kind, name and field: {line!r}"

"""Outside programs the tests run: finding them (or skipping, saying what to install) and
stopping them."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest


def installed(tool: str) -> str:
    """The path of ``tool``, one of Debian's ``prometheus`` package; the test is skipped,
    saying so, where it is not installed."""
    path = shutil.which(tool)
    if path is None:
        pytest.skip(
            f"{tool} is not installed (Debian's `prometheus` package; hack/test installs it)"
        )
    return path


def stop(proc: subprocess.Popen[bytes], grace: float = 20) -> None:
    """SIGTERM, then SIGKILL if it has not ended within ``grace`` seconds."""
    if proc.poll() is None:
        proc.terminate()
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def respread_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -m respread.cli ARGS`` as a user runs it, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "respread.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )

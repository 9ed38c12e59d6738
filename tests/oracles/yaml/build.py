"""Build (once) and locate the YAML oracle: main.go beside this file, with the sigs.k8s.io/yaml
and k8s.io/apimachinery that Kubernetes v1.34 uses (pinned by go.mod and go.sum here).

The binary is cached outside the repository, keyed by a hash of main.go, go.mod and go.sum:

    ${RESPREAD_ORACLE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/respread/oracles}/
        yaml-<sha256[:16]>/yaml-oracle

The modules come from the Go module cache or the Go module proxy (a few MB; no Kubernetes
build). ``python -m tests.oracles.yaml.build`` builds if needed and prints the binary's path.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..scheduler.build import OracleBuildError, cache_root, find_go, run_main

HERE = Path(__file__).resolve().parent
SOURCES = ("main.go", "go.mod", "go.sum")
BINARY_NAME = "yaml-oracle"


def binary_path() -> Path:
    digest = hashlib.sha256(b"".join((HERE / name).read_bytes() for name in SOURCES))
    return cache_root() / f"yaml-{digest.hexdigest()[:16]}" / BINARY_NAME


def ensure_built() -> Path:
    """The oracle binary for the sources here, built first on a cache miss."""
    target = binary_path()
    if target.is_file() and os.access(target, os.X_OK):
        return target
    go = find_go()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        for name in SOURCES:
            shutil.copy2(HERE / name, Path(tmp) / name)
        env = {**os.environ, "GOTOOLCHAIN": "local", "CGO_ENABLED": "0", "GOWORK": "off"}
        done = subprocess.run(
            [go, "build", "-mod=readonly", "-trimpath", "-o", BINARY_NAME, "."],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise OracleBuildError(f"go build of the YAML oracle failed:\n{done.stderr[-3000:]}")
        os.replace(Path(tmp) / BINARY_NAME, target)
    return target


def main() -> None:
    run_main("yaml-oracle", ensure_built)


if __name__ == "__main__":
    main()

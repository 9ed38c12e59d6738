"""Build (once) and locate the descheduler oracle: main.go beside this file, compiled against
the real RemovePodsViolatingTopologySpreadConstraint plugin of a descheduler release fetched
from the Go module proxy.

The build happens in a throwaway wrapper module of its own: ``go mod init``, the ``go``
directive, replaces, excludes and godebug lines copied from the release's own go.mod (derived,
nothing hard-coded), then ``go get`` of the plugin packages at the release and ``go build``. The
binary is cached outside the repository, keyed by the release and a hash of main.go:

    ${RESPREAD_ORACLE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/respread/oracles}/
        descheduler-<version>-<sha256(main.go)[:16]>/descheduler-oracle

The cache root, its lock, the Go lookup and the step runner (stderr in a log, a heartbeat every
minute) are the scheduler oracle's (tests/oracles/scheduler/build.py). Progress goes to stderr.

    python -m tests.oracles.descheduler.build      # build if needed; print the binary's path

Knobs: RESPREAD_DESCHEDULER_VERSION (default v0.36.0: the module proxy serves no v0.34.x or
v0.35.x of sigs.k8s.io/descheduler, see docs/dev/oracles.md), GO, RESPREAD_BUILD_PARALLELISM
(go build -p, default 2), RESPREAD_ORACLE_CACHE (cache root).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import time
from pathlib import Path
from typing import Any

from ..scheduler.build import (
    Log,
    OracleBuildError,
    _Builder,
    _stderr_log,
    build_cached,
    cache_root,
    find_go,
    run_main,
)

HERE = Path(__file__).resolve().parent
MAIN_GO = HERE / "main.go"
BINARY_NAME = "descheduler-oracle"
MODULE = "sigs.k8s.io/descheduler"
DEFAULT_VERSION = "v0.36.0"

# The packages main.go imports from the descheduler; `go get` pins them at the release.
PACKAGES = (
    "sigs.k8s.io/descheduler/pkg/framework/plugins/removepodsviolatingtopologyspreadconstraint",
    "sigs.k8s.io/descheduler/pkg/framework/plugins/defaultevictor",
    "sigs.k8s.io/descheduler/pkg/framework/testing",
    "sigs.k8s.io/descheduler/pkg/framework/types",
    "sigs.k8s.io/descheduler/pkg/descheduler/node",
)

EMPTY_LIST = '{"manifest": {"apiVersion": "v1", "kind": "List", "items": []}, "runs": 1}\n'


def descheduler_version() -> str:
    version = os.environ.get("RESPREAD_DESCHEDULER_VERSION", DEFAULT_VERSION)
    if not re.fullmatch(r"v0\.\d+\.\d+(-[0-9A-Za-z.-]+)?", version):
        raise OracleBuildError(
            f"RESPREAD_DESCHEDULER_VERSION={version} is not of the form v0.<minor>.<patch>"
        )
    return version


def binary_path(version: str | None = None) -> Path:
    """Where the oracle for this main.go and descheduler version is (or will be) cached."""
    version = version or descheduler_version()
    digest = hashlib.sha256(MAIN_GO.read_bytes()).hexdigest()[:16]
    return cache_root() / f"descheduler-{version}-{digest}" / BINARY_NAME


def derive_edits(gomod: dict[str, Any]) -> list[str]:
    """`go mod edit` flags reproducing the release's go.mod in a wrapper that requires it.

    Replaces (module to module), excludes and godebug lines apply only in the main module, so
    the wrapper must repeat them to resolve like the release's own build; the ``go`` directive
    is raised to the release's. A replace to a local directory cannot be reproduced: an error.
    """
    flags: list[str] = []
    go = (gomod.get("Go") or "").strip()
    if go:
        flags.append(f"-go={go}")
    for rep in gomod.get("Replace") or []:
        old, new = rep["Old"], rep["New"]
        if not new.get("Version"):
            raise OracleBuildError(
                f"the release's go.mod replaces {old['Path']} by the local path {new['Path']}"
            )
        left = f"{old['Path']}@{old['Version']}" if old.get("Version") else old["Path"]
        flags.append(f"-replace={left}={new['Path']}@{new['Version']}")
    for exc in gomod.get("Exclude") or []:
        flags.append(f"-exclude={exc['Path']}@{exc['Version']}")
    for dbg in gomod.get("GoDebug") or []:
        flags.append(f"-godebug={dbg['Key']}={dbg['Value']}")
    return flags


class _DeschedulerBuilder(_Builder):
    def say(self, message: str) -> None:
        t = int(time.monotonic() - self.start)
        self.log(f"[descheduler-oracle {t // 60:02d}:{t % 60:02d}] {message}")

    def build(self, work: Path, out: Path) -> None:
        go, version, log = self.go, self.version, work / "build.log"
        mod = work / "module"
        mod.mkdir()
        self.run("go mod init", [go, "mod", "init", "local/descheduler-oracle"], mod, log)
        hint = "set RESPREAD_DESCHEDULER_VERSION to a version the module proxy serves"
        gomod = json.loads(self.release_gomod(mod, log, MODULE, hint))
        edits = derive_edits(gomod)
        self.say(f"derived {len(edits)} go.mod edits from the release's go.mod: {edits}")
        if edits:
            self.run("apply go.mod edits", [go, "mod", "edit", *edits], mod, log)
        self.resolve_and_build(
            mod,
            log,
            out,
            main_go=MAIN_GO,
            module=MODULE,
            packages=PACKAGES,
            what="client-go and the descheduler",
            ldflags=f"-s -w -X main.version={MODULE}@{version}",
        )


def _self_check(binary: Path) -> str | None:
    """An empty cluster must answer with one run and no eviction."""
    probe = subprocess.run(
        [str(binary), "-serve"],
        input=EMPTY_LIST,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        runs = json.loads(probe.stdout)["runs"]
    except (ValueError, KeyError, TypeError):
        runs = None
    if probe.returncode != 0 or runs is None or runs[0]["evictions"] != []:
        return probe.stdout + probe.stderr
    return None


def ensure_built(log: Log = _stderr_log) -> Path:
    """Return the oracle binary for the current main.go, building it first on a cache miss."""
    version = descheduler_version()
    target = binary_path(version)
    if target.is_file() and os.access(target, os.X_OK):
        return target
    try:
        go = find_go()
    except OracleBuildError as err:
        raise OracleBuildError(str(err).replace("scheduler oracle", "descheduler oracle")) from None
    builder = _DeschedulerBuilder(go, version, log)
    return build_cached("descheduler", target, builder, _self_check)


def main() -> None:
    run_main("descheduler-oracle", ensure_built)


if __name__ == "__main__":
    main()

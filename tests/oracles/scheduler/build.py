"""Build (once) and locate the scheduler oracle: main.go beside this file, compiled against
the real kube-scheduler plugins of a Kubernetes release fetched from the Go module proxy.

The build happens in a throwaway wrapper module generated the way hack/k8s-binaries generates
its own: ``go mod init``, require ``k8s.io/kubernetes@<version>``, and apply the ``go mod edit``
flags that hack/k8s/derive_edits.py derives from that release's own go.mod (its staging
replaces, excludes and godebug lines; nothing is hard-coded here). The binary is cached outside
the repository, keyed by the Kubernetes version and a hash of main.go:

    ${RESPREAD_ORACLE_CACHE:-${XDG_CACHE_HOME:-~/.cache}/respread/oracles}/
        scheduler-<k8s version>-<sha256(main.go)[:16]>/scheduler-oracle

so it is rebuilt only when main.go (or the version) changes. Progress goes to stderr.

    python -m tests.oracles.scheduler.build      # build if needed; print the binary's path

Knobs: RESPREAD_K8S_VERSION (default v1.34.4, as hack/k8s-binaries), GO (the go binary),
RESPREAD_BUILD_PARALLELISM (go build -p, default 2), RESPREAD_ORACLE_CACHE (cache root).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
MAIN_GO = HERE / "main.go"
DERIVE_EDITS = REPO / "hack" / "k8s" / "derive_edits.py"
BINARY_NAME = "scheduler-oracle"
DEFAULT_K8S_VERSION = "v1.34.4"

# The packages main.go imports from k8s.io/kubernetes; `go get` pins them at the release.
K8S_PACKAGES = (
    "k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread",
    "k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity",
    "k8s.io/kubernetes/pkg/scheduler/framework/plugins/tainttoleration",
    "k8s.io/kubernetes/pkg/scheduler/framework/runtime",
    "k8s.io/kubernetes/pkg/scheduler/backend/cache",
    "k8s.io/kubernetes/pkg/features",
)

Log = Callable[[str], None]


class OracleBuildError(RuntimeError):
    """The oracle could not be built; the message says why and what to do."""


def k8s_version() -> str:
    return os.environ.get("RESPREAD_K8S_VERSION", DEFAULT_K8S_VERSION)


def cache_root() -> Path:
    explicit = os.environ.get("RESPREAD_ORACLE_CACHE")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "respread" / "oracles"


def binary_path(version: str | None = None) -> Path:
    """Where the oracle for this main.go and Kubernetes version is (or will be) cached."""
    version = version or k8s_version()
    digest = hashlib.sha256(MAIN_GO.read_bytes()).hexdigest()[:16]
    return cache_root() / f"scheduler-{version}-{digest}" / BINARY_NAME


def staging_version(version: str) -> str:
    """v1.34.4 -> v0.34.4: the version of the release's staging modules (k8s.io/api, ...)."""
    m = re.fullmatch(r"v1\.(\d+)\.(\d+)(-.*)?", version)
    if not m:
        raise OracleBuildError(
            f"RESPREAD_K8S_VERSION={version} is not of the form v1.<minor>.<patch>"
        )
    return f"v0.{m[1]}.{m[2]}{m[3] or ''}"


def find_go() -> str:
    given = os.environ.get("GO")
    candidates = [given] if given else [shutil.which("go"), "/usr/local/go/bin/go"]
    for cand in candidates:
        if cand and (path := shutil.which(cand)) and os.access(path, os.X_OK):
            return path
    if given:
        raise OracleBuildError(
            f"GO={given} is not an executable go binary; install Go >= 1.24 or fix GO"
        )
    raise OracleBuildError(
        "Go is not installed (no 'go' on PATH, no /usr/local/go/bin/go): the scheduler oracle "
        "is compiled from kube-scheduler's own plugin code. Install Go >= 1.24 or set "
        "GO=/path/to/go; to run the other tests without it, deselect them with -m 'not oracle'"
    )


def _stderr_log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class _Builder:
    def __init__(self, go: str, version: str, log: Log) -> None:
        self.go = go
        self.version = version
        self.log = log
        self.start = time.monotonic()
        self.env = {
            **os.environ,
            "GOTOOLCHAIN": "local",
            "CGO_ENABLED": "0",
            "GOWORK": "off",
            "GO111MODULE": "on",
        }

    def say(self, message: str) -> None:
        t = int(time.monotonic() - self.start)
        self.log(f"[scheduler-oracle {t // 60:02d}:{t % 60:02d}] {message}")

    def run(self, name: str, cmd: list[str], cwd: Path, logfile: Path, stdin: str = "") -> str:
        """Run one build step, its stderr in logfile, a heartbeat every minute; return stdout."""
        self.say(f"{name} ...")
        t0 = time.monotonic()
        done = threading.Event()

        def heartbeat() -> None:
            while not done.wait(60):
                self.say(f"  ... still at: {name}")

        beat = threading.Thread(target=heartbeat, daemon=True)
        beat.start()
        try:
            with logfile.open("a") as err:
                err.write(f"$ (cd {cwd} && {' '.join(cmd)})\n")
                err.flush()
                proc = subprocess.run(
                    cmd,
                    cwd=cwd,
                    env=self.env,
                    input=stdin,
                    stdout=subprocess.PIPE,
                    stderr=err,
                    text=True,
                    check=False,
                )
        finally:
            done.set()
            beat.join()
        if proc.returncode != 0:
            tail = logfile.read_text().splitlines()[-25:]
            raise OracleBuildError(
                f"step '{name}' failed (exit {proc.returncode}); full log: {logfile}\n"
                + "\n".join(f"    | {line}" for line in tail)
            )
        if time.monotonic() - t0 >= 1:
            self.say(f"{name} done in {time.monotonic() - t0:.0f}s")
        return proc.stdout

    def build(self, work: Path, out: Path) -> None:
        go, version, log = self.go, self.version, work / "build.log"
        mod = work / "module"
        mod.mkdir()
        self.run("go mod init", [go, "mod", "init", "local/scheduler-oracle"], mod, log)
        self.run("go mod edit -go", [go, "mod", "edit", "-go=1.24.0"], mod, log)
        hint = "set RESPREAD_K8S_VERSION to a release the module proxy serves"
        gomod_json = self.release_gomod(mod, log, "k8s.io/kubernetes", hint)
        # The wrapper's go.mod edits come from the release's own go.mod, via the same deriver
        # hack/k8s-binaries uses.
        edits = self.run(
            "derive go.mod edits",
            [sys.executable, str(DERIVE_EDITS), staging_version(version)],
            mod,
            log,
            stdin=gomod_json,
        ).split()
        if not edits:
            raise OracleBuildError(f"no go.mod edits derived from k8s.io/kubernetes@{version}")
        self.say(f"derived {len(edits)} go.mod edits from the release's go.mod")
        self.run("apply go.mod edits", [go, "mod", "edit", *edits], mod, log)
        self.resolve_and_build(
            mod,
            log,
            out,
            main_go=MAIN_GO,
            module="k8s.io/kubernetes",
            packages=K8S_PACKAGES,
            what="much of kube-scheduler",
            ldflags="-s -w",
        )

    def release_gomod(self, mod: Path, log: Path, module: str, hint: str) -> str:
        """Download `module` at the version; its go.mod as `go mod edit -json` prints it."""
        go, version = self.go, self.version
        download = [go, "mod", "download", "-json", f"{module}@{version}"]
        info = json.loads(self.run(f"download {module}@{version}", download, mod, log))
        if info.get("Error") or not info.get("GoMod"):
            raise OracleBuildError(
                f"cannot download {module}@{version}: {info.get('Error') or info} ({hint})"
            )
        read = [go, "mod", "edit", "-json", info["GoMod"]]
        return self.run("read the release's go.mod", read, mod, log)

    def resolve_and_build(
        self,
        mod: Path,
        log: Path,
        out: Path,
        *,
        main_go: Path,
        module: str,
        packages: tuple[str, ...],
        what: str,
        ldflags: str,
    ) -> None:
        """The module's go.mod is ready: add main.go, resolve the packages at the version and
        build the binary `out`."""
        go, version = self.go, self.version
        shutil.copy2(main_go, mod / "main.go")
        resolve = [go, "get", *(f"{p}@{version}" for p in packages)]
        self.run(f"resolve {module}@{version}", resolve, mod, log)
        parallelism = os.environ.get("RESPREAD_BUILD_PARALLELISM", "2")
        build = [go, "build", "-mod=mod", "-p", parallelism, "-trimpath", "-ldflags", ldflags]
        step = f"go build (a cold build compiles {what}: minutes)"
        self.run(step, [*build, "-o", str(out), "."], mod, log)


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    with (root / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build_cached(
    name: str,
    target: Path,
    builder: _Builder,
    self_check: Callable[[Path], str | None],
) -> Path:
    """Build ``target`` under the cache lock unless another process already has, check the
    staged binary (``self_check`` says what is wrong with it, or None), and publish it
    atomically. A failed build's work directory keeps only its build.log, for the post-mortem."""
    root = cache_root()
    with _locked(root):
        if target.is_file():  # another process built it while we waited
            return target
        gov = subprocess.run([builder.go, "version"], capture_output=True, text=True, check=False)
        if gov.returncode != 0:
            raise OracleBuildError(f"'{builder.go} version' failed; is it a working Go toolchain?")
        builder.say(f"cache miss: building {target} with {gov.stdout.strip()}")
        work = Path(tempfile.mkdtemp(prefix=f".build-{name}-", dir=root))
        ok = False
        try:
            staged = work / target.name
            builder.build(work, staged)
            problem = self_check(staged)
            if problem is not None:
                raise OracleBuildError(f"the built oracle fails its self-check: {problem}")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staged, target)  # publish atomically
            ok = True
            builder.say(f"built in {time.monotonic() - builder.start:.0f}s: {target}")
        finally:
            if ok:
                shutil.rmtree(work, ignore_errors=True)
            else:
                for child in work.iterdir():
                    if child.name != "build.log":
                        if child.is_dir():
                            shutil.rmtree(child, ignore_errors=True)
                        else:
                            child.unlink(missing_ok=True)
    return target


def _self_check(binary: Path) -> str | None:
    """An empty cluster must answer with an empty node map."""
    probe = subprocess.run(
        [str(binary)],
        input='{"nodes": [], "pods": [], "pod": {}}',
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0 or json.loads(probe.stdout).get("nodes") != {}:
        return probe.stdout + probe.stderr
    return None


def ensure_built(log: Log = _stderr_log) -> Path:
    """Return the oracle binary for the current main.go, building it first on a cache miss."""
    version = k8s_version()
    target = binary_path(version)
    if target.is_file() and os.access(target, os.X_OK):
        return target
    go = find_go()
    staging_version(version)  # validate before any work
    return build_cached("scheduler", target, _Builder(go, version, log), _self_check)


def run_main(name: str, ensure: Callable[[], Path]) -> None:
    """`python -m ...build`: build if needed and print the binary's path, or one error line."""
    try:
        print(ensure())
    except OracleBuildError as err:
        raise SystemExit(f"{name}: error: {err}") from None


def main() -> None:
    run_main("scheduler-oracle", ensure_built)


if __name__ == "__main__":
    main()

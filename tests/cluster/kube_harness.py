"""A real, local Kubernetes control plane for the cluster tests (envtest-style, no containers).

`ControlPlane` starts etcd and kube-apiserver on free loopback ports with a generated PKI, RBAC
authorization and an audit log; `ControlPlane.start_e2e()` adds kube-controller-manager,
kube-scheduler and the kwok controller, so Deployments create pods, the real scheduler places
them on fake nodes, kwok turns them Running and Ready, and the disruption controller maintains
PodDisruptionBudget status. The binaries come from `hack/k8s-binaries` (see `resolve_assets`).

Every component runs in its own process group with its output in `<tmp>/logs/<name>.log`; `stop()`
sends SIGTERM, waits, then SIGKILLs the group. On Linux, components started from the main thread
also get SIGKILL should the test process die without running its teardown (SIGKILL, SIGTERM).
"""

from __future__ import annotations

import base64
import collections
import contextlib
import ctypes
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "hack" / "k8s-binaries"
BINARIES = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd", "kwok")
KWOK_STAGES_FILE = "kwok-stages.yaml"
FAKE_NODE_ANNOTATION = ("kwok.x-k8s.io/node", "fake")

APISERVER_READY_TIMEOUT = 120.0
COMPONENT_READY_TIMEOUT = 120.0
STOP_GRACE = 10.0
LOG_TAIL_LINES = 60
SCHEDULER_CATCH_UP_TIMEOUT = 120.0  # client-go's reflector backoff: at most 30 s, jittered


class ClusterError(RuntimeError):
    """The control plane could not be provided or started; the message says why and what to do."""


# --------------------------------------------------------------------------- binaries


def assets_complete(directory: Path) -> bool:
    return (
        all(os.access(directory / b, os.X_OK) for b in BINARIES)
        and (directory / KWOK_STAGES_FILE).is_file()
    )


def resolve_assets(*, build: bool = True, progress: TextIO | None = None) -> Path:
    """The directory holding the control-plane binaries, building them on a cache miss.

    Runs `hack/k8s-binaries` (which honours RESPREAD_K8S_ASSETS and KUBEBUILDER_ASSETS and
    caches outside the repo), relaying its progress lines to `progress` (default: the process's
    real stderr). With `build=False` (env RESPREAD_K8S_BUILD=0) a cache miss is an error instead
    of a build. Failures raise `ClusterError` quoting the end of the script's output.
    """
    env = dict(os.environ)
    if not build:
        for var in ("RESPREAD_K8S_ASSETS", "KUBEBUILDER_ASSETS"):
            if env.get(var) and assets_complete(Path(env[var])):
                return Path(env[var])
        env["RESPREAD_K8S_NO_BUILD"] = "1"
    if not os.access(BUILD_SCRIPT, os.X_OK):
        raise ClusterError(f"{BUILD_SCRIPT} is missing or not executable")
    out = progress if progress is not None else sys.__stderr__
    started = time.monotonic()
    proc = subprocess.Popen(
        [str(BUILD_SCRIPT)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None and proc.stderr is not None
    tail: collections.deque[str] = collections.deque(maxlen=30)
    for line in proc.stderr:  # the script prints only its final answer on stdout
        tail.append(line.rstrip("\n"))
        if out is not None:
            out.write(line)
            out.flush()
    lines = proc.stdout.read().strip().splitlines()
    if proc.wait() != 0 or not lines:
        raise ClusterError(
            f"hack/k8s-binaries failed (exit {proc.returncode}) after "
            f"{time.monotonic() - started:.0f}s; run it by hand to retry, or point "
            f"RESPREAD_K8S_ASSETS at a directory holding {', '.join(BINARIES)} and "
            f"{KWOK_STAGES_FILE}. Its output ended with:\n" + "\n".join(tail)
        )
    assets = Path(lines[-1])
    if not assets_complete(assets):
        raise ClusterError(f"hack/k8s-binaries printed {assets}, which is incomplete")
    return assets


# --------------------------------------------------------------------------- PKI (openssl CLI)


def _openssl(*args: str, cwd: Path) -> None:
    openssl = shutil.which("openssl")
    if openssl is None:
        raise ClusterError("the openssl CLI is needed to generate the test PKI")
    proc = subprocess.run([openssl, *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ClusterError(f"openssl {' '.join(args)} failed: {proc.stderr.strip()}")


@dataclass(frozen=True)
class CertPair:
    cert: Path
    key: Path


class Pki:
    """A throwaway CA with server and client certificates, plus a service-account key pair."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.ca = CertPair(directory / "ca.crt", directory / "ca.key")
        _openssl(
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
            "-subj", "/CN=respread-test-ca",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign,digitalSignature",
            "-keyout", self.ca.key.name, "-out", self.ca.cert.name,
            cwd=directory,
        )  # fmt: skip
        self.service_account_key = directory / "sa.key"
        self.service_account_pub = directory / "sa.pub"
        _openssl("genrsa", "-out", "sa.key", "2048", cwd=directory)
        _openssl("rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=directory)

    def issue(
        self,
        name: str,
        common_name: str,
        *,
        organizations: Sequence[str] = (),
        server: bool = False,
    ) -> CertPair:
        """A CA-signed certificate; `server=True` makes it a serving cert for 127.0.0.1."""
        subject = "".join(f"/O={o}" for o in organizations) + f"/CN={common_name}"
        pair = CertPair(self.dir / f"{name}.crt", self.dir / f"{name}.key")
        ext = self.dir / f"{name}.ext"
        lines = ["basicConstraints=CA:FALSE", "keyUsage=critical,digitalSignature,keyEncipherment"]
        if server:
            lines += ["extendedKeyUsage=serverAuth", "subjectAltName=IP:127.0.0.1,DNS:localhost"]
        else:
            lines += ["extendedKeyUsage=clientAuth"]
        ext.write_text("\n".join(lines) + "\n")
        _openssl(
            "req", "-new", "-newkey", "rsa:2048", "-nodes", "-subj", subject,
            "-keyout", pair.key.name, "-out", f"{name}.csr",
            cwd=self.dir,
        )  # fmt: skip
        _openssl(
            "x509", "-req", "-in", f"{name}.csr", "-CA", self.ca.cert.name,
            "-CAkey", self.ca.key.name, "-CAcreateserial", "-days", "3650",
            "-extfile", ext.name, "-out", pair.cert.name,
            cwd=self.dir,
        )  # fmt: skip
        return pair


def write_kubeconfig(path: Path, *, server: str, ca: Path, client: CertPair, user: str) -> Path:
    """A self-contained kubeconfig (certificates embedded), usable from any process."""

    def b64(p: Path) -> str:
        return base64.b64encode(p.read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "respread-test",
                "cluster": {"server": server, "certificate-authority-data": b64(ca)},
            }
        ],
        "users": [
            {
                "name": user,
                "user": {
                    "client-certificate-data": b64(client.cert),
                    "client-key-data": b64(client.key),
                },
            }
        ],
        "contexts": [{"name": user, "context": {"cluster": "respread-test", "user": user}}],
        "current-context": user,
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    path.chmod(0o600)
    return path


# --------------------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pdeathsig_safe() -> bool:
    """PR_SET_PDEATHSIG fires when the creating *thread* exits, so only use it from the main
    thread (a component restarted from a worker thread must outlive that thread)."""
    return sys.platform == "linux" and threading.current_thread() is threading.main_thread()


def _die_with_parent() -> None:  # runs in the child between fork and exec
    with contextlib.suppress(Exception):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL)


@dataclass
class Component:
    """One control-plane process: its command line, log file and readiness probe."""

    name: str
    args: list[str]
    log_path: Path
    ready: Callable[[], bool]
    process: subprocess.Popen[bytes] | None = None
    started_at: float = 0.0
    ready_after: float = 0.0

    def start(self, timeout: float) -> None:
        if self.running:
            return
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            log.write(
                f"\n===== {time.strftime('%H:%M:%S')} starting: {' '.join(self.args)}\n".encode()
            )
            log.flush()
            self.started_at = time.monotonic()
            self.process = subprocess.Popen(
                self.args,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # own process group: stop() signals the whole group
                preexec_fn=_die_with_parent if _pdeathsig_safe() else None,  # noqa: PLW1509
            )
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if self.process is None or self.process.poll() is not None:
                code = None if self.process is None else self.process.returncode
                raise ClusterError(
                    f"{self.name} exited (code {code}) before becoming ready; "
                    f"log {self.log_path}:\n{self.tail()}"
                )
            with contextlib.suppress(Exception):
                if self.ready():
                    self.ready_after = time.monotonic() - self.started_at
                    return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"{self.name} not ready after {timeout:.0f}s; "
                    f"log {self.log_path}:\n{self.tail()}"
                )
            time.sleep(0.2)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, grace: float = STOP_GRACE) -> None:
        proc, self.process = self.process, None
        if proc is None:
            return
        steps = [(signal.SIGTERM, grace)] if grace > 0 else []
        for sig, wait in [*steps, (signal.SIGKILL, 5.0)]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
        # The leader is gone; make sure nothing else of its group survives.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    def pause(self) -> None:
        """SIGSTOP the component's process group: it keeps its sockets, answers nothing, and
        the kernel still accepts connections and requests for it (a frozen process, a VM
        stall), which it handles when `resume()` sends SIGCONT."""
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        if self.process is not None:
            os.killpg(self.process.pid, signal.SIGCONT)

    def tail(self, lines: int = LOG_TAIL_LINES) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


def _http_ok(url: str, context: ssl.SSLContext | None = None, expect: str | None = None) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2, context=context) as resp:
            body = resp.read().decode(errors="replace")
            return resp.status == 200 and (expect is None or expect in body)
    except (urllib.error.URLError, OSError):
        return False


def _insecure_context() -> ssl.SSLContext:
    """For /healthz of components with self-signed serving certs, on loopback only."""
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


# --------------------------------------------------------------------------- audit log


AUDIT_POLICY = """\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  # Heartbeats and events are noise: who and what, without bodies.
  - level: Metadata
    resources:
      - group: coordination.k8s.io
        resources: [leases]
      - group: ""
        resources: [events]
      - group: events.k8s.io
        resources: [events]
  # Writes with their request bodies (eviction DeleteOptions, patches, ...).
  - level: Request
    verbs: [create, update, patch, delete, deletecollection]
  - level: Metadata
"""


class AuditLog:
    """The kube-apiserver's JSON audit log (one event per line, stage ResponseComplete etc.).

    Use `mark()` before the requests you care about and `events(since=mark)` after; the log is
    written when the response completes, so poll with `wait_for_events`.
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def mark(self) -> int:
        try:
            return self.path.stat().st_size
        except FileNotFoundError:
            return 0

    def events(self, since: int = 0) -> list[dict[str, Any]]:
        try:
            with self.path.open("rb") as f:
                f.seek(since)
                data = f.read()
        except FileNotFoundError:
            return []
        out = []
        for line in data.splitlines():
            with contextlib.suppress(ValueError):  # a line still being written
                out.append(json.loads(line))
        return out

    def wait_for_events(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        *,
        count: int = 1,
        since: int = 0,
        timeout: float = 15.0,
    ) -> list[dict[str, Any]]:
        """At least `count` completed events matching `predicate`, in log order."""
        found: list[dict[str, Any]] = []

        def enough() -> bool:
            found[:] = [
                e
                for e in self.events(since)
                if e.get("stage") == "ResponseComplete" and predicate(e)
            ]
            return len(found) >= count

        deadline = time.monotonic() + timeout
        while not enough():
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"audit log {self.path}: wanted {count} matching events, found {len(found)}"
                )
            time.sleep(0.1)
        return found


# --------------------------------------------------------------------------- the control plane


@dataclass
class ControlPlane:
    """etcd + kube-apiserver (always) and, after `start_e2e()`, controller-manager, scheduler, kwok.

    Attributes tests use: `kubeconfig` (admin, system:masters), `server`, `ca_file`, `audit`
    (an `AuditLog`), `logs_dir`, `tmp`; methods `restart_apiserver()`, `stop_apiserver()`,
    `start_apiserver()`, `start_e2e()`, `user_kubeconfig(name, groups)`, `log_tails()`,
    `paused(name)` (a component SIGSTOPped for a block).
    """

    assets: Path
    tmp: Path
    components: dict[str, Component] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    _canaries: int = 0
    _scheduler_unverified: bool = False

    def __post_init__(self) -> None:
        self.logs_dir = self.tmp / "logs"
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.pki = Pki(self.tmp / "pki")
        self.ca_file = self.pki.ca.cert
        self.etcd_port, self.etcd_peer_port, self.port = free_port(), free_port(), free_port()
        self.server = f"https://127.0.0.1:{self.port}"
        self.serving = self.pki.issue("apiserver", "kube-apiserver", server=True)
        self.admin = self.pki.issue("admin", "respread-admin", organizations=["system:masters"])
        self.kubeconfig = write_kubeconfig(
            self.tmp / "admin.kubeconfig",
            server=self.server, ca=self.ca_file, client=self.admin, user="respread-admin",
        )  # fmt: skip
        self.audit_policy = self.tmp / "audit-policy.yaml"
        self.audit_policy.write_text(AUDIT_POLICY)
        self.audit = AuditLog(self.logs_dir / "audit.log")
        self._admin_ctx = ssl.create_default_context(cafile=str(self.ca_file))
        self._admin_ctx.load_cert_chain(str(self.admin.cert), str(self.admin.key))
        self._define_core()

    # ---- core: etcd + kube-apiserver

    def _define_core(self) -> None:
        etcd_url = f"http://127.0.0.1:{self.etcd_port}"
        peer_url = f"http://127.0.0.1:{self.etcd_peer_port}"
        self.components["etcd"] = Component(
            "etcd",
            [
                str(self.assets / "etcd"),
                "--name=default",
                f"--data-dir={self.tmp / 'etcd'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
            self.logs_dir / "etcd.log",
            lambda: _http_ok(f"{etcd_url}/health", expect='"health":"true"'),
        )
        self.components["kube-apiserver"] = Component(
            "kube-apiserver",
            [
                str(self.assets / "kube-apiserver"),
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.port}",
                "--advertise-address=127.0.0.1",
                "--endpoint-reconciler-type=none",
                f"--cert-dir={self.tmp / 'apiserver-certs'}",
                f"--tls-cert-file={self.serving.cert}",
                f"--tls-private-key-file={self.serving.key}",
                f"--client-ca-file={self.ca_file}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={self.pki.service_account_pub}",
                f"--service-account-signing-key-file={self.pki.service_account_key}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=RBAC",
                "--allow-privileged=true",
                f"--audit-policy-file={self.audit_policy}",
                f"--audit-log-path={self.audit.path}",
                "--audit-log-format=json",
                "--audit-log-mode=blocking",
                "--audit-log-maxsize=0",
                "--audit-log-maxbackup=0",
                # Close open watches on SIGTERM instead of waiting (up to 60 s) for them.
                "--shutdown-watch-termination-grace-period=2s",
            ],
            self.logs_dir / "kube-apiserver.log",
            lambda: _http_ok(f"{self.server}/readyz", self._admin_ctx),
        )

    def start(self) -> None:
        t0 = time.monotonic()
        self.components["etcd"].start(COMPONENT_READY_TIMEOUT)
        self.start_apiserver()
        self.timings["apiserver_ready_s"] = time.monotonic() - t0

    def start_apiserver(self) -> None:
        """Start kube-apiserver (ready when this returns). The other components reconnect in
        their own time: `settle()` waits for kube-scheduler."""
        self.components["kube-apiserver"].start(APISERVER_READY_TIMEOUT)
        self._scheduler_unverified = self.e2e_running

    def settle(self) -> None:
        """After kube-apiserver restarted, wait once for kube-scheduler to see it again (the
        e2e fixture calls this before each test)."""
        if self._scheduler_unverified and self.e2e_running:
            self.await_scheduler_current()
        self._scheduler_unverified = False

    def await_scheduler_current(self, timeout: float = SCHEDULER_CATCH_UP_TIMEOUT) -> None:
        """Wait until kube-scheduler's watches are live again: a canary node and a pod that only
        fits on it are created, and the pod is bound; both are then deleted.

        After kube-apiserver has been away, client-go's reflectors retry with a backoff of up to
        30 s. A test that goes on at once creates its nodes one by one while the scheduler's node
        watch is still down, and the scheduler, relisting in the middle, places a whole
        Deployment on the nodes it knows (9 pods in one zone of three)."""
        self._canaries += 1
        name = f"respread-scheduler-canary-{self._canaries}"
        labels = {"respread.test/canary": name}
        capacity = {"cpu": "1", "memory": "1Gi", "pods": "1"}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "status": {"capacity": capacity, "allocatable": capacity},
        }
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name},
            "spec": {
                "nodeSelector": labels,
                "tolerations": [{"operator": "Exists"}],
                "automountServiceAccountToken": False,
                "containers": [{"name": "canary", "image": "canary"}],
            },
        }
        pod_path = f"/api/v1/namespaces/default/pods/{name}"
        try:
            self._must("POST", "/api/v1/nodes", node)
            self._must("POST", "/api/v1/namespaces/default/pods", pod)
            deadline = time.monotonic() + timeout
            while True:
                status, body = self.apiserver_request("GET", pod_path)
                if status == 200 and json.loads(body).get("spec", {}).get("nodeName"):
                    return
                if time.monotonic() > deadline:
                    raise ClusterError(
                        f"kube-scheduler did not bind the canary pod {name} within {timeout:.0f}s"
                        " of kube-apiserver's start; its log: "
                        f"{self.components['kube-scheduler'].log_path}"
                    )
                time.sleep(0.25)
        finally:
            self.apiserver_request("DELETE", f"{pod_path}?gracePeriodSeconds=0")
            self.apiserver_request("DELETE", f"/api/v1/nodes/{name}")

    def _must(self, method: str, path: str, body: dict[str, Any]) -> None:
        status, text = self.apiserver_request(method, path, body)
        if status >= 300:
            raise ClusterError(f"{method} {path}: HTTP {status}: {text[:500]}")

    def stop_apiserver(self, graceful: bool = True) -> None:
        """SIGTERM (graceful shutdown, ~1 s) or, with graceful=False, SIGKILL (a crash)."""
        self.components["kube-apiserver"].stop(grace=STOP_GRACE if graceful else 0)

    @contextlib.contextmanager
    def paused(self, name: str) -> Iterator[None]:
        """A component stopped (SIGSTOP) for the duration of the block, resumed (SIGCONT) after
        it, even if the block fails. After kube-apiserver or kube-scheduler was stopped, the
        next `settle()` waits for the scheduler: a pause past client-go's HTTP/2 health check
        (30 s idle, then 15 s for the ping's answer) closes its connections, and its watches
        come back only after their back-off, as after a restart."""
        component = self.components[name]
        component.pause()
        try:
            yield
        finally:
            component.resume()
            if name in ("kube-apiserver", "kube-scheduler"):
                self._scheduler_unverified = True

    @contextlib.contextmanager
    def scheduling_held(self) -> Iterator[Callable[[], None]]:
        """kube-scheduler stopped (SIGSTOP) until the block calls the function it is given, or
        ends: pods created meanwhile stay Pending, so never Ready, and whatever waits for them
        (an operator's next step, a budget's next disruption) waits until the test has done
        what it means to do first. Released, the scheduler is shown current again
        (`await_scheduler_current`) before the block goes on."""
        scheduler = self.components["kube-scheduler"]
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                scheduler.resume()
                self.await_scheduler_current()

        scheduler.pause()
        try:
            yield release
        finally:
            if not released:
                scheduler.resume()
                self._scheduler_unverified = True  # the next settle() waits for it

    def restart_apiserver(self, graceful: bool = True) -> float:
        """Stop and start kube-apiserver in place (same port, certs, etcd); seconds until ready.

        Clients (the kubernetes client, controllers, kwok, an operator) see connection errors
        while it is down and reconnect to the same address afterwards."""
        t0 = time.monotonic()
        self.stop_apiserver(graceful)
        self.start_apiserver()
        return time.monotonic() - t0

    # ---- end-to-end: controller-manager, scheduler, kwok

    @property
    def e2e_running(self) -> bool:
        return all(
            n in self.components and self.components[n].running
            for n in ("kube-controller-manager", "kube-scheduler", "kwok")
        )

    def start_e2e(self) -> None:
        """Start kube-controller-manager, kube-scheduler and kwok (idempotent)."""
        if self.e2e_running:
            return
        t0 = time.monotonic()
        if "kube-controller-manager" not in self.components:
            self._define_e2e()
        for name in ("kube-controller-manager", "kube-scheduler", "kwok"):
            self.components[name].start(COMPONENT_READY_TIMEOUT)
        self.timings["e2e_ready_s"] = time.monotonic() - t0

    def _component_kubeconfig(self, name: str, user: str, groups: Sequence[str] = ()) -> Path:
        cert = self.pki.issue(name, user, organizations=groups)
        return write_kubeconfig(
            self.tmp / f"{name}.kubeconfig",
            server=self.server, ca=self.ca_file, client=cert, user=user,
        )  # fmt: skip

    def user_kubeconfig(self, name: str, groups: Sequence[str] = ()) -> Path:
        """A kubeconfig for user `name` (client cert, O=groups); RBAC decides what it may do."""
        return self._component_kubeconfig(f"user-{name}", name, groups)

    def _define_e2e(self) -> None:
        kcm_kc = self._component_kubeconfig("controller-manager", "system:kube-controller-manager")
        sched_kc = self._component_kubeconfig("scheduler", "system:kube-scheduler")
        kwok_kc = self._component_kubeconfig("kwok", "kwok-controller", ["system:masters"])
        kcm_port, sched_port, kwok_port = free_port(), free_port(), free_port()
        insecure = _insecure_context()
        self.components["kube-controller-manager"] = Component(
            "kube-controller-manager",
            [
                str(self.assets / "kube-controller-manager"),
                f"--kubeconfig={kcm_kc}",
                f"--authentication-kubeconfig={kcm_kc}",
                f"--authorization-kubeconfig={kcm_kc}",
                "--bind-address=127.0.0.1",
                f"--secure-port={kcm_port}",
                f"--cert-dir={self.tmp / 'kcm-certs'}",
                "--authentication-skip-lookup=true",  # no front-proxy CA: don't look for one
                "--leader-elect=false",
                "--controllers=*",
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={self.pki.service_account_key}",
                f"--root-ca-file={self.ca_file}",
                "--service-cluster-ip-range=10.0.0.0/24",
            ],
            self.logs_dir / "kube-controller-manager.log",
            lambda: _http_ok(f"https://127.0.0.1:{kcm_port}/healthz", insecure),
        )
        self.components["kube-scheduler"] = Component(
            "kube-scheduler",
            [
                str(self.assets / "kube-scheduler"),
                f"--kubeconfig={sched_kc}",
                f"--authentication-kubeconfig={sched_kc}",
                f"--authorization-kubeconfig={sched_kc}",
                "--bind-address=127.0.0.1",
                f"--secure-port={sched_port}",
                f"--cert-dir={self.tmp / 'scheduler-certs'}",
                "--authentication-skip-lookup=true",  # no front-proxy CA: don't look for one
                "--leader-elect=false",
            ],
            self.logs_dir / "kube-scheduler.log",
            lambda: _http_ok(f"https://127.0.0.1:{sched_port}/healthz", insecure),
        )
        key, value = FAKE_NODE_ANNOTATION
        self.components["kwok"] = Component(
            "kwok",
            [
                str(self.assets / "kwok"),
                f"--kubeconfig={kwok_kc}",
                f"--config={self.assets / KWOK_STAGES_FILE}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={key}={value}",
                "--node-lease-duration-seconds=40",  # heartbeat-with-lease renews leases
                "--cidr=10.244.0.0/16",  # fake pod IPs (never contacted)
                "--node-ip=10.96.0.1",
                f"--server-address=127.0.0.1:{kwok_port}",
            ],
            self.logs_dir / "kwok.log",
            lambda: _http_ok(f"http://127.0.0.1:{kwok_port}/healthz"),
        )

    # ---- teardown and diagnostics

    def stop(self) -> None:
        """Stop everything, dependents first; safe to call more than once."""
        order = ["kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"]
        for name in order:
            if name in self.components:
                self.components[name].stop()

    def log_tails(self, lines: int = LOG_TAIL_LINES) -> Iterator[tuple[str, str]]:
        for name, comp in self.components.items():
            if comp.log_path.exists():
                yield name, comp.tail(lines)

    def apiserver_get(self, path: str) -> tuple[int, str]:
        """A raw GET with the admin credentials (for /readyz, /version, ...)."""
        return self.apiserver_request("GET", path)

    def apiserver_request(
        self, method: str, path: str, body: dict[str, Any] | None = None
    ) -> tuple[int, str]:
        """A raw request with the admin credentials; a JSON body if given."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(f"{self.server}{path}", data=data, method=method)
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=10, context=self._admin_ctx) as resp:
                return int(resp.status), resp.read().decode(errors="replace")
        except urllib.error.HTTPError as err:
            return int(err.code), err.read().decode(errors="replace")


def main(argv: Sequence[str] | None = None) -> int:
    """Run a control plane by hand: `python tests/cluster/kube_harness.py [--e2e] [DIR]`.

    Prints the admin kubeconfig path (for kubectl or a locally run operator) and keeps the
    control plane up until interrupted.
    """
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--e2e", action="store_true", help="also run controller-manager etc.")
    parser.add_argument("dir", nargs="?", help="working directory (default: a new temp dir)")
    args = parser.parse_args(argv)
    tmp = Path(args.dir or tempfile.mkdtemp(prefix="respread-k8s-"))
    cp = ControlPlane(resolve_assets(), tmp)
    try:
        cp.start()
        if args.e2e:
            cp.start_e2e()
        timings = ", ".join(f"{k} {v:.1f}s" for k, v in cp.timings.items())
        print(f"ready ({timings}); logs in {cp.logs_dir}", file=sys.stderr)
        print(f"export KUBECONFIG={cp.kubeconfig}", flush=True)
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        cp.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

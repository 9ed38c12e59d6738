"""The operator's image, run as Kubernetes runs it, against the real control plane.

The image hack/image builds is started with podman, hardened as deploy/deployment.yaml's pod is
(its uid, a read-only root with a tmpfs /tmp, no capabilities, no privilege escalation) and given
what the kubelet gives a pod: KUBERNETES_SERVICE_HOST/_PORT and the service account's token, CA
and namespace at /var/run/secrets/kubernetes.io/serviceaccount, with a token from the
TokenRequest API for deploy/'s `respread` service account. No kubeconfig: the operator finds the
API server through the in-cluster path, with deploy/'s RBAC only, and must write a first status
on a DryRun policy. The container shares the host's network (the API server listens on
loopback), so `KUBERNETES_SERVICE_HOST` is 127.0.0.1, which the serving certificate covers.

Skipped, saying why, only where buildah is missing (the image cannot be built); hack/test builds
it before pytest, and the fixture runs hack/image again (a no-op when nothing changed).
"""

from __future__ import annotations

import secrets
import shutil
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_harness import ControlPlane, free_port
from kube_helpers import GROUP, PLURAL, VERSION, status_of, wait_for
from kubernetes import client

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]  # crd, operator_rbac

REPO = Path(__file__).resolve().parents[2]
SA_NAMESPACE, SA_NAME = "respread-system", "respread"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
IMAGE_BUILD_TIMEOUT = 1200


def deployment_container() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """deploy/deployment.yaml's pod spec, its container and the container's securityContext."""
    deployment = yaml.safe_load((REPO / "deploy" / "deployment.yaml").read_text())
    pod = deployment["spec"]["template"]["spec"]
    [container] = pod["containers"]
    return pod, container, container["securityContext"]


def hardening_flags() -> list[str]:
    """podman flags for deploy/'s securityContext, read from the manifest (so the two cannot
    drift apart without this failing)."""
    pod, container, sc = deployment_container()
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}  # podman's default profile
    uid, gid = sc["runAsUser"], pod["securityContext"]["runAsGroup"]
    [tmp] = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
    [volume] = [v for v in pod["volumes"] if v["name"] == tmp["name"]]
    assert "emptyDir" in volume
    size = volume["emptyDir"].get("sizeLimit", "64Mi").removesuffix("i").lower()
    return [
        f"--user={uid}:{gid}",
        "--read-only",
        f"--tmpfs=/tmp:rw,size={size},mode=1777",
        "--cap-drop=ALL",
        "--security-opt=no-new-privileges",
    ]


@dataclass(frozen=True)
class Image:
    ref: str
    build_seconds: float


@pytest.fixture(scope="session")
def operator_image() -> Image:
    """The image hack/image builds (and caches: a no-op when its inputs are unchanged)."""
    if shutil.which("buildah") is None:
        pytest.skip(
            "buildah is not installed, so the operator's image cannot be built here "
            "(hack/image installs buildah, podman, runc and mmdebstrap with apt-get; "
            "hack/test runs it before pytest)"
        )
    t0 = time.monotonic()
    proc = subprocess.run(
        [str(REPO / "hack" / "image"), "--no-archive"],
        capture_output=True,
        text=True,
        timeout=IMAGE_BUILD_TIMEOUT,
        check=False,
        cwd=REPO,
    )
    if proc.returncode != 0:
        pytest.fail(f"hack/image failed:\n{proc.stderr[-4000:]}", pytrace=False)
    return Image(proc.stdout.strip().splitlines()[-1], time.monotonic() - t0)


def serving_cert_covers(control_plane: ControlPlane, host: str) -> bool:
    """Whether the API server's certificate verifies for `host` (as the in-cluster client does)."""
    ctx = ssl.create_default_context(cafile=str(control_plane.ca_file))
    with socket.create_connection((host, control_plane.port), timeout=10) as sock:
        try:
            with ctx.wrap_socket(sock, server_hostname=host):
                return True
        except ssl.SSLCertVerificationError:
            return False


@dataclass
class Container:
    name: str
    proc: subprocess.Popen[bytes]
    log: Path
    started: float

    def text(self) -> str:
        return self.log.read_text(errors="replace")


@pytest.fixture
def service_account_volume(
    control_plane: ControlPlane,
    api_client: client.ApiClient,
    operator_rbac: list[dict[str, Any]],
    tmp_path: Path,
) -> Path:
    """What the kubelet mounts for deploy/'s service account: a bound token, the cluster's CA
    and the namespace, readable by the container's uid."""
    token = (
        client.CoreV1Api(api_client)
        .create_namespaced_service_account_token(
            SA_NAME,
            SA_NAMESPACE,
            client.AuthenticationV1TokenRequest(
                spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
            ),
        )
        .status.token
    )
    volume = tmp_path / "serviceaccount"
    volume.mkdir()
    (volume / "token").write_text(token)
    (volume / "ca.crt").write_bytes(control_plane.ca_file.read_bytes())
    (volume / "namespace").write_text(SA_NAMESPACE)
    for path in (volume, *volume.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return volume


@pytest.fixture
def run_image(control_plane: ControlPlane, operator_image: Image, tmp_path: Path) -> Iterator[Any]:
    started: list[Container] = []

    def start(sa_volume: Path, args: list[str], env: dict[str, str]) -> Container:
        name = f"respread-test-{secrets.token_hex(4)}"
        log = tmp_path / f"{name}.log"
        command = [
            "podman", "run", "--rm", f"--name={name}",
            "--runtime=runc",  # crun refuses some sandboxes' cgroup layouts
            "--network=host",  # the API server listens on loopback
            "--ulimit=nofile=4096:4096", "--ulimit=nproc=4096:4096",
            *hardening_flags(),
            f"--volume={sa_volume}:{SA_DIR}:ro",
            *(f"--env={k}={v}" for k, v in env.items()),
            operator_image.ref, *args,
        ]  # fmt: skip
        with log.open("wb") as out:
            proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        started.append(Container(name, proc, log, time.monotonic()))
        return started[-1]

    yield start
    for c in started:
        subprocess.run(["podman", "stop", "--time=15", c.name], capture_output=True, check=False)
        try:
            c.proc.wait(30)
        except subprocess.TimeoutExpired:
            subprocess.run(["podman", "rm", "--force", c.name], capture_output=True, check=False)
            c.proc.wait(30)


def test_the_image_reaches_a_first_status_through_the_in_cluster_path(
    control_plane: ControlPlane,
    crd: None,
    service_account_volume: Path,
    run_image: Any,
    operator_image: Image,
    api_client: client.ApiClient,
) -> None:
    host = "127.0.0.1"
    assert serving_cert_covers(control_plane, host), (
        f"the API server's serving certificate does not cover {host}"
    )
    custom = client.CustomObjectsApi(api_client)
    name = f"image-{secrets.token_hex(3)}"
    policy = yaml.safe_load((REPO / "deploy" / "example-policy.yaml").read_text())
    assert policy["spec"]["mode"] == "DryRun"
    policy["metadata"] = {"name": name}
    custom.create_cluster_custom_object(GROUP, VERSION, PLURAL, policy)
    try:
        # The Deployment's own arguments, with free ports: the container shares the host's
        # network with everything else running here.
        _, container, _ = deployment_container()
        health, ready, metrics_port = free_port(), free_port(), free_port()
        args = [
            a.replace("0.0.0.0:8080", f"127.0.0.1:{health}")
            .replace("0.0.0.0:8081", f"127.0.0.1:{ready}")
            .replace("9090", str(metrics_port))
            for a in container["args"]
        ]
        assert args[:2] == ["run", "--leader-elect"]
        pod_name = f"respread-{secrets.token_hex(3)}"
        c = run_image(
            service_account_volume,
            args,
            {
                "KUBERNETES_SERVICE_HOST": host,
                "KUBERNETES_SERVICE_PORT": str(control_plane.port),
                "POD_NAME": pod_name,  # the downward API's metadata.name
            },
        )

        def first_status() -> dict[str, Any] | None:
            if c.proc.poll() is not None:
                return {"exited": c.proc.returncode}
            st = status_of(custom, name)
            return st if st.get("lastScanTime") else None

        st = wait_for(first_status, 120, "a first status written by the image")
        assert "exited" not in st, f"the container exited:\n{c.text()[-4000:]}"
        startup = time.monotonic() - c.started
        conditions = {c["type"]: c["status"] for c in st["conditions"]}
        assert conditions["ScanSucceeded"] == "True", st

        # It ran as the service account, through the in-cluster configuration, as the pod.
        user = f"system:serviceaccount:{SA_NAMESPACE}:{SA_NAME}"
        writes = control_plane.audit.wait_for_events(
            lambda e: (
                e.get("objectRef", {}).get("name") == name
                and e.get("objectRef", {}).get("subresource") == "status"
                and e.get("verb") in ("patch", "update")
            ),
            timeout=30,
        )
        assert {e["user"]["username"] for e in writes} == {user}
        assert {e["userAgent"] for e in writes} == {f"respread/{pod_name}"}
        lease = client.CoordinationV1Api(api_client).read_namespaced_lease(SA_NAME, SA_NAMESPACE)
        assert lease.spec.holder_identity == pod_name

        # Its probe and its metrics answer, as the kubelet and Prometheus would ask.
        with urllib.request.urlopen(f"http://127.0.0.1:{health}/healthz", timeout=10) as r:
            assert r.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{ready}/readyz", timeout=10) as r:
            assert r.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10) as r:
            body = r.read().decode()
        assert f'respread_last_scan_timestamp_seconds{{policy="{name}"}}' in body
        assert "respread_leader 1.0" in body
        print(
            f"image {operator_image.ref}: hack/image {operator_image.build_seconds:.1f}s, "
            f"container start to first status {startup:.1f}s"
        )
    finally:
        custom.delete_cluster_custom_object(GROUP, VERSION, PLURAL, name)

"""The respread operator on the real control plane: its CRD, and `respread run` as a process.

Fixtures (import them into a test module to use them):
- `crd` (module): the RebalancePolicy CRD from crds/, applied and Established;
- `operator_rbac` (session): deploy/'s Namespace, ServiceAccount and RBAC (ClusterRole, Role and
  their bindings), loaded with PyYAML and applied server-side as they are in deploy/;
- `operator_kubeconfig` (session): a kubeconfig for system:serviceaccount:respread-system:respread
  with a token from the TokenRequest API: the operator runs with exactly deploy/'s permissions,
  so a permission missing there fails the tests;
- `operator_factory`: `start(*args, kubeconfig=None)` runs `respread run` (as the service
  account by default, metrics disabled unless `--metrics-port` is given) and returns an
  `OperatorProcess`; every process started is stopped after the test, its log tail printed if
  it did not exit cleanly;
- `operator`: one such process with the defaults; yields the path of its log.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_harness import ControlPlane
from kube_helpers import token_kubeconfig, wait_for
from kubernetes import client, dynamic
from kubernetes.client.exceptions import ApiException
from tests.support.processes import stop

REPO = Path(__file__).resolve().parents[2]
OPERATOR_NAMESPACE, OPERATOR_SA = "respread-system", "respread"
RBAC_FILES = ("namespace.yaml", "serviceaccount.yaml", "rbac.yaml")
FIELD_MANAGER = "respread-test-operator"


@dataclass
class OperatorProcess:
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL: a crash, with no chance to release anything."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(20)

    def stop(self) -> None:
        stop(self.proc)
        if self.proc.returncode not in (0, -15, -9):
            print(self.text()[-4000:])


StartOperator = Callable[..., OperatorProcess]


@pytest.fixture(scope="module")
def crd(api_client: client.ApiClient) -> None:
    ext = client.ApiextensionsV1Api(api_client)
    body = yaml.safe_load((REPO / "crds" / "rebalancepolicy.yaml").read_text())
    try:
        ext.create_custom_resource_definition(body)
    except ApiException as err:
        if err.status != 409:
            raise

    def established() -> bool:
        crd = ext.read_custom_resource_definition(body["metadata"]["name"])
        return any(
            c.type == "Established" and c.status == "True" for c in (crd.status.conditions or [])
        )

    wait_for(established, 30, "the RebalancePolicy CRD to be established")


def deploy_rbac_objects() -> list[dict[str, Any]]:
    """deploy/'s Namespace, ServiceAccount, ClusterRole(s), Role(s) and bindings, as written."""
    docs = []
    for name in RBAC_FILES:
        docs += [d for d in yaml.safe_load_all((REPO / "deploy" / name).read_text()) if d]
    return docs


@pytest.fixture(scope="session")
def operator_rbac(api_client: client.ApiClient) -> list[dict[str, Any]]:
    """deploy/'s RBAC applied server-side (idempotent; test_crd applies the same objects)."""
    dyn = dynamic.DynamicClient(api_client)
    docs = deploy_rbac_objects()
    kinds = {d["kind"] for d in docs}
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"} <= kinds
    for doc in docs:
        resource = dyn.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        dyn.server_side_apply(
            resource,
            body=doc,
            name=doc["metadata"]["name"],
            namespace=doc["metadata"].get("namespace"),
            field_manager=FIELD_MANAGER,
            force_conflicts=True,
        )
    return docs


@pytest.fixture(scope="session")
def operator_kubeconfig(
    control_plane: ControlPlane,
    api_client: client.ApiClient,
    operator_rbac: list[dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:
    """A kubeconfig for the operator's service account (a bound token, valid for 6 hours)."""
    user = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{OPERATOR_SA}"
    path = token_kubeconfig(
        control_plane.server,
        control_plane.ca_file,
        api_client,
        OPERATOR_NAMESPACE,
        OPERATOR_SA,
        tmp_path_factory.mktemp("operator") / "respread-sa.kubeconfig",
        hours=6,
    )
    # The token works, and it is the service account's, with deploy/'s permissions only.
    review = client.AuthorizationV1Api(api_client).create_subject_access_review(
        client.V1SubjectAccessReview(
            spec=client.V1SubjectAccessReviewSpec(
                user=user,
                groups=["system:serviceaccounts", f"system:serviceaccounts:{OPERATOR_NAMESPACE}"],
                resource_attributes=client.V1ResourceAttributes(verb="delete", resource="pods"),
            )
        )
    )
    assert not review.status.allowed, "the operator's service account may delete pods"
    return path


@pytest.fixture
def operator_factory(
    control_plane: ControlPlane, crd: None, operator_kubeconfig: Path, tmp_path: Path
) -> Iterator[StartOperator]:
    """Start `respread run` processes as the operator's service account (stopped after the
    test)."""
    started: list[OperatorProcess] = []

    def start(*args: str, kubeconfig: Path | None = None) -> OperatorProcess:
        log = tmp_path / f"respread-operator-{len(started)}.log"
        extra = list(args)
        if "--metrics-port" not in extra:
            extra += ["--metrics-port", "0"]
        with log.open("w") as out:
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "respread.cli",
                    "run",
                    "--kubeconfig",
                    str(kubeconfig or operator_kubeconfig),
                    "-v",
                    *extra,
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                cwd=REPO,
            )
        started.append(OperatorProcess(proc, log))
        return started[-1]

    try:
        yield start
    finally:
        for op in started:
            op.stop()


@pytest.fixture
def operator(operator_factory: StartOperator) -> Path:
    """`respread run` as a separate process, with its log kept for failures."""
    return operator_factory().log

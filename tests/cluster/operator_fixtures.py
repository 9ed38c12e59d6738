"""The respread operator on the real control plane: its CRD, and `respread run` as a process.

Fixtures (import them into a test module to use them):
- `crd` (module): the RebalancePolicy CRD from crds/, applied and Established;
- `operator_factory`: `start(*args, kubeconfig=None)` runs `respread run` (admin kubeconfig by
  default, metrics disabled unless `--metrics-port` is given) and returns an `OperatorProcess`;
  every process started is stopped after the test, its log tail printed if it did not exit
  cleanly;
- `operator`: one such process with the defaults; yields the path of its log.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from kube_harness import ControlPlane
from kube_helpers import wait_for
from kubernetes import client
from kubernetes.client.exceptions import ApiException

REPO = Path(__file__).resolve().parents[2]
GROUP, VERSION, PLURAL = "respread.io", "v1alpha1", "rebalancepolicies"


@dataclass
class OperatorProcess:
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.returncode not in (0, -15):
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


@pytest.fixture
def operator_factory(
    control_plane: ControlPlane, crd: None, tmp_path: Path
) -> Iterator[StartOperator]:
    """Start `respread run` processes (stopped after the test)."""
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
                    str(kubeconfig or control_plane.kubeconfig),
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

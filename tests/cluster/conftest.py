"""Fixtures for tests against a real control plane (see kube_harness.py).

Session scope: `k8s_assets`, `control_plane` (etcd + kube-apiserver), `kubeconfig`,
`audit_log`, `api_client`, `core_v1`, `apps_v1`, `policy_v1`.
Per test: `e2e_cluster` (ensures controller-manager, scheduler and kwok are running),
`namespace` (a fresh namespace), `fake_nodes` (a `FakeNodes` factory, cleaned up afterwards),
`scene` (all of these and the clients in one `scene.Scene`, with the steps tests share).

Any test using `control_plane` (directly or through another fixture) is marked `cluster`
automatically; modules also say `pytestmark = pytest.mark.cluster`. The binaries are resolved
(built on a cache miss, outside any test's timeout) once collection is over, and only when a
selected test needs them, so `pytest -m "not cluster"` never touches Go or starts anything.
"""

from __future__ import annotations

import atexit
import os
import re
import secrets
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest
from kube_harness import AuditLog, ClusterError, ControlPlane, resolve_assets
from kube_helpers import FakeNodes, create_namespace
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from scene import Scene

ASSETS_KEY = pytest.StashKey[Path | ClusterError]()
CONTROL_PLANE_KEY = pytest.StashKey[ControlPlane]()
CLUSTER_FIXTURE = "control_plane"


def _uses_cluster(item: pytest.Item) -> bool:
    return CLUSTER_FIXTURE in getattr(item, "fixturenames", ())


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if _uses_cluster(item) and item.get_closest_marker("cluster") is None:
            item.add_marker(pytest.mark.cluster)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Provide the binaries before the first test starts, so a cold build is not cut short by a
    test timeout. Its progress is shown live."""
    cfg = session.config
    if cfg.option.collectonly or not any(_uses_cluster(i) for i in session.items):
        return
    build = os.environ.get("RESPREAD_K8S_BUILD", "1") != "0"
    capture = cfg.pluginmanager.getplugin("capturemanager")
    try:
        with capture.global_and_fixture_disabled():
            cfg.stash[ASSETS_KEY] = resolve_assets(build=build)
    except ClusterError as exc:
        cfg.stash[ASSETS_KEY] = exc


@pytest.fixture(scope="session")
def k8s_assets(request: pytest.FixtureRequest) -> Path:
    """The directory holding kube-apiserver, etcd, ... (see hack/k8s-binaries)."""
    assets = request.config.stash.get(ASSETS_KEY, None)
    if assets is None:  # e.g. the fixture was requested dynamically
        try:
            assets = resolve_assets(build=os.environ.get("RESPREAD_K8S_BUILD", "1") != "0")
        except ClusterError as exc:
            assets = exc
        request.config.stash[ASSETS_KEY] = assets
    if isinstance(assets, ClusterError):
        pytest.fail(f"control-plane binaries unavailable: {assets}", pytrace=False)
    return assets


@pytest.fixture(scope="session")
def control_plane(
    request: pytest.FixtureRequest,
    k8s_assets: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver, started once per session; e2e components via `e2e_cluster`."""
    cp = ControlPlane(k8s_assets, tmp_path_factory.mktemp("k8s"))
    request.config.stash[CONTROL_PLANE_KEY] = cp
    atexit.register(cp.stop)  # belt and braces; stop() is idempotent
    try:
        cp.start()
    except ClusterError as exc:
        cp.stop()
        pytest.fail(f"control plane did not start: {exc}", pytrace=False)
    except BaseException:
        cp.stop()
        raise
    try:
        yield cp
    finally:
        cp.stop()


@pytest.fixture
def e2e_cluster(control_plane: ControlPlane) -> ControlPlane:
    """The session control plane with kube-controller-manager, kube-scheduler and kwok running
    (started on first use, restarted if one has died)."""
    try:
        control_plane.start_e2e()
        control_plane.settle()
    except ClusterError as exc:
        pytest.fail(f"end-to-end components not ready: {exc}", pytrace=False)
    return control_plane


@pytest.fixture(scope="session")
def kubeconfig(control_plane: ControlPlane) -> Path:
    """Admin (system:masters) kubeconfig with embedded certificates."""
    return control_plane.kubeconfig


@pytest.fixture(scope="session")
def audit_log(control_plane: ControlPlane) -> AuditLog:
    return control_plane.audit


@pytest.fixture(scope="session")
def api_client(control_plane: ControlPlane) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(config_file=str(control_plane.kubeconfig))
    try:
        yield api
    finally:
        api.close()


@pytest.fixture(scope="session")
def core_v1(api_client: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api_client)


@pytest.fixture(scope="session")
def apps_v1(api_client: client.ApiClient) -> client.AppsV1Api:
    return client.AppsV1Api(api_client)


@pytest.fixture(scope="session")
def policy_v1(api_client: client.ApiClient) -> client.PolicyV1Api:
    return client.PolicyV1Api(api_client)


def _test_id(request: pytest.FixtureRequest, limit: int) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")
    base = base.removeprefix("test-")[:limit].strip("-") or "t"
    return f"{base}-{secrets.token_hex(2)}"


@pytest.fixture
def namespace(request: pytest.FixtureRequest, core_v1: client.CoreV1Api) -> Iterator[str]:
    """A fresh namespace (with its `default` ServiceAccount), deleted after the test."""
    name = _test_id(request, 40)
    create_namespace(core_v1, name)
    yield name
    try:
        core_v1.delete_namespace(name, propagation_policy="Background")
    except ApiException as exc:
        if exc.status != 404:
            raise


@pytest.fixture
def fake_nodes(
    request: pytest.FixtureRequest, core_v1: client.CoreV1Api, control_plane: ControlPlane
) -> Generator[FakeNodes, None, None]:
    """Factory for kwok fake nodes labelled with a per-test pool; deleted after the test."""
    nodes = FakeNodes(core_v1, _test_id(request, 24), lambda: control_plane.e2e_running)
    yield nodes
    nodes.cleanup()


@pytest.fixture
def scene(
    e2e_cluster: ControlPlane,
    namespace: str,
    fake_nodes: FakeNodes,
    api_client: client.ApiClient,
    core_v1: client.CoreV1Api,
    apps_v1: client.AppsV1Api,
    policy_v1: client.PolicyV1Api,
    audit_log: AuditLog,
) -> Scene:
    """This test's namespace and fake nodes, every controller running, the clients at hand."""
    custom = client.CustomObjectsApi(api_client)
    return Scene(namespace, fake_nodes, api_client, core_v1, apps_v1, policy_v1, custom, audit_log)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """On failure, attach the tail of every component's log to the report."""
    report = yield
    if report.failed and _uses_cluster(item):
        cp = item.config.stash.get(CONTROL_PLANE_KEY, None)
        if cp is not None:
            for name, tail in cp.log_tails():
                report.sections.append((f"{name} log (tail; full: {cp.logs_dir})", tail))
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    cp = terminalreporter.config.stash.get(CONTROL_PLANE_KEY, None)
    if cp is None:
        return
    parts = [f"{k.removesuffix('_s')} {v:.1f}s" for k, v in cp.timings.items()]
    terminalreporter.write_line(
        f"control plane: {', '.join(parts) or 'not started'}; logs in {cp.logs_dir}"
    )

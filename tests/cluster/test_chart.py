"""The Helm chart (charts/respread/) with the real helm, built by hack/helm from the Go module
proxy (helm.sh/helm/v3) and cached by version outside the repository.

Without the control plane: `helm lint --strict`; `helm template` compared with `kubectl
kustomize deploy/`, object by object (Helm's own labels left out; the Namespace is deploy/'s
alone); the ServiceMonitor compared with deploy/monitoring/'s; the values schema refusing bad
values and naming them; the values switching what they say.

On the control plane: `helm install` into a fresh namespace, then the operator reaches a first
status on the chart's policy with the chart's RBAC alone, and its service account keeps the
eviction ledger (and reads no other ConfigMap). The operator runs as a process (not
the image: test_image.py runs the image with deploy/'s RBAC) with the installed Deployment's own
arguments (free ports instead of 8080 and 9090, which other tests on this machine may hold, and
--lease-namespace, which a pod reads from its service account) and a token from the
TokenRequest API for the chart's service account. Then `helm upgrade` (values refused by the
schema change nothing; the CRD follows the documented path, since Helm never upgrades crds/)
and `helm uninstall` (everything but the CRD goes).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from kube_harness import ControlPlane, free_port
from kube_helpers import GROUP, PLURAL, VERSION, status_of, token_kubeconfig, wait_for
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from respread.kube.client import KubeError, api_client
from respread.kube.ledger import LedgerObject, read_ledger, write_ledger
from respread.remedies.evict.ledger import LEDGER

pytestmark = pytest.mark.cluster

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "respread"
CRD_NAME = f"{PLURAL}.{GROUP}"
# Labels Helm charts carry and kustomize does not add: left out of the comparison.
HELM_LABELS = frozenset(
    {"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance",
     "app.kubernetes.io/version"}
)  # fmt: skip
HELM_BUILD_TIMEOUT = 1800
FIRST_STATUS_TIMEOUT = 120

Key = tuple[str, str, str, str]


# --------------------------------------------------------------------------- helm and kubectl


class Tool:
    """A binary run with captured output; `check` raises with its stderr."""

    def __init__(self, binary: str, env: dict[str, str], *base: str) -> None:
        self.binary, self.env, self.base = binary, env, list(base)

    def __call__(
        self, *args: str, stdin: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [self.binary, *self.base, *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env=self.env,
        )
        if check and proc.returncode != 0:
            raise AssertionError(
                f"{Path(self.binary).name} {' '.join(args)} exited {proc.returncode}:\n"
                f"{proc.stderr}{proc.stdout}"
            )
        return proc

    def on(self, kubeconfig: Path) -> Tool:
        return Tool(self.binary, self.env, *self.base, f"--kubeconfig={kubeconfig}")


@pytest.fixture(scope="module")
def helm(tmp_path_factory: pytest.TempPathFactory) -> Tool:
    """helm from hack/helm (built on a cache miss: minutes, once), with its own cache, config
    and data directories."""
    proc = subprocess.run(
        [str(REPO / "hack" / "helm")],
        capture_output=True,
        text=True,
        timeout=HELM_BUILD_TIMEOUT,
        check=False,
    )
    if proc.returncode != 0:
        pytest.fail(f"hack/helm failed:\n{proc.stderr[-4000:]}", pytrace=False)
    home = tmp_path_factory.mktemp("helm")
    env = dict(os.environ)
    for var in ("HELM_CACHE_HOME", "HELM_CONFIG_HOME", "HELM_DATA_HOME"):
        env[var] = str(home / var.lower())
    return Tool(proc.stdout.strip().splitlines()[-1], env)


@pytest.fixture(scope="module")
def kubectl(tmp_path_factory: pytest.TempPathFactory) -> Tool:
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl is not on PATH (kustomize renders deploy/ through it)")
    cache = tmp_path_factory.mktemp("kubectl-cache")
    return Tool(binary, dict(os.environ), f"--cache-dir={cache}")


def docs_of(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(text) if d]


def render(helm: Tool, *values: str, release: str = "respread") -> list[dict[str, Any]]:
    """`helm template` with --set values, the CRD included, as deploy/ is rendered."""
    sets = [a for v in values for a in ("--set", v)]
    out = helm("template", release, str(CHART), "-n", "respread-system", "--include-crds", *sets)
    return docs_of(out.stdout)


def key(doc: dict[str, Any]) -> Key:
    meta = doc["metadata"]
    return (doc["apiVersion"], doc["kind"], meta.get("namespace", ""), meta["name"])


def without_helm_labels(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_helm_labels(v) for k, v in value.items() if k not in HELM_LABELS}
    if isinstance(value, list):
        return [without_helm_labels(v) for v in value]
    return value


def by_key(docs: list[dict[str, Any]]) -> dict[Key, Any]:
    return {key(d): without_helm_labels(d) for d in docs}


def first_difference(a: Any, b: Any, path: str = "") -> str | None:
    """The first field path (in sorted key order) where two objects differ, or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b), key=str):
            found = first_difference(a.get(k), b.get(k), f"{path}.{k}")
            if found:
                return found
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = first_difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path}: chart {a!r} != deploy {b!r}"


def differences(chart: dict[Key, Any], deploy: dict[Key, Any]) -> list[str]:
    """Per object both hold, where the chart's differs from deploy/'s."""
    found = [(k, first_difference(chart[k], deploy[k])) for k in sorted(set(chart) & set(deploy))]
    return [f"{k}: {d}" for k, d in found if d]


# --------------------------------------------------------------------------- without a cluster


LINTED_VALUES = [
    [],
    ["leaderElection.enabled=false", "replicas=1"],
    ["metrics.enabled=false"],
    ["metrics.serviceMonitor.enabled=true"],
    ["rbac.create=false", "serviceAccount.create=false", "serviceAccount.name=existing"],
    ["defaultPolicy.enabled=false", "podDisruptionBudget.enabled=false"],
]


@pytest.mark.parametrize("values", LINTED_VALUES, ids=lambda v: ",".join(v) or "defaults")
def test_helm_lint_is_clean(helm: Tool, values: list[str]) -> None:
    sets = [a for v in values for a in ("--set", v)]
    out = helm("lint", "--strict", str(CHART), *sets).stdout
    assert "1 chart(s) linted, 0 chart(s) failed" in out, out


def test_the_chart_renders_what_deploy_renders_object_by_object(helm: Tool, kubectl: Tool) -> None:
    chart = by_key(render(helm))
    deploy = by_key(docs_of(kubectl("kustomize", str(REPO / "deploy")).stdout))
    # Helm's release namespace is the user's (helm install -n NS --create-namespace), so the
    # Namespace object, with its Pod Security labels, is deploy/'s alone (the chart's README
    # says how to label it).
    assert [k[1] for k in set(deploy) - set(chart)] == ["Namespace"]
    assert set(chart) - set(deploy) == set()
    assert differences(chart, deploy) == []
    assert len(chart) == 12


def test_the_service_monitor_is_deploy_monitorings(helm: Tool, kubectl: Tool) -> None:
    chart = by_key(render(helm, "metrics.serviceMonitor.enabled=true"))
    monitoring = docs_of(kubectl("kustomize", str(REPO / "deploy" / "monitoring")).stdout)
    [monitor] = [d for d in monitoring if d["kind"] == "ServiceMonitor"]
    theirs = {key(monitor): without_helm_labels(monitor)}
    assert key(monitor) in chart
    assert differences({key(monitor): chart[key(monitor)]}, theirs) == []


# (--set values, what helm's error must say)
REFUSED = [
    (["defaultPolicy.spec.mode=Enforced"], "at '/defaultPolicy/spec/mode': value must be one of"),
    (["defaultPolicy.spec.schedul.interval=1m"], "additional properties 'schedul' not allowed"),
    (["defaultPolicy.spec.eviction.maxPerRun=-1"], "at '/defaultPolicy/spec/eviction/maxPerRun'"),
    (["defaultPolicy.spec.schedule.interval=5"], "at '/defaultPolicy/spec/schedule/interval'"),
    (["replica=3"], "additional properties 'replica' not allowed"),
    (["replicas=-1"], "at '/replicas'"),
    (["image.pullPolicy=Sometimes"], "at '/image/pullPolicy'"),
    (["image.digest=sha256:abc"], "at '/image/digest'"),
    (["metrics.port=70000"], "at '/metrics/port'"),
    (["leaderElection.leaseDuration=15"], "at '/leaderElection/leaseDuration'"),
    (["bounds.scanDeadline=10"], "at '/bounds/scanDeadline'"),
    (["bounds.scanDedline=10s"], "additional properties 'scanDedline' not allowed"),
    (["scanOnChange=soon"], "at '/scanOnChange'"),
    (["leaderElection.enabled=false"], "replicas > 1 needs leaderElection.enabled"),
    (
        ["serviceAccount.create=false"],
        "serviceAccount.name is required when serviceAccount.create is false",
    ),
]


@pytest.mark.parametrize(("values", "message"), REFUSED, ids=[",".join(v) for v, _ in REFUSED])
def test_bad_values_are_refused_naming_them(helm: Tool, values: list[str], message: str) -> None:
    sets = [a for v in values for a in ("--set", v)]
    proc = helm("template", "respread", str(CHART), *sets, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr


def rendered(docs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [d for d in docs if d["kind"] == kind]


def container(docs: list[dict[str, Any]]) -> dict[str, Any]:
    [deployment] = rendered(docs, "Deployment")
    [c] = deployment["spec"]["template"]["spec"]["containers"]
    return dict(c)


def cluster_rules(docs: list[dict[str, Any]]) -> list[tuple[str, str]]:
    [role] = rendered(docs, "ClusterRole")
    return [(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]]


def test_values_switch_what_they_say(helm: Tool) -> None:
    single = render(helm, "leaderElection.enabled=false", "replicas=1")
    assert "--leader-elect" not in container(single)["args"]
    ledger_only = ["respread-eviction-ledger"]  # no Lease; the eviction ledger is still kept
    assert [r["metadata"]["name"] for r in rendered(single, "Role")] == ledger_only
    assert [b["metadata"]["name"] for b in rendered(single, "RoleBinding")] == ledger_only

    quiet = render(helm, "metrics.enabled=false")
    args = container(quiet)["args"]
    assert args[args.index("--metrics-port") + 1] == "0"
    assert [p["name"] for p in container(quiet)["ports"]] == ["health", "ready"]
    assert rendered(quiet, "Service") == []

    read_only = render(helm, "rbac.evict=false", "rbac.deletionCost=false", "rbac.surge=false")
    rules = cluster_rules(read_only)
    assert ("pods/eviction", "create") not in rules
    assert ("pods", "patch") not in rules and ("deployments", "patch") not in rules
    assert ("pods", "watch") in rules
    assert ("pods/eviction", "create") in cluster_rules(render(helm))

    digest = "sha256:" + "ab" * 32
    pinned = container(render(helm, f"image.digest={digest}", "image.repository=reg.example/r"))
    assert pinned["image"] == f"reg.example/r@{digest}"

    named = render(helm, release="platform")  # a release name without "respread" in it
    assert {d["metadata"]["name"] for d in rendered(named, "ClusterRole")} == {"platform-respread"}
    roles = {r["metadata"]["name"]: r for r in rendered(named, "Role")}
    assert set(roles) == {"platform-respread-leader-election", "platform-respread-eviction-ledger"}
    assert roles["platform-respread-leader-election"]["rules"][1]["resourceNames"] == [
        "platform-respread"
    ]
    assert roles["platform-respread-eviction-ledger"]["rules"][1]["resourceNames"] == [
        "respread-evictions"  # the operator's ledger has one name, in the release namespace
    ]
    lease = container(named)["args"]
    assert lease[lease.index("--lease-name") + 1] == "platform-respread"
    [sa] = rendered(named, "ServiceAccount")
    [binding] = rendered(named, "ClusterRoleBinding")
    assert binding["subjects"][0]["name"] == sa["metadata"]["name"] == "platform-respread"

    bounded = container(render(helm, "bounds.scanDeadline=10s", "bounds.connectTimeout=1s"))
    args = bounded["args"]
    assert args[args.index("--scan-deadline") + 1] == "10s"
    assert args[args.index("--connect-timeout") + 1] == "1s"
    assert "--plan-max-age" not in args and "--plan-max-age" not in container(render(helm))["args"]
    for setting in ("scanOnChange=0", "scanOnChange=2s"):
        prompted = container(render(helm, setting))["args"]
        assert prompted[prompted.index("--scan-on-change") + 1] == setting.split("=")[1]
    assert "--scan-on-change" not in container(render(helm))["args"]

    enforcing = render(helm, "defaultPolicy.spec.mode=Enforce", "defaultPolicy.name=prod")
    [policy] = rendered(enforcing, "RebalancePolicy")
    assert (policy["metadata"]["name"], policy["spec"]["mode"]) == ("prod", "Enforce")
    assert rendered(render(helm, "defaultPolicy.enabled=false"), "RebalancePolicy") == []


# --------------------------------------------------------------------------- on the control plane


@dataclass
class Release:
    name: str
    namespace: str
    policy: str
    helm: Tool
    kubectl: Tool

    def install(self, *values: str) -> subprocess.CompletedProcess[str]:
        sets = [a for v in (f"defaultPolicy.name={self.policy}", *values) for a in ("--set", v)]
        return self.helm(
            "install", self.name, str(CHART), "-n", self.namespace, "--create-namespace", *sets
        )

    def status(self) -> dict[str, Any]:
        out = self.helm("status", self.name, "-n", self.namespace, "-o", "json").stdout
        loaded: dict[str, Any] = json.loads(out)
        return loaded


@pytest.fixture
def release(
    control_plane: ControlPlane, helm: Tool, kubectl: Tool, core_v1: client.CoreV1Api
) -> Iterator[Release]:
    """A release name and namespace of its own (uninstalled, namespace deleted, afterwards)."""
    suffix = secrets.token_hex(3)
    made = Release(
        name=f"respread-chart-{suffix}",
        namespace=f"respread-chart-{suffix}",
        policy=f"chart-{suffix}",
        helm=helm.on(control_plane.kubeconfig),
        kubectl=kubectl.on(control_plane.kubeconfig),
    )
    yield made
    made.helm("uninstall", made.name, "-n", made.namespace, "--ignore-not-found", check=False)
    try:
        core_v1.delete_namespace(made.namespace)
    except ApiException as exc:
        if exc.status != 404:
            raise


@dataclass(frozen=True)
class Ports:
    health: int
    ready: int
    metrics: int


def operator_args(deployment: client.V1Deployment, namespace: str) -> tuple[list[str], Ports]:
    """The installed container's arguments, with free ports for health, readiness and metrics,
    and the namespace (the Lease's and the eviction ledger's) a pod would read from its service
    account."""
    [c] = deployment.spec.template.spec.containers
    ports = Ports(free_port(), free_port(), free_port())
    args = list(c.args)
    args[args.index("--liveness") + 1] = f"http://127.0.0.1:{ports.health}/healthz"
    args[args.index("--readiness") + 1] = f"http://127.0.0.1:{ports.ready}/readyz"
    args[args.index("--metrics-port") + 1] = str(ports.metrics)
    return [*args, "--lease-namespace", namespace], ports


@dataclass
class Operator:
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def test_the_chart_installs_and_the_operator_reaches_a_first_status_with_its_rbac_alone(
    control_plane: ControlPlane,
    release: Release,
    api_client: client.ApiClient,
    tmp_path: Path,
) -> None:
    out = release.install().stdout
    assert "STATUS: deployed" in out
    assert "kubectl respread status" in out  # NOTES.txt
    ext = client.ApiextensionsV1Api(api_client)
    wait_for(
        lambda: any(
            c.type == "Established" and c.status == "True"
            for c in ext.read_custom_resource_definition(CRD_NAME).status.conditions or []
        ),
        30,
        "the CRD (from the chart's crds/, or already there) to be established",
    )
    apps = client.AppsV1Api(api_client)
    deployment = apps.read_namespaced_deployment(release.name, release.namespace)
    assert deployment.spec.template.spec.service_account_name == release.name
    args, ports = operator_args(deployment, release.namespace)
    assert args[:2] == ["run", "--leader-elect"]

    kubeconfig = token_kubeconfig(
        control_plane.server,
        control_plane.ca_file,
        api_client,
        release.namespace,
        release.name,
        tmp_path / "sa.kubeconfig",
    )
    pod_name = f"{release.name}-{secrets.token_hex(3)}"
    log = tmp_path / "operator.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "respread.cli", *args[:1], "--kubeconfig", str(kubeconfig),
             *args[1:]],
            stdout=sink,
            stderr=subprocess.STDOUT,
            env={**os.environ, "POD_NAME": pod_name},
            cwd=REPO,
        )  # fmt: skip
    operator = Operator(proc, log)
    custom = client.CustomObjectsApi(api_client)
    try:
        t0 = time.monotonic()

        def first_status() -> dict[str, Any] | None:
            if proc.poll() is not None:
                return {"exited": proc.returncode}
            st = status_of(custom, release.policy)
            return st if st.get("lastScanTime") else None

        st = wait_for(first_status, FIRST_STATUS_TIMEOUT, "a first status on the chart's policy")
        assert "exited" not in st, log.read_text(errors="replace")[-4000:]
        conditions = {c["type"]: c["status"] for c in st["conditions"]}
        assert conditions["ScanSucceeded"] == "True", st
        print(f"first status {time.monotonic() - t0:.1f}s after the operator started")

        # As the chart's service account, and the leader on the chart's Lease.
        user = f"system:serviceaccount:{release.namespace}:{release.name}"
        writes = control_plane.audit.wait_for_events(
            lambda e: (
                e.get("objectRef", {}).get("name") == release.policy
                and e.get("objectRef", {}).get("subresource") == "status"
                and e.get("verb") in ("patch", "update")
            ),
            timeout=30,
        )
        assert {e["user"]["username"] for e in writes} == {user}
        lease = client.CoordinationV1Api(api_client).read_namespaced_lease(
            release.name, release.namespace
        )
        assert lease.spec.holder_identity == pod_name
        with urllib.request.urlopen(f"http://127.0.0.1:{ports.health}/healthz", timeout=10) as r:
            assert r.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{ports.ready}/readyz", timeout=10) as r:
            assert r.status == 200
        with urllib.request.urlopen(f"http://127.0.0.1:{ports.metrics}/metrics", timeout=10) as r:
            assert "respread_leader 1.0" in r.read().decode()
        the_ledger_and_no_other_config_map(kubeconfig, release.namespace)
    finally:
        operator.stop()


def the_ledger_and_no_other_config_map(kubeconfig: Path, namespace: str) -> None:
    """The chart's service account keeps the eviction ledger as an Enforce scan does (create
    it, read it, patch it with the version read, refused when that version is old) in the
    release namespace, and may read no other ConfigMap."""
    sa = api_client(str(kubeconfig))
    assert read_ledger(sa, namespace, LEDGER) == LedgerObject({}, None)
    assert write_ledger(sa, namespace, LEDGER, {"a": "[]"}, resource_version=None)
    first = read_ledger(sa, namespace, LEDGER)
    assert first.data == {"a": "[]"} and first.resource_version
    patched = {"a": None, "b": "[]"}
    assert write_ledger(sa, namespace, LEDGER, patched, resource_version=first.resource_version)
    assert read_ledger(sa, namespace, LEDGER).data == {"b": "[]"}
    stale = {"c": "[]"}
    assert not write_ledger(sa, namespace, LEDGER, stale, resource_version=first.resource_version)
    with pytest.raises(KubeError, match="HTTP 403"):
        read_ledger(sa, namespace, "kube-root-ca.crt")  # in every namespace


def test_upgrade_refuses_bad_values_takes_new_ones_and_the_crd_follows_the_documented_path(
    release: Release, api_client: client.ApiClient, tmp_path: Path
) -> None:
    release.install()
    assert release.status()["version"] == 1

    # Refused by the schema before anything changes.
    proc = release.helm(
        "upgrade", release.name, str(CHART), "-n", release.namespace, "--reuse-values",
        "--set", "defaultPolicy.spec.mode=Enforced", check=False,
    )  # fmt: skip
    assert proc.returncode != 0 and "/defaultPolicy/spec/mode" in proc.stderr
    assert release.status()["version"] == 1

    # A newer chart whose CRD changed: helm upgrade leaves the CRD alone (Helm never upgrades
    # crds/); the documented path applies it.
    newer = tmp_path / "respread"
    shutil.copytree(CHART, newer)
    crd_file = newer / "crds" / "rebalancepolicy.yaml"
    crd = yaml.safe_load(crd_file.read_text())
    marker = f"respread.io/chart-test-{secrets.token_hex(2)}"
    crd["metadata"]["labels"][marker] = "newer"
    crd_file.write_text(yaml.safe_dump(crd, sort_keys=False))
    release.helm(
        "upgrade", release.name, str(newer), "-n", release.namespace, "--reuse-values",
        "--set", "replicas=1", "--set", "leaderElection.enabled=false",
        "--set", "defaultPolicy.spec.schedule.interval=1m",
    )  # fmt: skip
    ext = client.ApiextensionsV1Api(api_client)
    assert marker not in (ext.read_custom_resource_definition(CRD_NAME).metadata.labels or {})
    manager = f"--field-manager=respread-chart-test-{secrets.token_hex(2)}"
    shown = release.helm("show", "crds", str(newer)).stdout
    try:
        release.kubectl(
            "apply", "--server-side", "--force-conflicts", manager, "-f", "-", stdin=shown
        )
        assert ext.read_custom_resource_definition(CRD_NAME).metadata.labels[marker] == "newer"
    finally:  # the same manager applies the chart's CRD again: the marker goes
        original = release.helm("show", "crds", str(CHART)).stdout
        release.kubectl(
            "apply", "--server-side", "--force-conflicts", manager, "-f", "-", stdin=original
        )
    assert marker not in (ext.read_custom_resource_definition(CRD_NAME).metadata.labels or {})

    # The new values took.
    assert release.status()["version"] == 2
    deployment = client.AppsV1Api(api_client).read_namespaced_deployment(
        release.name, release.namespace
    )
    assert deployment.spec.replicas == 1
    assert "--leader-elect" not in deployment.spec.template.spec.containers[0].args
    rbac = client.RbacAuthorizationV1Api(api_client)
    with pytest.raises(ApiException) as gone:
        rbac.read_namespaced_role(f"{release.name}-leader-election", release.namespace)
    assert gone.value.status == 404
    policy = client.CustomObjectsApi(api_client).get_cluster_custom_object(
        GROUP, VERSION, PLURAL, release.policy
    )
    assert policy["spec"]["schedule"] == {"interval": "1m"}


def test_uninstall_removes_everything_but_the_crd(
    release: Release, api_client: client.ApiClient
) -> None:
    release.install()
    rbac = client.RbacAuthorizationV1Api(api_client)
    custom = client.CustomObjectsApi(api_client)
    assert rbac.read_cluster_role(release.name).metadata.name == release.name
    release.helm("uninstall", release.name, "-n", release.namespace, "--wait")

    def gone(read: Any, *args: str) -> bool:
        try:
            read(*args)
        except ApiException as exc:
            return exc.status == 404
        return False

    core, apps = client.CoreV1Api(api_client), client.AppsV1Api(api_client)
    policy = client.PolicyV1Api(api_client)
    for read, args in [
        (rbac.read_cluster_role, (release.name,)),
        (rbac.read_cluster_role_binding, (release.name,)),
        (rbac.read_namespaced_role, (f"{release.name}-leader-election", release.namespace)),
        (apps.read_namespaced_deployment, (release.name, release.namespace)),
        (core.read_namespaced_service_account, (release.name, release.namespace)),
        (core.read_namespaced_service, (f"{release.name}-metrics", release.namespace)),
        (policy.read_namespaced_pod_disruption_budget, (release.name, release.namespace)),
        (lambda n: custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, n), (release.policy,)),
    ]:
        assert wait_for(lambda r=read, a=args: gone(r, *a), 30, f"{args} to be deleted")
    # Helm keeps what crds/ installed: other releases' policies live on.
    ext = client.ApiextensionsV1Api(api_client)
    assert ext.read_custom_resource_definition(CRD_NAME).metadata.name == CRD_NAME

"""deploy/monitoring/ against a real Prometheus scraping a real operator.

Two Deployments spread over two zones get a third (as when an autoscaler adds nodes): the skew
is 3 against maxSkew 1. One operator runs two policies scanning every 10 s: Enforce for the
first Deployment (it evicts), DryRun for the other (the violation lasts). A real Prometheus
(Debian's `prometheus` package) scrapes its /metrics every second. Then every dashboard panel
query is evaluated over the test's time range and every alert expression at its end: none may
error, every panel but "Scan failures" (no scan fails here) must return data, and the alerts'
expressions select exactly the DryRun policy's lasting violation. The operator's /metrics also
passes `promtool check metrics`.

Skipped, saying why, where Prometheus is not installed (hack/test installs it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from kube_harness import free_port
from kube_helpers import (
    AT_ONCE,
    create_policy,
    delete_policy,
    spread_deployment,
    status_of,
    wait_for,
    wait_pods_ready,
)
from kubernetes import client
from scene import Scene
from tests.support.processes import installed, stop

if TYPE_CHECKING:
    from operator_fixtures import StartOperator

pytestmark = pytest.mark.cluster
pytest_plugins = ["operator_fixtures"]  # crd, operator_factory

MONITORING = Path(__file__).resolve().parents[2] / "deploy" / "monitoring"
# Grafana's variables, as the dashboard would have them: every policy, a rate window of a few
# scrapes (the test scrapes every second).
GRAFANA_VARIABLES = {"$policy": ".*", "$__rate_interval": "10s"}
MAY_BE_EMPTY = {"Scan failures", "Surge operations"}  # nothing fails or surges in this test


class Prometheus:
    def __init__(self, binary: str, workdir: Path, target: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = workdir / "prometheus.yml"
        config.write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "scrape_configs": [
                        {"job_name": "respread", "static_configs": [{"targets": [target]}]}
                    ],
                }
            )
        )
        self.log = workdir / "prometheus.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    binary,
                    f"--config.file={config}",
                    f"--storage.tsdb.path={workdir / 'data'}",
                    f"--web.listen-address=127.0.0.1:{self.port}",
                    "--log.level=warn",
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        wait_for(self.ready, 60, "Prometheus to be ready")

    def ready(self) -> bool:
        assert self.proc.poll() is None, self.log.read_text()[-2000:]
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

    def api(self, path: str, **params: str) -> dict[str, Any]:
        """The response of /api/v1/<path>; a query error comes back as status "error"."""
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                body: dict[str, Any] = json.loads(r.read())
        except urllib.error.HTTPError as err:  # 400/422: a bad query, with the reason
            body = json.loads(err.read())
        return body

    def stop(self) -> None:
        stop(self.proc)


@pytest.fixture
def prometheus_binary() -> str:
    return installed("prometheus")


def dashboard_targets() -> list[tuple[str, str]]:
    dashboard = json.loads((MONITORING / "dashboard.json").read_text())
    out = []
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            expr = target["expr"]
            for var, value in GRAFANA_VARIABLES.items():
                expr = expr.replace(var, value)
            assert "$" not in expr, f"{panel['title']}: unknown variable in {expr}"
            out.append((panel["title"], expr))
    return out


def alert_exprs() -> list[tuple[str, str]]:
    spec = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())["spec"]
    return [(r["alert"], r["expr"]) for g in spec["groups"] for r in g["rules"]]


@pytest.fixture
def prometheus(prometheus_binary: str, tmp_path: Path) -> Iterator[Any]:
    started: list[Prometheus] = []

    def start(target: str) -> Prometheus:
        workdir = tmp_path / f"prometheus-{len(started)}"
        workdir.mkdir()
        started.append(Prometheus(prometheus_binary, workdir, target))
        return started[-1]

    yield start
    for p in started:
        p.stop()


def test_every_dashboard_query_and_alert_evaluates_on_a_scraped_operator(
    scene: Scene, operator_factory: StartOperator, prometheus: Any
) -> None:
    custom, core_v1, namespace, fake_nodes = scene.custom, scene.core, scene.namespace, scene.nodes
    # Two Deployments, each in its own namespace with its own policy: Enforce repairs `web`
    # (evictions), DryRun leaves `api` violated (lasting violations).
    watched = f"{namespace}-dry"
    core_v1.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=watched)))
    policies: list[str] = []
    try:
        fake_nodes.create_zones({"zone-a": 2, "zone-b": 2})
        for ns, app in ((namespace, "web"), (watched, "api")):
            scene.apps.create_namespaced_deployment(
                ns, spread_deployment(app, 6, node_selector=fake_nodes.node_selector)
            )
        for ns, app in ((namespace, "web"), (watched, "api")):
            wait_pods_ready(core_v1, ns, f"app={app}", 6)
        fake_nodes.create_zones({"zone-c": 2})  # 3/3/0: skew 3 > maxSkew 1, for both

        port = free_port()
        op = operator_factory("--metrics-port", str(port))
        prom = prometheus(f"127.0.0.1:{port}")
        start = time.time()
        enforce, dry = f"mon-{namespace}", f"mon-{watched}"
        for name, ns, mode in ((enforce, namespace, "Enforce"), (dry, watched, "DryRun")):
            # Costs written too (the Enforce policy's): the patches panel has data.
            costs = {"deletionCost": {"enabled": mode == "Enforce"}}
            create_policy(custom, name, ns, mode=mode, eviction=AT_ONCE, remediation=costs)
            policies.append(name)
        run_and_evaluate(custom, op, prom, port, start, enforce, dry)
    finally:
        for name in policies:
            delete_policy(custom, name)
        core_v1.delete_namespace(watched, propagation_policy="Background")


def run_and_evaluate(
    custom: client.CustomObjectsApi,
    op: Any,
    prom: Prometheus,
    port: int,
    start: float,
    enforce: str,
    dry: str,
) -> None:
    for name in (enforce, dry):
        wait_for(
            lambda name=name: status_of(custom, name).get("summary", {}).get("violations") == 1,  # type: ignore[misc]
            90,
            f"the violation reported by {name}",
        )

    def scraped(query: str) -> bool:
        result = prom.api("query", query=query)
        assert result["status"] == "success", result
        return bool(result["data"]["result"])

    # Evictions happened and were scraped, and Prometheus saw the DryRun policy scan a few times.
    wait_for(
        lambda: scraped(
            f'sum(respread_evictions_total{{policy="{enforce}", result="Evicted"}}) > 0'
        ),
        120,
        "an eviction scraped by Prometheus",
    )
    wait_for(
        lambda: scraped(
            f'changes(respread_last_scan_timestamp_seconds{{policy="{dry}"}}[5m]) >= 3'
        ),
        90,
        "three more scans of the DryRun policy scraped",
    )
    wait_for(
        lambda: status_of(custom, enforce).get("summary", {}).get("violations") == 0,
        120,
        "the Enforce policy to repair its Deployment",
    )
    time.sleep(3)  # a few more samples after the last change
    end = time.time()
    assert op.alive, op.text()[-3000:]

    empty, errors = [], []
    for title, expr in dashboard_targets():
        result = prom.api(
            "query_range", query=expr, start=f"{start:.3f}", end=f"{end:.3f}", step="1"
        )
        if result["status"] != "success":
            errors.append(f"{title}: {expr}: {result.get('error')}")
        elif not result["data"]["result"] and title not in MAY_BE_EMPTY:
            empty.append(f"{title}: {expr}")
    firing: dict[str, list[dict[str, str]]] = {}
    for alert, expr in alert_exprs():
        result = prom.api("query", query=expr, time=f"{end:.3f}")
        if result["status"] != "success":
            errors.append(f"alert {alert}: {expr}: {result.get('error')}")
        else:
            firing[alert] = [r["metric"] for r in result["data"]["result"]]
    assert errors == []
    assert empty == []

    # What the alerts' expressions say about this operator (their `for:` aside): the DryRun
    # policy's violation has lasted through its scans; nothing else is wrong.
    assert firing == {
        "RespreadScansFailing": [],
        "RespreadScansStale": [],
        "RespreadNoLeader": [],
        "RespreadViolationsPersist": [{"policy": dry}],
        "RespreadEvictionsFailing": [],
        "RespreadSurgeStuck": [],
    }

    # The values the key panels show are the operator's.
    skew = prom.api("query_range", query=f'max(respread_skew{{policy="{dry}"}})',
                    start=f"{start:.3f}", end=f"{end:.3f}", step="1")  # fmt: skip
    assert {float(v) for _, v in skew["data"]["result"][0]["values"]} == {3.0}

    # The operator's own exposition is clean for promtool.
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        exposition = r.read()
    promtool = shutil.which("promtool")
    assert promtool is not None  # Debian's prometheus package ships both
    check = subprocess.run(
        [promtool, "check", "metrics"], input=exposition, capture_output=True, check=False
    )
    assert check.returncode == 0, (check.stdout + check.stderr).decode()

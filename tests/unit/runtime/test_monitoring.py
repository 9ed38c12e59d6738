"""deploy/monitoring/: the alerts pass their `promtool test rules` unit tests, every alert has
one, and the dashboard and the alerts only use metrics the operator exports. (Every query is
evaluated against a real Prometheus scraping a real operator in
tests/cluster/test_monitoring.py.)

promtool comes with Debian's `prometheus` package; hack/test installs it. Without it the promtool
tests skip, saying so.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client import generate_latest

from respread.runtime import metrics
from tests.support.paths import REPO
from tests.support.processes import installed

MONITORING = REPO / "deploy" / "monitoring"
METRIC = re.compile(r"\brespread_[a-z_]+")


def promtool(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [installed("promtool"), *args], cwd=cwd, capture_output=True, text=True, check=False
    )


def rule_groups() -> dict[str, Any]:
    rule: dict[str, Any] = yaml.safe_load((MONITORING / "prometheusrule.yaml").read_text())
    assert rule["kind"] == "PrometheusRule"
    spec: dict[str, Any] = rule["spec"]
    return spec


def alerts() -> list[dict[str, Any]]:
    return [r for g in rule_groups()["groups"] for r in g["rules"] if "alert" in r]


def dashboard_queries() -> list[str]:
    dashboard = json.loads((MONITORING / "dashboard.json").read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p["targets"]]


def exported_names() -> set[str]:
    """Every sample name the operator's registry can expose."""
    names = set()
    for family in metrics.REGISTRY.collect():
        base = family.name
        suffixes = {
            "counter": ("_total", "_created"),
            "histogram": ("_bucket", "_sum", "_count", "_created"),
        }.get(family.type, ("",))
        names |= {base + s for s in suffixes}
    return names


@pytest.fixture
def rules_dir(tmp_path: Path) -> Path:
    """The PrometheusRule's groups as a plain rule file, beside the unit tests that load it."""
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump(rule_groups()))
    shutil.copy(MONITORING / "tests" / "alerts-test.yaml", tmp_path)
    return tmp_path


def test_the_alert_rules_are_valid_and_pass_their_unit_tests(rules_dir: Path) -> None:
    check = promtool(rules_dir, "check", "rules", "rules.yaml")
    assert check.returncode == 0, check.stdout + check.stderr
    assert f"SUCCESS: {len(alerts())} rules found" in check.stdout
    test = promtool(rules_dir, "test", "rules", "alerts-test.yaml")
    assert test.returncode == 0, test.stdout + test.stderr
    assert "SUCCESS" in test.stdout


def test_every_alert_has_a_unit_test_where_it_fires_and_one_where_it_does_not() -> None:
    tests = yaml.safe_load((MONITORING / "tests" / "alerts-test.yaml").read_text())["tests"]
    cases = [c for t in tests for c in t["alert_rule_test"]]
    names = [a["alert"] for a in alerts()]
    assert len(names) == len(set(names)) >= 5
    for name in names:
        mine = [c for c in cases if c["alertname"] == name]
        assert any(c["exp_alerts"] for c in mine), f"{name}: no test where it fires"
        assert any(not c["exp_alerts"] for c in mine), f"{name}: no test where it stays quiet"


def test_the_dashboard_and_the_alerts_use_only_exported_metrics() -> None:
    exported = exported_names()
    used = {
        m for q in dashboard_queries() + [a["expr"] for a in alerts()] for m in METRIC.findall(q)
    }
    assert used, "no respread metric used at all"
    assert used <= exported, f"not exported by the operator: {sorted(used - exported)}"


def test_the_dashboard_covers_what_operators_watch() -> None:
    dashboard = json.loads((MONITORING / "dashboard.json").read_text())
    panels = dashboard["panels"]
    assert len({p["id"] for p in panels}) == len(panels)
    queries = " ".join(dashboard_queries())
    for metric in (
        "respread_violations",
        "respread_skew",
        "respread_planned_evictions",
        "respread_evictions_total",
        "respread_scan_duration_seconds_bucket",
        "respread_scan_failures_total",
        "respread_deletion_cost_patches_total",
        "respread_surges_total",
        "respread_surges_in_flight",
        "respread_surge_overdue_seconds",
    ):
        assert metric in queries, metric


@pytest.fixture
def every_metric_set() -> Iterator[None]:
    """One sample of every labelled metric (removed afterwards: the registry is global)."""
    policy = "promtool-check"
    labels = (policy, "ns", "Deployment/web", "topology.kubernetes.io/zone", "")
    leader = metrics.LEADER._value.get()
    metrics.VIOLATIONS.labels(policy).set(1)
    metrics.SKEW.labels(*labels).set(2)
    metrics.MISPLACED.labels(*labels).set(1)
    metrics.OUTAGES.labels(policy, "topology.kubernetes.io/zone", "zone-a").set(1)
    metrics.PLANNED.labels(policy, "Planned").set(1)
    metrics.EVICTIONS.labels(policy, "Evicted").inc()
    metrics.SCAN_SECONDS.labels(policy).observe(0.2)
    metrics.SCAN_FAILURES.labels(policy).inc()
    metrics.LAST_SCAN.labels(policy).set(1.7e9)
    metrics.LEADER.set(1)
    metrics.SURGES.labels(policy, "started").inc()
    yield
    metrics.forget_policy(policy)
    metrics.LEADER.set(leader)


def test_the_exposition_passes_promtool_check_metrics(every_metric_set: None) -> None:
    exposition = generate_latest(metrics.REGISTRY)
    assert b'workload="Deployment/web"' in exposition
    proc = subprocess.run(
        [installed("promtool"), "check", "metrics"],
        input=exposition,
        capture_output=True,
        check=False,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr).decode()


def test_a_deleted_policy_leaves_no_series_behind(every_metric_set: None) -> None:
    """Every metric labelled with a policy is in metrics.PER_POLICY, and forget_policy (run
    when a policy is deleted) removes all of them; forget (run by each scan) only the findings.
    deploy/monitoring/tests/alerts-test.yaml shows the alerts staying quiet after a deletion."""
    policy = "promtool-check"
    metrics.COST_PATCHES.labels(policy, "Written").inc()
    labelled = {
        family.name
        for family in metrics.REGISTRY.collect()
        if any("policy" in s.labels for s in family.samples)
    }
    assert labelled == {m._name for m in metrics.PER_POLICY}, labelled
    metrics.forget(policy)
    assert not [
        n
        for n in metrics.series_of(policy)
        if n in ("respread_skew", "respread_misplaced_pods", "respread_domain_outages")
    ]
    assert "respread_last_scan_timestamp_seconds" in metrics.series_of(policy)
    metrics.forget_policy(policy)
    assert metrics.series_of(policy) == []

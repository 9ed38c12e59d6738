"""The operator's decisions that need no cluster: the bounded status, what an eviction answer
means (loop protection and pacing: tests/unit/remedies/evict/test_history.py)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from kubernetes.client.exceptions import ApiException

from respread.analysis.groups import analyze
from respread.inputs.objects import load_texts
from respread.inputs.policy import (
    DEFAULT_POLICY,
    DeletionCostSettings,
    RebalancePolicy,
    RemediationSettings,
)
from respread.kube.evictions import Outcome, Result, TransientError, classify
from respread.remedies.choose import apply_remediation
from respread.remedies.evict.planner import plan
from respread.report.build import build_report
from respread.report.contract import conditions_status_json, status_json
from respread.report.model import Execution, Report, StepStatus
from respread.report.status import build_status, failed_scan_status
from tests.support.constants import NOW
from tests.support.paths import EXAMPLES
from tests.support.tables import cases

LATER = "2026-11-22T10:05:00Z"


def report_for(example: str, policy: RebalancePolicy = DEFAULT_POLICY) -> Report:
    texts = [(str(p), p.read_text()) for p in sorted((EXAMPLES / example).glob("*.yaml"))]
    state = load_texts(texts).state
    analysis = analyze(state, policy)
    return build_report(analysis, apply_remediation(plan(analysis, policy), policy), policy)


# ---- status -------------------------------------------------------------------------------


def test_status_digests_the_report() -> None:
    status = status_json(build_status(report_for("zone-scale-down"), DEFAULT_POLICY, NOW))
    assert status["lastScanTime"] == NOW
    assert status["summary"]["violations"] == 1
    (v,) = status["violations"]
    assert v["domains"] == {
        "count": 3,
        "max": {"name": "eu-west-1a", "pods": 4},
        "min": {"name": "eu-west-1b", "pods": 1},
    }
    assert v["since"] == NOW
    states = [s["state"] for s in status["plan"]]
    assert states == ["Planned", "Deferred"]
    assert {c["type"]: c["status"] for c in status["conditions"]} == {
        "Ready": "True",
        "ScanSucceeded": "True",
        "Balanced": "False",
        "InputComplete": "True",
        "PodsSelected": "True",
    }


@pytest.mark.parametrize(
    ("remediation", "remedy"),
    [
        (RemediationSettings(), "Evict"),
        (
            RemediationSettings(evict=False, deletion_cost=DeletionCostSettings(enabled=True)),
            "DeletionCost",
        ),
        (RemediationSettings(evict=False), None),
    ],
    ids=["eviction", "deletion cost when eviction is off", "none allowed"],
)
def test_status_violations_name_the_chosen_remedy(
    remediation: RemediationSettings, remedy: str | None
) -> None:
    policy = replace(DEFAULT_POLICY, remediation=remediation)
    (v,) = status_json(build_status(report_for("zone-scale-down", policy), policy, NOW))[
        "violations"
    ]
    assert v.get("remedy") == remedy


def test_since_and_transition_times_carry_over_between_scans() -> None:
    report = report_for("zone-scale-down")
    first = status_json(build_status(report, DEFAULT_POLICY, NOW))
    second = build_status(report, DEFAULT_POLICY, LATER, previous=first)
    assert second.violations[0].since == NOW
    balanced = {c.type: c for c in second.conditions}["Balanced"]
    assert balanced.last_transition_time == NOW  # still False: no transition


def test_executions_replace_planned_states() -> None:
    report = report_for("zone-scale-down")
    step = report.evictions[0]
    refused = Execution(
        step.pod.namespace, step.pod.name, StepStatus.BLOCKED, "refused by a budget"
    )
    status = build_status(report, DEFAULT_POLICY, NOW, executions=[refused])
    assert status.plan[0].state is StepStatus.BLOCKED
    assert status.summary.evicted == 0
    assert status.summary.counts.blocked == 1


def test_status_lists_are_bounded_and_totals_kept() -> None:
    report = report_for("zone-scale-down")
    report = replace(report, violations=report.violations * 50, deferred=report.deferred * 80)
    policy = replace(DEFAULT_POLICY, report_max_items=5)
    status = status_json(build_status(report, policy, NOW))
    assert len(status["violations"]) == 5 and status["violationsTotal"] == 50
    assert len(status["plan"]) == 5 and status["planTotal"] == 81
    assert len(json.dumps(status)) < 20_000


def test_a_failed_scan_keeps_the_last_report_and_says_why() -> None:
    good = status_json(build_status(report_for("zone-scale-down"), DEFAULT_POLICY, NOW))
    patch = conditions_status_json(
        failed_scan_status(DEFAULT_POLICY, LATER, "KubeError: connection refused", previous=good)
    )
    conditions = {c["type"]: c for c in patch["conditions"]}
    assert conditions["ScanSucceeded"]["status"] == "False"
    assert "connection refused" in conditions["ScanSucceeded"]["message"]
    assert conditions["ScanSucceeded"]["lastTransitionTime"] == LATER
    assert conditions["Balanced"]["status"] == "False"  # the last report's verdict stands
    assert "violations" not in patch and "summary" not in patch


# ---- eviction answers ---------------------------------------------------------------------


def api_error(
    status: int,
    message: str,
    causes: list[dict[str, str]] | None = None,
    headers: dict[str, str] | None = None,
) -> ApiException:
    err = ApiException(status=status, reason="reason")
    err.body = json.dumps(
        {"kind": "Status", "message": message, "details": {"causes": causes or []}}
    )
    err.headers = headers or {}
    return err


CLASSIFY_CASES = [
    (
        "budget refusal",
        api_error(
            429,
            "Cannot evict pod as it would violate the pod's disruption budget.",
            [{"reason": "DisruptionBudget"}],
        ),
        Result.BLOCKED,
    ),
    (
        "multiple budgets",
        api_error(
            500,
            "This pod has more than one PodDisruptionBudget, which "
            "the eviction subresource does not support.",
        ),
        Result.BLOCKED,
    ),
    ("gone", api_error(404, 'pods "x" not found'), Result.FAILED),
    ("forbidden", api_error(403, "forbidden"), Result.FAILED),
    ("uid changed", api_error(409, "Precondition failed: UID in precondition"), Result.FAILED),
]


@cases(("err", "result"), CLASSIFY_CASES)
def test_final_answers_are_not_retried(err: ApiException, result: Result) -> None:
    verdict = classify(err)
    assert isinstance(verdict, Outcome)
    assert verdict.result is result


@pytest.mark.parametrize(
    ("err", "delay"),
    [
        (api_error(429, "too many requests", headers={"Retry-After": "3"}), 3.0),
        (api_error(429, "too many requests"), None),
        (api_error(503, "unavailable"), None),
        (api_error(500, "etcdserver: request timed out"), None),
    ],
    ids=["throttled with Retry-After", "throttled", "unavailable", "server error"],
)
def test_transient_failures_are_retried(err: ApiException, delay: float | None) -> None:
    verdict = classify(err)
    assert isinstance(verdict, TransientError)
    assert verdict.retry_after == delay

"""`respread run --leader-elect ...`: the flags become the Election the operator runs with."""

from __future__ import annotations

from typing import Any

import pytest

from respread import cli
from respread.kube.client import Timeouts
from respread.runtime import operator as operator_module
from respread.runtime.guard import ScanLimits
from respread.runtime.heartbeat import PauseSettings
from respread.runtime.leadership import LeaseTiming
from respread.runtime.operator import Bounds, Election
from respread.runtime.prompt import PromptSettings


@pytest.fixture
def runs(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []
    monkeypatch.setattr(operator_module, "run", lambda **kw: calls.append(kw))
    return calls


def test_standalone_by_default(runs: list[dict[str, Any]]) -> None:
    assert cli.main(["run", "--metrics-port", "0"]) == 0
    assert runs == [
        {
            "kubeconfig": None,
            "election": None,
            "liveness": None,
            "metrics_port": None,
            "bounds": Bounds(),
            "readiness": None,
            "namespace": None,
            "prompts": PromptSettings(),
        }
    ]


def test_every_bound_from_its_flag_else_its_variable(
    runs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RESPREAD_SCAN_DEADLINE", "20s")
    monkeypatch.setenv("RESPREAD_REQUEST_TIMEOUT", "9s")
    cli.main(["run", "--request-timeout", "2s", "--pause-threshold", "1s", "--catch-up", "500ms"])
    (call,) = runs
    bounds = call["bounds"]
    assert bounds.timeouts == Timeouts(connect=5.0, read=2.0)  # the flag over the variable
    assert bounds.scan == ScanLimits(deadline=20.0, plan_age=60.0, catch_up=0.5)
    assert bounds.pauses == PauseSettings(period=0.25, threshold=1.0)


@pytest.mark.parametrize("flag", ["--scan-deadline", "--request-timeout", "--pause-threshold"])
def test_a_bad_bound_is_a_usage_error(
    runs: list[dict[str, Any]], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", flag, "0s"]) == 2
    assert f"{flag}: must be more than 0" in capsys.readouterr().err
    assert runs == []


# (case, flag arguments, RESPREAD_SCAN_ON_CHANGE, the quiet time the operator runs with)
PROMPTS = [
    ("the default", [], None, 1.0),
    ("the variable", [], "3s", 3.0),
    ("the flag over the variable", ["--scan-on-change", "500ms"], "3s", 0.5),
    ("0 turns prompting off", ["--scan-on-change", "0"], None, 0.0),
]


@pytest.mark.parametrize(
    ("args", "variable", "quiet"), [c[1:] for c in PROMPTS], ids=[c[0] for c in PROMPTS]
)
def test_scan_on_change_from_its_flag_else_its_variable(
    runs: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
    variable: str | None,
    quiet: float,
) -> None:
    if variable is not None:
        monkeypatch.setenv("RESPREAD_SCAN_ON_CHANGE", variable)
    assert cli.main(["run", *args]) == 0
    (call,) = runs
    assert call["prompts"].quiet == quiet
    assert call["prompts"].enabled is (quiet > 0)


def test_a_bad_scan_on_change_is_a_usage_error(
    runs: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "--scan-on-change", "soon"]) == 2
    assert "--scan-on-change: expected a duration" in capsys.readouterr().err
    assert runs == []


def test_leader_elect_with_defaults(runs: list[dict[str, Any]]) -> None:
    assert cli.main(["run", "--leader-elect"]) == 0
    (call,) = runs
    assert call["election"] == Election("respread", None, None, LeaseTiming(15, 10, 2))


def test_leader_elect_with_every_flag(runs: list[dict[str, Any]]) -> None:
    assert (
        cli.main(
            [
                "run",
                "--leader-elect",
                "--lease-name",
                "rs",
                "--lease-namespace",
                "ops",
                "--lease-duration",
                "6s",
                "--identity",
                "op-a",
            ]
        )
        == 0
    )
    (call,) = runs
    assert call["election"] == Election("rs", "ops", "op-a", LeaseTiming.for_duration(6))


@pytest.mark.parametrize("duration", ["soon", "500ms", "6"])
def test_a_bad_lease_duration_is_a_usage_error(
    runs: list[dict[str, Any]], duration: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["run", "--leader-elect", "--lease-duration", duration]) == 2
    assert "--lease-duration" in capsys.readouterr().err
    assert runs == []

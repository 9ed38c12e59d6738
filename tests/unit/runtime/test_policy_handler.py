"""The operator's handler of RebalancePolicy watch events (runtime/operator.py's _on_policy):
scheduled, unscheduled, and an invalid policy reported in its status by the leader only."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import kopf
import pytest
from kubernetes import client

from respread.core.timestamps import parse_rfc3339
from respread.remedies.cost.release import FINALIZER
from respread.runtime import operator as operator_module
from respread.runtime.operator import App, _on_policy

API = cast(client.ApiClient, object())  # never called: patch_status is replaced
# Valid for the API server, refused by respread: February has no 30th (docs/limits.md).
NEVER_FIRES = "0 0 30 2 *"


def body(name: str, cron: str = "*/5 * * * *", **metadata: Any) -> kopf.Body:
    return cast(
        kopf.Body,
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": name, "uid": f"uid-{name}", "generation": 3, **metadata},
            "spec": {"schedule": {"cron": cron}},
            "status": {"lastScanTime": "2030-01-01T00:00:00Z"},
        },
    )


class Jobs:
    """The part of APScheduler's scheduler that App uses."""

    def __init__(self) -> None:
        self.ids: set[str] = set()

    def add_job(self, *_: Any, id: str, **__: Any) -> None:
        self.ids.add(id)

    def get_job(self, id: str) -> object | None:
        return id if id in self.ids else None

    def remove_job(self, id: str) -> None:
        self.ids.discard(id)


@pytest.fixture
def written(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """The statuses written, as (policy, status)."""
    out: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(
        operator_module, "patch_status", lambda api, name, status: out.append((name, status))
    )
    return out


@pytest.fixture
def app() -> App:
    app = App(api=API)
    app.scheduler = cast(Any, Jobs())
    return app


def test_a_valid_policy_is_scheduled_with_its_status_remembered(
    app: App, written: list[tuple[str, dict[str, Any]]]
) -> None:
    _on_policy(app, "ADDED", body("p"))
    assert app.policies["p"][1] == "uid-p"
    assert app.policies["p"][0].schedule.cron == "*/5 * * * *"
    assert app.statuses["p"] == {"lastScanTime": "2030-01-01T00:00:00Z"}
    assert cast(Jobs, app.scheduler).ids == {"p"}
    _on_policy(app, "DELETED", body("p"))
    assert "p" not in app.policies
    assert cast(Jobs, app.scheduler).ids == set()
    assert written == []


def test_an_invalid_policy_is_unscheduled_and_its_status_says_why(
    app: App, written: list[tuple[str, dict[str, Any]]]
) -> None:
    _on_policy(app, "ADDED", body("p"))
    _on_policy(app, "MODIFIED", body("p", NEVER_FIRES))
    assert "p" not in app.policies
    assert cast(Jobs, app.scheduler).ids == set()
    [(name, status)] = written
    assert name == "p"
    assert status["observedGeneration"] == 3
    [condition] = status["conditions"]
    assert condition["type"] == "Ready"
    assert condition["status"] == "False"
    assert condition["reason"] == "InvalidPolicy"
    assert "RebalancePolicy p" in condition["message"]
    assert "spec.schedule.cron" in condition["message"]
    parse_rfc3339(condition["lastTransitionTime"])  # an RFC 3339 time


def test_a_follower_reports_nothing_about_an_invalid_policy(
    app: App, written: list[tuple[str, dict[str, Any]]]
) -> None:
    app.elector = cast(Any, SimpleNamespace(leading=False))
    _on_policy(app, "ADDED", body("p", NEVER_FIRES))
    assert "p" not in app.policies
    assert written == []


def test_an_invalid_policy_being_deleted_still_takes_its_costs_back(
    app: App, written: list[tuple[str, dict[str, Any]]]
) -> None:
    deleting = {"deletionTimestamp": "2030-01-01T00:00:00Z", "finalizers": [FINALIZER]}
    _on_policy(app, "MODIFIED", body("p", NEVER_FIRES, **deleting))
    policy, uid = app.policies["p"]
    assert (policy.name, uid) == ("p", "uid-p")
    assert policy.schedule.cron is None  # the defaults', under the policy's name
    assert app.lifecycles["p"].deleting_since == parse_rfc3339("2030-01-01T00:00:00Z")
    assert written == []

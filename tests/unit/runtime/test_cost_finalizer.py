"""A policy being deleted: its costs taken back in bounded passes, then the finalizer removed
(runtime/costs.py `take_back`, the API calls replaced); the operator schedules those passes."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import Any, cast

import pytest
from kubernetes import client

from respread.core.annotations import COST_POLICY, COST_WRITTEN, DELETION_COST
from respread.inputs.policy import DEFAULT_POLICY, DeletionCostSettings, RemediationSettings
from respread.kube.annotations import CostResult, CostWrite
from respread.remedies.cost.release import (
    FINALIZER,
    FINALIZER_TIMEOUT,
    RELEASE_INTERVAL,
    SETTLE,
    Lifecycle,
)
from respread.runtime import costs as costs_module
from respread.runtime import policy_events
from respread.runtime.cache import WATCHED, ClusterCache
from respread.runtime.memory import PolicyMemory
from respread.runtime.operator import App

API = cast(client.ApiClient, object())
POLICY = replace(
    DEFAULT_POLICY,
    name="p",
    remediation=RemediationSettings(
        deletion_cost=DeletionCostSettings(enabled=True, max_patches_per_scan=2)
    ),
)


def costed_pod(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"uid-{name}",
            "annotations": {DELETION_COST: "1", COST_POLICY: "p", COST_WRITTEN: "1"},
            "managedFields": [
                {
                    "manager": "respread",
                    "operation": "Update",
                    "fieldsV1": {"f:metadata": {"f:annotations": {f"f:{DELETION_COST}": {}}}},
                }
            ],
        },
        "spec": {"nodeName": "n1", "containers": [{"name": "c"}]},
        "status": {"phase": "Running"},
    }


def cache_with(*names: str) -> ClusterCache:
    cache = ClusterCache()
    for w in WATCHED:
        keys = set()
        if w.kind == "Pod":
            keys = {cache.apply("Pod", None, costed_pod(n)) for n in names}
        cache.begin_listing(w.kind)
        cache.end_listing(w.kind, keys)
    return cache


class Calls:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.released: list[str] = []
        self.finalizers: list[bool] = []
        self.events: list[tuple[str, bool]] = []
        self.statuses: list[dict[str, Any]] = []

        def release_cost(api: object, namespace: str, name: str, **_: object) -> CostWrite:
            self.released.append(name)
            return CostWrite(namespace, name, CostResult.REMOVED, "")

        def set_finalizer(api: object, policy: str, finalizer: str, *, present: bool) -> bool:
            assert finalizer == FINALIZER
            self.finalizers.append(present)
            return True

        def post_policy_event(
            api: object, policy: str, uid: str | None, reason: str, *, warning: bool, **_: object
        ) -> None:
            self.events.append((reason, warning))

        def patch_status(api: object, name: str, status: dict[str, Any]) -> None:
            self.statuses.append(status)

        for fn in (release_cost, set_finalizer, patch_status):
            monkeypatch.setattr(costs_module, fn.__name__, fn)
        monkeypatch.setattr(policy_events, "post_policy_event", post_policy_event)


def deletion_pass(cache: ClusterCache, lifecycle: Lifecycle, now: float) -> None:
    asyncio.run(
        costs_module.take_back(
            API,
            cache,
            POLICY,
            PolicyMemory(),
            "uid",
            lifecycle=lifecycle,
            others=[],
            acting=lambda: True,
            now=now,
        )
    )


@pytest.mark.parametrize(
    ("pods", "lifecycle", "released", "finalizer", "events"),
    [
        # bounded by maxPatchesPerScan (2): the finalizer stays while costs remain
        (
            ("a", "b", "c"),
            Lifecycle(1000.0, True),
            ["a", "b"],
            [],
            [("DeletionCostUpdated", False)],
        ),
        # the last ones: the finalizer goes in the same pass
        (("a",), Lifecycle(1000.0, True), ["a"], [False], [("DeletionCostUpdated", False)]),
        # nothing left: the finalizer goes, no Event
        ((), Lifecycle(1000.0, True), [], [False], []),
        ((), Lifecycle(1000.0, True, seen=1000.0 - SETTLE), [], [False], []),
        # ... but not within SETTLE of this operator seeing the deletion (a write of a scan
        # running then may not be in the watch cache yet)
        ((), Lifecycle(1000.0, True, seen=1000.0 - SETTLE + 1), [], [], []),
        # past the timeout with costs left: the finalizer goes anyway, with a Warning
        (
            ("a", "b", "c"),
            Lifecycle(1000.0 - FINALIZER_TIMEOUT - 1, True),
            ["a", "b"],
            [False],
            [("DeletionCostUpdated", False), ("DeletionCostAbandoned", True)],
        ),
        # not respread's finalizer: nothing is done
        (("a",), Lifecycle(1000.0, False), [], [], []),
    ],
)
def test_a_deletion_pass(
    monkeypatch: pytest.MonkeyPatch,
    pods: tuple[str, ...],
    lifecycle: Lifecycle,
    released: list[str],
    finalizer: list[bool],
    events: list[tuple[str, bool]],
) -> None:
    calls = Calls(monkeypatch)
    deletion_pass(cache_with(*pods), lifecycle, now=1000.0)
    assert calls.released == released
    assert calls.finalizers == finalizer
    assert calls.events == events
    if lifecycle.finalizer:
        (status,) = calls.statuses
        assert status["deletionCost"]["removed"] == len(released)
        assert status["deletionCost"]["managed"] == len(pods) - len(released)


class Scheduler:
    def __init__(self) -> None:
        self.jobs: list[tuple[str, Any]] = []

    def add_job(self, fn: object, trigger: Any, *, id: str, **_: object) -> None:
        self.jobs.append((id, trigger))


def test_a_policy_being_deleted_is_passed_over_every_release_interval_and_covers_nothing() -> None:
    app = App(api=API)
    scheduler = Scheduler()
    app.scheduler = cast(Any, scheduler)
    other = replace(POLICY, name="q")
    app.schedule(POLICY, "uid")
    app.schedule(other, "uid-q")
    assert [p.name for p in app.others("q")] == ["p"]
    app.schedule(POLICY, "uid", Lifecycle(deleting_since=1.0, finalizer=True))
    seen = app.lifecycles["p"].seen
    assert seen is not None  # when this operator saw the deletion
    app.schedule(POLICY, "uid", Lifecycle(deleting_since=1.0, finalizer=True))  # no change
    assert app.lifecycles["p"].seen == seen
    assert [job for job, _ in scheduler.jobs] == ["p", "q", "p"]
    assert scheduler.jobs[-1][1].interval.total_seconds() == RELEASE_INTERVAL
    assert app.others("q") == []  # a policy being deleted keeps no other's costs

"""The landing prediction (surge.py): the PodTopologySpread Filter exactly, the least crowded
admitted domain as the likely choice, and, when the Filter admits more or less crowded domains
too (maxSkew above 1), the landing reported as not determined with the worst admissible case.

Zones a, b, c, d, one node each; web's pods all on zone a at first.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from respread.report.build import surge_plan_entry, surge_steps
from respread.report.contract import surge_plan_json
from tests.unit.remedies.surge.test_plan import WEB, cluster, policy_with, run


def with_max_skew(docs: list[dict[str, Any]], max_skew: int) -> list[dict[str, Any]]:
    """The documents with every spread constraint at ``max_skew`` (a deep copy)."""
    out: list[dict[str, Any]] = json.loads(json.dumps(docs))
    for d in out:
        spec = d.get("spec") or {}
        for holder in (spec, ((spec.get("template") or {}).get("spec") or {})):
            for c in holder.get("topologySpreadConstraints") or ():
                c["maxSkew"] = max_skew
    return out


ZONES = ("a", "b", "c", "d")


@pytest.mark.parametrize(
    ("pods", "max_skew", "max_surge", "surge", "determined", "worst"),
    [
        # 6/0/0/0 at maxSkew 2: 3 moves. Likely b, c, d (the least crowded, 3/1/1/1 after the
        # victims); but the Filter also admits a pod in b again (1 + 1 - 0 <= 2): b, b, c then
        # 3 victims leave 3/2/1/0, skew 3. Within maxSurge 3: planned, the worst case said.
        ([("a", "Ready")] * 6, 2, 3, 3, False, 3),
        # With maxSurge 5, 4 extra replicas fix it in the worst admissible case too.
        ([("a", "Ready")] * 6, 2, 5, 4, False, 0),
        # maxSkew 1: 4/1/1/0; the Filter admits only the least crowded domains: determined.
        ([("a", "Ready")] * 4 + [("b", "Ready"), ("c", "Ready")], 1, 3, 2, True, 0),
    ],
)
def test_the_landing_at_max_skew(
    pods: list[tuple[str, str]],
    max_skew: int,
    max_surge: int,
    surge: int,
    determined: bool,
    worst: int,
) -> None:
    docs = with_max_skew(cluster(pods, zones=ZONES), max_skew)
    policy = policy_with(max_surge=max_surge)
    _, _, report = run(docs, policy)
    (plan,) = report.plans
    assert plan.workload == WEB
    assert plan.surge == surge
    assert plan.misplaced_after == 0  # the likely placement fixes it
    assert plan.determined is determined
    assert plan.worst_misplaced == worst
    entry = surge_plan_json(surge_plan_entry(plan, policy))
    assert entry["landingDetermined"] is determined
    assert entry["worstCaseMisplacedAfter"] == worst
    first = surge_steps(plan, policy)[0]
    assert ("not determined" in first) is (not determined), first
    if worst:
        assert f"would leave {worst} misplaced pod(s)" in first, first


def test_the_likely_landing_is_the_least_crowded_admitted_domain() -> None:
    docs = with_max_skew(cluster([("a", "Ready")] * 6, zones=ZONES), 2)
    _, _, report = run(docs, policy_with(max_surge=3))
    (plan,) = report.plans
    zones = [dict(lnd.domains)["zone"] for lnd in plan.landings]
    assert sorted(zones) == ["b", "c", "d"]
    # the first pod: b, c and d are as crowded (equivalent); nothing else passes the Filter
    assert plan.landings[0].others == ()
    # the second: one of the empty zones is likely, the one already taken passes too
    assert [dict(d)["zone"] for d in plan.landings[1].others] == [zones[0]]

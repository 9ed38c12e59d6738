"""What a scan did with a policy's costs, counted (runtime/scan.py `tally`)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from respread.core.annotations import COST_POLICY, ReleaseAction
from respread.core.model import Labels, Pod
from respread.kube.annotations import CostResult, CostWrite
from respread.remedies.cost.release import CostCounts, Release, ReleasePlan
from respread.runtime.costs import tally
from tests.support.builders import pod


def named(name: str, policy: str | None = "p") -> Pod:
    annotations = Labels({COST_POLICY: policy}) if policy else Labels({})
    return replace(pod(name, "n1"), annotations=annotations)


def w(name: str, result: CostResult) -> CostWrite:
    return CostWrite("default", name, result, "")


PODS = [named("a"), named("b"), named("c"), named("d", None), named("e", "q")]


def releases(*names: str, deferred: int = 0) -> ReleasePlan:
    released = tuple(Release(named(n), ReleaseAction.REMOVE) for n in names)
    return ReleasePlan(released, deferred, tagged=3)


@pytest.mark.parametrize(
    ("writes", "plan", "released", "expected"),
    [
        ([], None, [], CostCounts(managed=3)),
        (
            [w("d", CostResult.WRITTEN), w("a", CostResult.WRITTEN)],
            None,
            [],
            CostCounts(written=2, managed=4),
        ),
        (
            [],
            releases("a", "b", "c", deferred=2),
            [
                w("a", CostResult.REMOVED),
                w("b", CostResult.HANDED_OVER),
                w("c", CostResult.UNTAGGED),
            ],
            CostCounts(removed=1, handed_over=1, conflicts=1, left=2, managed=0),
        ),
        (
            [w("d", CostResult.SKIPPED)],
            releases("a", "b"),
            [w("a", CostResult.FAILED), w("b", CostResult.SKIPPED)],
            CostCounts(skipped=2, failed=1, managed=3),
        ),
        (  # e was taken by policy q between the scan and the write: an overlap, not written
            [w("e", CostResult.OVERLAP), w("d", CostResult.WRITTEN)],
            None,
            [],
            CostCounts(written=1, overlaps=1, managed=4),
        ),
    ],
)
def test_the_counts_of_a_scan(
    writes: list[CostWrite],
    plan: ReleasePlan | None,
    released: list[CostWrite],
    expected: CostCounts,
) -> None:
    got = tally(PODS, "p", None, writes=writes, releases=plan, released=released)
    assert got == expected

"""Domain scenarios (issue 24): pods held Pending by spread, pods pinned by volumes, outages.

Each folder under domains/ holds a cluster, optionally policies (policy*.yaml; none: the
defaults), and expect.yaml: per policy, what the scan must find. The answers were worked out by
hand from the scheduler's rules (spread-semantics.md) and are explained in each expect.yaml.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from respread.cli import parse_now
from respread.inputs.objects import load_texts
from respread.inputs.policy import DEFAULT_POLICY, parse_policy
from respread.pipeline import scan

HERE = Path(__file__).parent / "domains"
CASES = sorted(
    (d, name)
    for d in HERE.iterdir()
    if (d / "expect.yaml").is_file()
    for name in yaml.safe_load((d / "expect.yaml").read_text())["policies"]
)


def _found(d: Path, policy_name: str) -> dict[str, Any]:
    loaded = load_texts([(str(d), (d / "cluster.yaml").read_text())])
    assert loaded.problems == ()
    policy = (
        DEFAULT_POLICY
        if policy_name == "default"
        else parse_policy(yaml.safe_load((d / policy_name).read_text()))
    )
    expect = yaml.safe_load((d / "expect.yaml").read_text())
    report = scan(loaded.state, policy, parse_now(expect["now"])).report
    return {
        "outages": [str(o) for o in report.outages],
        "evictions": [f"{e.pod.namespace}/{e.pod.name}" for e in report.evictions],
        "deferred": [f"{e.pod.namespace}/{e.pod.name}" for e in report.deferred],
        "violations": {
            f"{v.workload} {v.topology_key}": {
                "fixable": v.fixable,
                "podsPinnedByVolume": v.pods_pinned_by_volume,
                "skew": v.skew,
            }
            for v in report.violations
        },
        "pending": [
            {
                "pod": f"{p.pod.namespace}/{p.pod.name}",
                "topologyKey": p.topology_key,
                "reason": p.obstacle.value,
                "admitted": [a.domain for a in p.admitted],
                "unblock": [
                    u.kind.value
                    + (f" evict {u.evict.namespace}/{u.evict.name}" if u.evict else "")
                    + (f" in {u.domain}" if u.domain else "")
                    for u in p.unblock
                ],
            }
            for p in report.pending
        ],
    }


@pytest.mark.parametrize("case", CASES, ids=[f"{d.name}:{n}" for d, n in CASES])
def test_the_scan_finds_what_the_scenario_expects(case: tuple[Path, str]) -> None:
    d, name = case
    expect = yaml.safe_load((d / "expect.yaml").read_text())["policies"][name]
    assert _found(d, name) == expect

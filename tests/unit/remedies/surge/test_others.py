"""A surge never makes another workload's spread worse (surge_others.py): another workload's
hard constraint whose selector counts the surged Deployment's pods is judged on the net change.

web is 4 / 1 / 1 over zones a, b, c (maxSkew 1): the surge adds 2 pods in zones b and c and
removes 2 from zone a. The nodes also carry a rack: n-a is rack r1, n-b and n-c rack r2, so the
surge moves 2 of web's pods from r1 to r2. watch spreads over racks (maxSkew 1) with a selector
that counts web's pods too (app In [web, watch]), or only its own pods.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from respread.analysis.groups import analyze
from respread.core.model import OwnerRef
from respread.inputs.objects import load_documents
from respread.remedies.surge.others import harm_to_others
from tests.support.builders import hard, pod, sel_in
from tests.support.manifests import manifest
from tests.unit.remedies.surge.test_plan import WEB, policy_with, run, skewed

RACKS = {"n-a": "r1", "n-b": "r2", "n-c": "r2"}


def watch_pod(i: int, node: str, apps: list[str]) -> dict[str, Any]:
    """A pod of watch's ReplicaSet on ``node``, spread over racks counting the pods of
    ``apps``."""
    spread = (hard("rack", sel_in("app", *apps)),)
    owner = OwnerRef("ReplicaSet", "watch-rs")
    labels = {"app": "watch"}
    uid = f"watch-uid-{i}"
    watch = pod(
        f"watch-{i}", node, labels, constraints=spread, namespace="ns1", uid=uid, owner=owner
    )
    return manifest(watch)


def docs_with_watch(nodes: list[str], apps: list[str]) -> list[dict[str, Any]]:
    docs = skewed()
    for d in docs:
        if d["kind"] == "Node":
            d["metadata"]["labels"]["rack"] = RACKS[d["metadata"]["name"]]
    return docs + [watch_pod(i, node, apps) for i, node in enumerate(nodes)]


@pytest.mark.parametrize(
    ("watch_nodes", "apps", "skipped"),
    [
        # racks now: r1 4 (web), r2 2 (web) + 2 (watch): balanced; after: 2 / 6
        (["n-b", "n-b"], ["web", "watch"], "from balanced (skew 0) to skew 4"),
        # r1 4, r2 2 + 5 = 7: violated (skew 3), and the surge would raise it to 7
        (["n-b"] * 5, ["web", "watch"], "violated, from 3 to 7"),
        # r1 4 + 3 = 7, r2 2: violated, and the surge lowers it (5 / 4): allowed
        (["n-a"] * 3, ["web", "watch"], None),
        # watch counts only its own pods: web's surge changes none of its counts
        (["n-b", "n-b"], ["watch"], None),
    ],
)
def test_a_surge_that_would_worsen_another_group_is_skipped(
    watch_nodes: list[str], apps: list[str], skipped: str | None
) -> None:
    _, _, surge = run(docs_with_watch(watch_nodes, apps), policy_with())
    if skipped is None:
        assert [p.workload for p in surge.plans] == [WEB], surge.skips
        return
    assert surge.plans == ()
    (skip,) = [s for s in surge.skips if s.workload == WEB]
    assert "watch-rs" in skip.reason, skip.reason
    assert skipped in skip.reason, skip.reason


def test_a_change_outside_the_other_groups_domains_is_no_harm() -> None:
    docs = docs_with_watch(["n-b", "n-b"], ["web", "watch"])
    state = load_documents([("t", d) for d in docs]).state
    analysis = analyze(state, policy_with())
    (members,) = [m for m in analysis.members if m.workload == WEB]
    web_labels = members.labels
    # a move within rack r2 (zone b to zone c) changes no rack count
    assert harm_to_others(analysis, WEB, web_labels, ["n-c"], ["n-b"]) is None
    # nothing moved at all
    assert harm_to_others(analysis, WEB, web_labels, [], []) is None
    # one pod from r1 to r2: 3 / 5, skew 2 > maxSkew 1
    assert harm_to_others(analysis, WEB, web_labels, ["n-b"], ["n-a"]) is not None


@settings(max_examples=60, deadline=None)
@given(
    watch_nodes=st.lists(st.sampled_from(["n-a", "n-b", "n-c"]), min_size=1, max_size=8),
    counts_web=st.booleans(),
)
def test_a_planned_surge_never_worsens_another_group(
    watch_nodes: list[str], counts_web: bool
) -> None:
    """Whatever the other workload's placement: applying a planned surge's landings and victims
    to the other groups' counts leaves every balanced group balanced and no violated group's
    skew higher."""
    apps = ["web", "watch"] if counts_web else ["watch"]
    docs = docs_with_watch(watch_nodes, apps)
    analysis, _, report = run(docs, policy_with())
    for p in report.plans:
        added = [lnd.node for lnd in p.landings]
        removed = [v.pod.node_name for v in p.victims if v.pod.node_name is not None]
        (members,) = [m for m in analysis.members if m.workload == p.workload]
        assert harm_to_others(analysis, p.workload, members.labels, added, removed) is None
        for g in analysis.groups:
            if g.workload == p.workload or not analysis.index.counts_pod(
                g.constraint.selector, members.labels
            ):
                continue
            counts = dict(g.counts)
            for node in added:
                counts[RACKS[node]] = counts.get(RACKS[node], 0) + 1
            for node in removed:
                counts[RACKS[node]] -= 1
            values = [counts.get(d, 0) for d in g.domains]
            skew = max(values) - min(values)
            assert skew <= (g.skew if g.violating else max(g.skew, g.constraint.max_skew))

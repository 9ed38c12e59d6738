"""Domains remembered across scans (issue 24, part 4): lost and returned domains, and the phases
of a domain after an outage with the recovery ramp, scan after scan through pipeline.scan."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from respread.analysis.domain_memory import DomainPhase
from respread.core.model import Effect, OwnerRef, Pod
from respread.inputs.policy import OutageSettings
from respread.pipeline import Memory, Scan, scan
from tests.support import builders as make
from tests.support.constants import ZONE

OWNER = OwnerRef("ReplicaSet", "web-1")
DOWN = (
    make.taint("node.kubernetes.io/unreachable", effect=Effect.NO_SCHEDULE),
    make.taint("node.kubernetes.io/unreachable", effect=Effect.NO_EXECUTE),
)


def _pods(placement: dict[str, int], min_domains: int | None = None) -> list[Pod]:
    spread = (make.hard(ZONE, make.WEB, min_domains=min_domains),)
    out = []
    for node, n in placement.items():
        out.extend(
            make.pod(
                f"web-{node}-{i}",
                node,
                {"app": "web"},
                constraints=spread,
                owner=OWNER,
                created=0.0,
            )
            for i in range(n)
        )
    return out


def _scan(
    nodes: list[Any], placement: dict[str, int], memory: Memory, now: float, **kw: Any
) -> Scan:
    policy = make.eviction_policy(**kw.pop("eviction", {}))
    policy = replace(policy, outages=OutageSettings(**kw))
    return scan(make.state(nodes, _pods(placement, 3)), policy, now, memory)


def test_a_lost_zone_is_reported_with_when_and_min_domains_then_its_return() -> None:
    abc = [make.zone_node(n, n[0]) for n in ("a1", "b1", "c1")]
    first = _scan(abc, {"a1": 1, "b1": 1, "c1": 1}, Memory(holds=True), 100.0)
    assert first.report.domains.lost == ()
    # zone c scaled to zero: its pod is gone with its node
    second = _scan(abc[:2], {"a1": 1, "b1": 1}, first.memory, 200.0)
    (lost,) = second.report.domains.lost
    assert (lost.domain, lost.since, lost.new) == ("c", 200.0, True)
    assert lost.min_domains_unmet and lost.eligible == 2
    third = _scan(abc[:2], {"a1": 1, "b1": 1}, second.memory, 300.0)
    assert [(d.domain, d.since, d.new) for d in third.report.domains.lost] == [("c", 200.0, False)]
    back = _scan(abc, {"a1": 1, "b1": 1}, third.memory, 400.0)
    assert back.report.domains.lost == ()
    assert [(r.domain, r.lost_since) for r in back.report.domains.returned] == [("c", 200.0)]


def test_a_domain_in_an_outage_is_not_lost_and_recovers_in_steps() -> None:
    healthy = [make.zone_node(n, n[0]) for n in ("a1", "b1", "c1", "c2")]
    down = [*healthy[:2], *(make.zone_node(n, "c", taints=DOWN, ready=False) for n in ("c1", "c2"))]
    packed = {"a1": 6, "b1": 6}  # the taint manager's replacements packed a and b: 6/6/0
    memory = Memory(holds=True)
    outage = _scan(down, packed, memory, 1000.0, recovery_share=25)
    assert [str(o) for o in outage.report.outages] == [f"{ZONE}=c"]
    assert outage.report.domains.lost == ()
    assert outage.report.evictions == () and outage.report.deferred == ()
    (phase,) = outage.report.domains.phases
    assert phase.phase is DomainPhase.OUTAGE
    # zone c is back: 4 moves balance it, but 25% of the workload's 12 pods per step: 3 now
    step = _scan(healthy, packed, outage.memory, 2000.0, recovery_share=25)
    (phase,) = step.report.domains.phases
    assert (phase.phase, phase.since, phase.workloads_at_start) == (
        DomainPhase.RECOVERING,
        2000.0,
        1,
    )
    assert len(step.report.evictions) == 3
    assert [e.deferred_by.split(":")[0] for e in step.report.deferred] == ["recovery ramp"]
    # the operator made those evictions; within the interval the workload waits
    memory = step.memory.recorded(step.plan.moves[0].workload, ZONE, 6, 2000.0)
    wait = _scan(healthy, packed, memory, 2100.0, recovery_share=25)
    assert wait.report.evictions == ()
    # once balanced, the domain is Normal (said once), then forgotten
    done = _scan(healthy, {"a1": 4, "b1": 4, "c1": 4}, wait.memory, 2500.0)
    assert [p.phase for p in done.report.domains.phases] == [DomainPhase.NORMAL]
    after = _scan(healthy, {"a1": 4, "b1": 4, "c1": 4}, done.memory, 2600.0)
    assert after.report.domains.phases == ()


def test_a_new_leader_reads_lost_domains_and_recoveries_back_from_the_status() -> None:
    from respread.core.timestamps import format_rfc3339
    from respread.report.contract import status_json
    from respread.report.status import build_status

    abc = [make.zone_node(n, n[0]) for n in ("a1", "b1", "c1")]
    first = _scan(abc, {"a1": 1, "b1": 1, "c1": 1}, Memory(holds=True), 100.0)
    second = _scan(abc[:2], {"a1": 1, "b1": 1}, first.memory, 200.0)
    policy = make.eviction_policy()
    stored = status_json(build_status(second.report, policy, format_rfc3339(200.0)))
    restored = Memory.from_status(stored)
    assert restored.domains.lost == second.memory.domains.lost
    back = _scan(abc, {"a1": 1, "b1": 1}, restored, 400.0)
    assert [(r.domain, r.lost_since) for r in back.report.domains.returned] == [("c", 200.0)]


def test_an_outage_whose_nodes_are_replaced_recovers_when_the_new_nodes_are_ready() -> None:
    healthy = [make.zone_node(n, n[0]) for n in ("a1", "b1", "c1")]
    down = [*healthy[:2], make.zone_node("c1", "c", taints=DOWN, ready=False)]
    placed = {"a1": 4, "b1": 4}
    outage = _scan(down, placed, Memory(holds=True), 1000.0)
    gone = _scan(healthy[:2], placed, outage.memory, 1100.0)  # c1 deleted, not yet replaced
    assert [(p.domain, p.phase) for p in gone.report.domains.phases] == [("c", DomainPhase.OUTAGE)]
    back = _scan(healthy, placed, gone.memory, 1200.0)
    assert [(p.domain, p.phase) for p in back.report.domains.phases] == [
        ("c", DomainPhase.RECOVERING)
    ]

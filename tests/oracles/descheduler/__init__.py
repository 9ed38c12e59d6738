"""The descheduler oracle (main.go, built and cached by build.py) and the comparison that the
differential test (tests/oracles/test_descheduler_oracle.py) and the benchmark
(bench/vs_descheduler.py) both make.

One comparison: the same cluster and the same plugin arguments go to the descheduler's
``RemovePodsViolatingTopologySpreadConstraint`` (one ``Balance``) and to respread's ``analyze``
+ ``plan`` under the equivalent, uncapped policy (``policy_for``). Each tool's plan is applied
to the cluster and the result is judged by respread's analysis (the scheduler's Filter rule,
which the scheduler oracle checks against kube-scheduler itself):

* respread's moves land where respread predicted (``respread.remedies.evict.replay.apply_moves``);
* the descheduler's evicted pods are gone, and each replacement lands, in eviction order, where
  the same predictor (the planner's ``landing``) puts it with all the evicted pods out of the
  counts and earlier replacements' room reserved (``land_evictions``). The descheduler itself
  predicts nothing; this stands in for kube-scheduler placing the replacements.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from respread.analysis.groups import Analysis, Members, analyze, workload_of
from respread.core.model import ClusterState, Pod
from respread.inputs.policy import RebalancePolicy, parse_policy
from respread.remedies.evict.planner import Plan, plan
from respread.remedies.evict.replay import apply_moves
from respread.remedies.evict.simulation import Simulation

Json = dict[str, Any]


def policy_for(args: Mapping[str, Any]) -> RebalancePolicy:
    """The descheduler's plugin arguments as a RebalancePolicy without respread's run caps.

    constraints -> whenUnsatisfiable, namespaces -> namespaces include/exclude (nothing excluded
    when absent, as for the plugin), labelSelector -> podSelector, topologyBalanceNodeFit ->
    requireFit; no caps, no cooldown, minPodAge 0. Protections stay at respread's defaults
    (local storage and system-critical pods), which are also the DefaultEvictor's.
    """
    namespaces = args.get("namespaces") or {}
    selector: Json = {
        "namespaces": {
            "include": list(namespaces.get("include") or []),
            "exclude": list(namespaces.get("exclude") or []),
        }
    }
    if args.get("labelSelector") is not None:
        selector["podSelector"] = args["labelSelector"]
    return parse_policy(
        {
            "apiVersion": "respread.io/v1alpha1",
            "kind": "RebalancePolicy",
            "metadata": {"name": "descheduler-args"},
            "spec": {
                "constraints": {
                    "whenUnsatisfiable": list(args.get("constraints") or ["DoNotSchedule"])
                },
                "selector": selector,
                "eviction": {
                    "maxPerRun": None,
                    "maxPerWorkload": None,
                    "maxPerNode": None,
                    "maxPerNamespace": None,
                    "minPodAge": "0s",
                    "cooldown": "0s",
                    "requireFit": bool(args.get("topologyBalanceNodeFit", True)),
                },
            },
        }
    )


def judge_policy(policy: RebalancePolicy) -> RebalancePolicy:
    """The policy residual violations are judged by: the same selection and the same constraint
    kinds as the plugin arguments (DoNotSchedule; ScheduleAnyway too where the arguments ask
    for it, judged by the same Filter rule), so neither tool is blamed for what it was not
    asked to fix."""
    return policy


@dataclass(frozen=True, slots=True)
class Residual:
    """What a plan leaves: groups still violated (of the kinds asked for), their misplaced
    pods, and replacements left Pending."""

    groups: int
    pods: int
    pending: int = 0  # replacements no node would take (they stay Pending)

    @property
    def compliant(self) -> bool:
        """No DoNotSchedule violation, and no replacement left Pending: a replica that cannot
        be scheduled (by the very constraint, often) is no fix."""
        return self.groups == 0 and self.pending == 0


def residual(state: ClusterState, policy: RebalancePolicy, pending: int = 0) -> Residual:
    after = analyze(state, judge_policy(policy))
    violations = after.violations
    return Residual(len(violations), sum(g.violating for g in violations), pending)


def respread_plan(
    state: ClusterState, policy: RebalancePolicy, now: float
) -> tuple[Analysis, Plan]:
    analysis = analyze(state, policy)
    return analysis, plan(analysis, policy, now=now)


def land_evictions(
    state: ClusterState, policy: RebalancePolicy, evicted: Sequence[tuple[str, str]]
) -> tuple[ClusterState, dict[tuple[str, str], str | None]]:
    """The cluster after the evictions, each replacement where respread's predictor puts it.

    All evicted pods leave the counts first (they are terminating when the replacements are
    scheduled, and the scheduler does not count terminating pods); then each replacement, in
    eviction order, goes to the planner's ``landing`` node and its room is reserved. A
    replacement no node takes stays Pending (unbound, counted nowhere).
    """
    analysis = analyze(state, policy)
    sim = Simulation(analysis, policy)
    by_key = {(p.namespace, p.name): p for p in state.pods}
    member_of = {id(pod): m for m in analysis.members for ps in m.by_node.values() for pod in ps}
    victims: list[Pod] = []
    for key in evicted:
        pod = by_key.get(key)
        if pod is None or pod.node_name is None:
            raise ValueError(f"the descheduler evicted {key[0]}/{key[1]}, not a bound pod here")
        victims.append(pod)
        if id(pod) not in member_of:
            m = Members(
                workload_of(pod, sim.index), sim.index.profile_of(pod), {pod.node_name: (pod,)}
            )
            sim.counts.register(m)
            member_of[id(pod)] = m
    for pod in victims:
        assert pod.node_name is not None
        sim.counts.shift(sim.counts.tables_counting(pod), pod.node_name, -1)
    landed: dict[tuple[str, str], str | None] = {}
    for pod in victims:
        target, _ = sim.land(member_of[id(pod)], pod)
        landed[(pod.namespace, pod.name)] = None if target is None else target.name
        if target is not None:
            sim.counts.shift(sim.counts.tables_counting(pod), target.name, +1)
            sim.landing.reserve(target.name, pod.spec.requests)
    return _replaced(state, landed), landed


def _replaced(state: ClusterState, landed: Mapping[tuple[str, str], str | None]) -> ClusterState:
    """The state with each evicted pod replaced by its replacement (``-r``), where it landed."""
    pods = []
    for pod in state.pods:
        key = (pod.namespace, pod.name)
        if key in landed:
            pods.append(
                dataclasses.replace(pod, name=f"{pod.name}-r", node_name=landed[key], created=None)
            )
        else:
            pods.append(pod)
    return dataclasses.replace(state, pods=tuple(pods))


@dataclass(frozen=True, slots=True)
class Side:
    """One tool's plan and what it leaves."""

    evicted: tuple[tuple[str, str], ...]
    residual: Residual
    seconds: float


@dataclass(frozen=True, slots=True)
class Comparison:
    before: Residual
    respread: Side
    descheduler: Side
    descheduler_runs: tuple[tuple[tuple[str, str], ...], ...]  # every run's evictions
    analysis: Analysis
    plan: Plan


def evictions_of(run: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple((e["namespace"], e["name"]) for e in run["evictions"])


def compare(
    state: ClusterState,
    answer: Mapping[str, Any],
    policy: RebalancePolicy,
    now: float,
    respread_seconds: float | None = None,
) -> Comparison:
    """Judge both tools' plans on ``state``; ``answer`` is the descheduler oracle's reply.

    With several descheduler runs (their evictions may differ: the plugin iterates Go maps),
    the descheduler side is its best run: compliant with the fewest evictions, else the fewest
    residual violations.
    """
    import time

    t0 = time.perf_counter()
    analysis, result = respread_plan(state, policy, now)
    seconds = time.perf_counter() - t0 if respread_seconds is None else respread_seconds
    moved = tuple((m.pod.namespace, m.pod.name) for m in result.moves)
    pending = sum(1 for m in result.moves if not m.to_node)
    mine = Side(moved, residual(apply_moves(state, result.moves), policy, pending), seconds)
    runs = tuple(evictions_of(r) for r in answer["runs"])
    sides = []
    for run, raw in zip(runs, answer["runs"], strict=True):
        after, landed = land_evictions(state, policy, run)
        stuck = sum(1 for v in landed.values() if v is None)
        sides.append(Side(run, residual(after, policy, stuck), raw["balanceNs"] / 1e9))
    best = min(
        sides,
        key=lambda s: (
            not s.residual.compliant,
            s.residual.groups,
            s.residual.pods,
            len(s.evicted),
        ),
    )
    return Comparison(residual(state, policy), mine, best, runs, analysis, result)

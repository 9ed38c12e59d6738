"""Violations -> an ordered eviction plan, with predicted landings and what was not planned.

The planner simulates the scheduler. Each step evicts one pod that sits where the scheduler
would not place it again, and predicts where its replacement lands: a node where every spread
constraint of the replacement passes the Filter (with the evicted pod gone), and where node
affinity, taints, cordons and resources allow it, with the capacity of earlier steps reserved.
Among those nodes it prefers what the scheduler prefers: the fewest matching pods in the node's
domains, then the node name. A step is kept only if it reduces the workload's violating pods,
and for every group whose counts or pods it changes: a group with no misplaced pod keeps none,
a violated group does not end with a larger skew unless that skew is within its maxSkew, and
another workload does not end with more misplaced pods. A workload whose steps stopped is tried
again once the counts they depend on have changed. Where no single move helps a workload, two
judged as one may: its pod then another workload's that mends what the first broke
(``_compound``), or another workload's pod that its selectors count (where it is crowded, or
where its pods could go), then its own, which only that preparatory move lets land where it
passes (``_prepared``). Where the plan leaves a group
that moves could balance, the planner plans again with the groups it left first, and keeps the
plan that leaves fewer pods misplaced.

Victim order, per workload profile (most violating profile first):

1. pods on a node lacking one of the topology keys first (every fix moves them);
2. pods that break more of the workload's constraints first;
3. the most crowded domain first: the pod's domain holds the most pods above the global
   minimum (taking from the fullest domain is what makes the number of moves minimal);
4. lowest priority first;
5. pods pinned by nodeSelector or required node affinity last;
6. the node holding the most pods of the workload first;
7. the youngest pod first; then namespace/name.

Protected pods (safety.py) and pods whose budget refuses any eviction are never chosen; another
pod is tried instead. Pass 1 plans what this run may do within the policy's caps, cooldown and
budgets; pass 2 goes on past them to find what later runs would do (Deferred) and so which
violations can be fixed by eviction at all.

The parts, one job each: the planning run's simulation and the plan it ends with
(simulation.py: the what-if counts of analysis/whatif.py and tally.py, the eviction gate of
evictor.py, the landing predictor of scheduling/landing.py), the victim strategy (victims.py)
and the exhaustive search (exact.py); this module makes the greedy plan, trying moves over them and
keeping or undoing them, and chooses between it and the exact one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import replace

from respread.analysis.groups import Analysis, Group, Members, WorkloadRef
from respread.analysis.tally import fails
from respread.core.model import Pod
from respread.core.timestamps import format_rfc3339
from respread.inputs.policy import RebalancePolicy
from respread.remedies.evict import victims
from respread.remedies.evict.evictor import EvictionGate, Hold, HoldKind
from respread.remedies.evict.exact import exact_plan
from respread.remedies.evict.simulation import (
    Applied,
    Outcome,
    Pass,
    Plan,
    PlanInputs,
    RunEnd,
    Simulation,
    Trial,
    domains_needed,
    finish,
    most_misplaced_first,
    violated_order,
)
from respread.remedies.evict.steps import Move, Skip, SkipKind, StepState, Verdict
from respread.remedies.evict.victims import FOREIGN_TRIALS

__all__ = [
    "EXACT_MOVABLE",
    "Move",
    "Outcome",
    "Plan",
    "Skip",
    "SkipKind",
    "StepState",
    "Verdict",
    "domains_needed",
    "plan",
]

# The exhaustive search runs where the violated workloads, and those their selectors count,
# hold at most this many movable pods (0: never).
EXACT_MOVABLE = 14

# The greedy planner plans again, the groups it left unbalanced first, where those hold at most
# this many pods (a second plan costs as much as the first).
RETRY_PODS = 200

# A preparatory move is tried with this many of the group's misplaced pods after it, the first
# in victim order (each pair costs two simulated moves, for each of FOREIGN_TRIALS other pods).
PREPARED_LEADS = 2


def plan(
    analysis: Analysis,
    policy: RebalancePolicy,
    now: float | None = None,
    history: Mapping[WorkloadRef, float] | None = None,
    held: Mapping[WorkloadRef, str] | None = None,
) -> Plan:
    """The eviction plan for one run. Pure: the caller supplies ``now``, ``history`` (the last
    eviction time per workload, for the cooldown) and ``held`` (workloads the operator holds
    back this run, with the reason: a replacement not Ready yet, a back-off).

    The greedy planner plans every problem. Where the violated workloads, and the workloads
    their selectors count, hold at most ``EXACT_MOVABLE`` movable pods, an exhaustive search
    looks for fewer evictions that leave every group balanced; its plan is used when it is
    smaller than the greedy one, or balances what the greedy one does not.

    A group the plan leaves unbalanced, with pods that a hold keeps (minPodAge, a budget whose
    pods are not all healthy yet or whose status is stale), is Waiting
    (``Outcome.waiting_for``) when, once every hold has lifted, the greedy planner balances it
    on top of the plan: after all of its moves, this run's and later runs', planning only the
    groups that can be Waiting (their steps may move other workloads' pods, as any step may)."""
    inputs = PlanInputs(analysis, policy, now, history or {}, held or {})
    found, sim = _plan(inputs)
    return _with_waits(found, sim, inputs)


def _plan(inputs: PlanInputs) -> tuple[Plan, Simulation | None]:
    """The plan, and its simulation run to its end (every move made, this run's and later
    runs'); None for the exact plan's (``_replayed`` makes it again where it is needed)."""
    greedy, sim = _greedy_plan(inputs)
    violations = inputs.analysis.violations
    if not violations:
        return greedy, sim
    if sum(g.members.count for g in violations) > 4 * EXACT_MOVABLE:  # before a copy
        note = f"greedy (more than {EXACT_MOVABLE} movable pods: no exhaustive search)"
        return replace(greedy, method_note=note), sim
    chosen = exact_plan(inputs, greedy, EXACT_MOVABLE)
    return chosen, sim if chosen.method == greedy.method else None


def _replayed(inputs: PlanInputs, found: Plan) -> Simulation:
    """A simulation with the plan's moves made in order, this run's then later runs' (each
    lands where the plan predicted: the same moves from the same state)."""
    sim = inputs.simulation()
    workloads = {move.workload for move in (*found.moves, *found.deferred)}
    owners = {
        (pod.namespace, pod.name): m
        for m in inputs.analysis.members
        if m.workload in workloads
        for pods in m.by_node.values()
        for pod in pods
    }
    for move in (*found.moves, *found.deferred):
        made = sim.force(owners[(move.pod.namespace, move.pod.name)], move.pod, move.reason)
        assert made.to_node == move.to_node, (move, made)
    return sim


def _with_waits(found: Plan, sim: Simulation | None, inputs: PlanInputs) -> Plan:
    """The plan with each unbalanced group that only holds keep from balance marked Waiting.
    ``sim``: the plan's simulation run to its end (None: made again), planned on with the
    holds lifted."""
    unfixable = {o.group.workload for o in found.outcomes if not o.fixable}
    if not unfixable:
        return found
    gate = EvictionGate(inputs.policy, inputs.analysis.index.state.budgets, inputs.held)
    holds: dict[WorkloadRef, list[Hold]] = defaultdict(list)
    for skip in found.skipped:
        if skip.workload not in unfixable:
            continue
        hold = gate.hold(skip.pod, inputs.now)
        if hold is not None:
            holds[skip.workload].append(hold)
    candidates = [o.group for o in found.outcomes if not o.fixable and holds[o.group.workload]]
    if not candidates:
        return found
    balanced = _balanced_once_lifted(inputs, sim or _replayed(inputs, found), candidates)
    outcomes = []
    for o in found.outcomes:
        waits = holds[o.group.workload]
        if o.fixable or not waits or (o.group.members, o.group.index) not in balanced:
            outcomes.append(o)
            continue
        waiting_for = holds_text(waits)
        message = f"waiting: eviction fixes it once these holds lift: {waiting_for}"
        outcomes.append(replace(o, waiting_for=waiting_for, message=message))
    return replace(found, outcomes=tuple(outcomes))


def _balanced_once_lifted(
    inputs: PlanInputs, sim: Simulation, groups: list[Group]
) -> set[tuple[Members, int]]:
    """Which of the groups the greedy planner balances once every hold has lifted, going on
    from ``sim`` (the plan's moves made) and planning these groups' members only, past the
    policy's caps, cooldown and budgets (as the plan's later runs do)."""
    sim.lift_holds()
    order = most_misplaced_first(sim, dict.fromkeys(g.members for g in groups))
    _run(inputs.passing(sim, False), order)
    return {(g.members, g.index) for g in groups if sim.counts.violators(g.members, g.index) == 0}


def holds_text(holds: list[Hold]) -> str:
    """The holds on a group's pods, one line: 'minPodAge: 2 pod(s) too young, the first old
    enough at T; PodDisruptionBudget web allows no disruption (...), until its pods are
    healthy'."""
    parts = []
    young = sorted(h.until for h in holds if h.kind is HoldKind.MIN_POD_AGE and h.until)
    if young:
        parts.append(
            f"minPodAge: {len(young)} pod(s) too young, the first old enough at "
            f"{format_rfc3339(young[0])}"
        )
    parts.extend(sorted({h.reason for h in holds if h.kind is HoldKind.BUDGET}))
    return "; ".join(parts)


def _greedy_plan(inputs: PlanInputs) -> tuple[Plan, Simulation]:
    """The greedy plan, the most misplaced workload first; where that leaves a group that
    moves could balance, the plan again with the groups it left first (an earlier move of one
    workload can take the room, or shift the counts, that another needed), when that leaves
    fewer pods misplaced. With the plan, its simulation run to its end."""
    first, sim = _greedy_in_order(inputs, ())
    left = [
        o.group.members
        for o in first.outcomes
        if not o.fixable and o.group.minimum_moves is not None
    ]
    if not left or sum(m.count for m in dict.fromkeys(left)) > RETRY_PODS:
        return first, sim
    again, again_sim = _greedy_in_order(inputs, left)
    if _misplaced_after(again) < _misplaced_after(first):
        return again, again_sim
    return first, sim


def _misplaced_after(found: Plan) -> int:
    return sum(o.violating_after_all for o in found.outcomes)


def _greedy_in_order(inputs: PlanInputs, first: Collection[Members]) -> tuple[Plan, Simulation]:
    """The greedy plan with the members ``first`` ahead of the others (each part in
    ``violated_order``), and its simulation run to its end."""
    analysis = inputs.analysis
    sim = inputs.simulation()
    order = violated_order(sim, analysis)
    if first:
        ahead = set(first)
        order = [m for m in order if m in ahead] + [m for m in order if m not in ahead]
    planned = _run(inputs.passing(sim, True), order)
    run_end = RunEnd.of(sim, analysis)
    deferred = _run(inputs.passing(sim, False), order)
    found = finish(
        analysis, sim, planned=planned, deferred=deferred, run_end=run_end, method="greedy"
    )
    return found, sim


def _run(run: Pass, order: list[Members]) -> list[Move]:
    """Steps for each member in turn until none helps; a member is tried again once the counts
    its steps depend on have changed (its own tables or positions, or, when a move was refused
    for what it would do to another group, any kept move)."""
    sim = run.sim
    moves: list[Move] = []
    failed: dict[Members, tuple[tuple[int, ...], int]] = {}  # its stamp and moves then
    progress = True
    while progress:
        progress = False
        for m in order:
            last = failed.get(m)
            if last is not None:
                stamp, kept = last
                if stamp == sim.counts.stamp(m) and (kept == len(moves) or not sim.refused(m)):
                    continue
                sim.forget_refusals(m)
            found = _steps(run, m)
            progress = progress or bool(found)
            moves.extend(found)
            failed[m] = (sim.counts.stamp(m), len(moves))
    return moves


def _steps(run: Pass, m: Members) -> list[Move]:
    """Steps for ``m`` until none helps: this run's committed, later runs' deferred."""
    sim = run.sim
    moves: list[Move] = []
    while True:
        step = _step(run, m)
        steps = [step] if step is not None else (_compound(run, m) or _prepared(run, m))
        if not steps:
            return moves
        sim.forget_refusals(m)  # the counts its refused pods were judged by changed
        for move, deferral in steps:
            if run.within_limits:
                sim.commit(move)
                moves.append(move)
            else:
                moves.append(
                    replace(
                        move,
                        state=StepState.DEFERRED,
                        deferred_by=deferral or "planned after this run's moves take effect",
                    )
                )


def _tries(
    sim: Simulation, m: Members, foreign: list[tuple[Members, Pod, str]]
) -> Iterator[tuple[Members, Pod, tuple[int, bool] | str]]:
    """The moves a step tries for ``m``: its own misplaced pods (most crowded first), each
    with the first rule it fails, then the ``foreign`` ones, each with the reason to move it
    (a pod is ``m``'s own when it comes with its rule)."""
    for pod, failing in victims.candidates(sim.counts, m, sim.moved, sim.skipped):
        yield m, pod, failing
    for owner, pod, reason in foreign:
        yield owner, pod, reason


def _step(run: Pass, m: Members) -> tuple[Move, str] | None:
    """The next eviction for ``m``, and what defers it; None when no eviction helps.

    The first of ``m``'s own misplaced pods (most crowded first) whose move helps. Where
    ``m``'s selectors also count other workloads' pods in its crowded domains, moving one of
    those may help more (it may fix its own workload too) or be the only way: then every
    candidate, ``m``'s own first, is tried and the one that leaves the fewest pods misplaced in
    the groups it touches wins (a pod that two groups' selectors count may fix both at once),
    then the one that brings them closest to balance, then the earliest.
    """
    sim = run.sim
    foreign = victims.foreign(sim.counts, m, sim.moved, sim.skipped)
    measure = bool(foreign)
    best: tuple[tuple[int, int], Members, Pod, str, str] | None = None  # the best so far
    for owner, pod, why in _tries(sim, m, foreign):
        own = owner is m  # an own pod comes with the rule it fails, a foreign one with a reason
        ok, deferral = run.eligible(pod, owner.workload, record=own)
        if not ok:
            continue
        reason = why if isinstance(why, str) else _verdict(sim, m, pod, why)
        trial = sim.trial(m, owner, pod, reason, measure=measure)
        if isinstance(trial, Skip) and own:
            sim.refuse(m, pod, trial)
        if not isinstance(trial, Trial):
            continue
        if not measure:
            return sim.keep(trial), deferral
        sim.undo(trial)
        if best is None or trial.gain > best[0]:
            best = (trial.gain, owner, pod, reason, deferral)
    if best is None:
        return None
    _, owner, pod, reason, deferral = best
    trial = sim.trial(m, owner, pod, reason, measure=True)
    assert isinstance(trial, Trial)  # the state it was judged in, restored exactly
    return sim.keep(trial), deferral


def _verdict(sim: Simulation, m: Members, pod: Pod, failing: tuple[int, bool]) -> str:
    """Why one of ``m``'s pods is misplaced: the rule it fails, with the arithmetic."""
    assert pod.node_name is not None
    return sim.counts.verdict(m, pod.node_name, failing).reason


def _compound(run: Pass, m: Members) -> list[tuple[Move, str]]:
    """Two moves judged as one step, when no single move helps ``m``: one of ``m``'s pods
    whose move was refused for breaking another workload's spread, then one of that
    workload's pods that mends it (a fix that needs a second workload to follow). Kept when
    the pair, as a whole, keeps the step's rule; [] when no pair does."""
    sim = run.sim
    judge = sim.counts.judge(m)
    for pod in sim.refused(m)[:FOREIGN_TRIALS]:
        assert pod.node_name is not None
        failing = fails(judge, sim.counts.node_labels[pod.node_name], pod.node_name)
        ok, deferral = run.eligible(pod, m.workload)
        if failing is None or not ok:
            continue
        reason = _verdict(sim, m, pod, failing)
        first = sim.apply_move(m, pod)
        if first is None:
            continue
        followers = victims.followers(sim.counts, m, pod, sim.moved, sim.skipped)
        sim.undo_move(first)
        for x, follower in followers:
            pair = _pair(run, m, (pod, reason, deferral), x, follower)
            if pair:
                return pair
    return []


def _pair(
    run: Pass, m: Members, lead: tuple[Pod, str, str], x: Members, follower: Pod
) -> list[tuple[Move, str]]:
    """The lead move of ``m`` and the follower's of ``x``, kept together when the pair
    reduces ``m``'s misplaced pods and harms no group; [] (nothing changed) otherwise."""
    sim = run.sim
    pod, reason, deferral = lead
    ok, follower_deferral = run.eligible(follower, x.workload)
    if not ok:
        return []
    applied = _two_moves(sim, m, (m, pod), (x, follower))
    if applied is None:
        return []
    first, second = applied
    lead_move = sim.keep_applied(first, reason)
    follow_move = sim.keep_applied(
        second, f"follows {pod.name}: its move would otherwise break the spread of {x.workload}"
    )
    return _together(run, applied, (lead_move, deferral), (follow_move, follower_deferral))


def _together(
    run: Pass, applied: tuple[Applied, Applied], *moves: tuple[Move, str]
) -> list[tuple[Move, str]]:
    """A pair's two kept moves, with what defers each. Within the run's limits both are made
    this run or neither (the first was eligible, so nothing defers it): once the first is
    committed, a deferral of the second undoes both, [] then."""
    (first, lead_deferral), (second, deferral) = moves
    if run.within_limits:
        sim = run.sim
        sim.commit(first)
        deferral = run.deferral(second.pod, second.workload)
        sim.uncommit(first)
        if deferral:
            for move in (first, second):
                sim.moved.discard((move.pod.namespace, move.pod.name))
            sim.undo_move(applied[1])
            sim.undo_move(applied[0])
            return []
    return [(first, lead_deferral), (second, deferral)]


def _two_moves(
    sim: Simulation,
    m: Members,
    first: tuple[Members, Pod],
    second: tuple[Members, Pod],
    then: Callable[[], bool] = lambda: True,
) -> tuple[Applied, Applied] | None:
    """Both moves applied (the second only if ``then()`` says so once the first is), when
    together they reduce ``m``'s misplaced pods and harm no group; None, with nothing
    changed, otherwise."""
    counts = sim.counts
    (x1, pod1), (x2, pod2) = first, second
    affected = counts.affected(x1, pod1) | counts.affected(x2, pod2)
    affected[m] = None
    before = {y: counts.tally(y) for y in affected}
    changing = [*counts.tables_counting(pod1), *counts.tables_counting(pod2)]
    skews = counts.skews(affected, before, changing)
    one = sim.apply_move(x1, pod1)
    if one is None:
        return None
    two = sim.apply_move(x2, pod2) if then() else None
    if two is None:
        sim.undo_move(one)
        return None
    after = {y: counts.tally(y) for y in affected}
    if sim.harm(m, affected, before, after, skews) or after[m][0] >= before[m][0]:
        sim.undo_move(two)
        sim.undo_move(one)
        return None
    return one, two


def _prepared(run: Pass, m: Members) -> list[tuple[Move, str]]:
    """Two moves judged as one step, when neither a single move nor a pair led by one of
    ``m``'s pods helps: first another workload's pod that ``m``'s selectors count, where ``m``
    is crowded or else where its pods could go (its move alone leaves ``m``'s pods misplaced),
    then one of ``m``'s misplaced pods, which only that first move lets land where it passes (a
    preparatory move). Kept when the pair reduces ``m``'s misplaced pods and harms no group; []
    when no pair does."""
    sim = run.sim
    preps = victims.foreign(sim.counts, m, sim.moved, sim.skipped, anywhere=True)
    for x, prep, why in preps:
        ok, prep_deferral = run.eligible(prep, x.workload)
        if not ok:
            continue
        first = sim.apply_move(x, prep)
        if first is None:
            continue
        leads = victims.candidates(sim.counts, m, sim.moved, sim.skipped, refused_too=True)
        sim.undo_move(first)
        for pod, _ in leads[:PREPARED_LEADS]:
            pair = _prepared_pair(run, m, (x, prep, why, prep_deferral), pod)
            if pair:
                return pair
    return []


def _prepared_pair(
    run: Pass, m: Members, prep: tuple[Members, Pod, str, str], pod: Pod
) -> list[tuple[Move, str]]:
    """The preparatory move of ``x``'s pod, then ``m``'s ``pod``, kept together when the pair
    reduces ``m``'s misplaced pods and harms no group; [] (nothing changed) otherwise."""
    sim = run.sim
    x, other, why, prep_deferral = prep
    ok, deferral = run.eligible(pod, m.workload)
    if not ok:
        return []
    counts = sim.counts
    reasons: list[str] = []

    def lands_only_now() -> bool:
        """After the preparatory move: does ``pod`` fail where it is now (so it may move)?"""
        assert pod.node_name is not None
        failing = fails(counts.judge(m), counts.node_labels[pod.node_name], pod.node_name)
        reasons.append("" if failing is None else _verdict(sim, m, pod, failing))
        return failing is not None

    applied = _two_moves(sim, m, (x, other), (m, pod), lands_only_now)
    if applied is None:
        return []
    first, second = applied
    prep_move = sim.keep_applied(first, f"prepares the move of {pod.name}: {why}")
    lead_move = sim.keep_applied(second, reasons[0])
    return _together(run, applied, (prep_move, prep_deferral), (lead_move, deferral))

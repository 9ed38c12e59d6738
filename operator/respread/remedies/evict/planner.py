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
again once the counts they depend on have changed.

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

The simulation is made of parts with one job each: the simulated counts (simcounts.py, on the
Filter kernel, kernel.py), the eviction gate (evictor.py), the landing predictor (landing.py)
and the victim strategy (victims.py); this module tries moves over them and keeps or undoes
them, and holds the exhaustive search's space.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from respread.analysis.groups import Analysis, Group, Members, WorkloadRef, minimum_moves
from respread.analysis.whatif import SimCounts, fails
from respread.core.model import Node, Pod
from respread.inputs.policy import RebalancePolicy
from respread.remedies.evict import victims
from respread.remedies.evict.evictor import EvictionGate
from respread.remedies.evict.search import fewest_moves
from respread.remedies.evict.steps import Move, Skip, SkipKind, StepState
from respread.remedies.evict.victims import FOREIGN_TRIALS
from respread.scheduling.landing import LandingPredictor
from respread.scheduling.spread import SpreadIndex

__all__ = [
    "Move",
    "Outcome",
    "Plan",
    "Skip",
    "SkipKind",
    "StepState",
    "domains_needed",
    "plan",
]


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the plan does for one violated group."""

    group: Group
    violating_after_run: int  # after this run's planned moves
    violating_after_all: int  # after the deferred moves too
    message: str

    @property
    def fixable(self) -> bool:
        return self.violating_after_all == 0


@dataclass(frozen=True, slots=True)
class Plan:
    moves: tuple[Move, ...]
    deferred: tuple[Move, ...]
    skipped: tuple[Skip, ...]
    outcomes: tuple[Outcome, ...]
    budgets_used: Mapping[str, int] = field(default_factory=dict)
    method: str = "greedy"  # "exact": the fewest evictions, found by exhaustive search
    method_note: str = ""  # how the plan was found, one line

    @property
    def predicted_violations(self) -> int:
        return sum(1 for o in self.outcomes if o.violating_after_run)


@dataclass(frozen=True, slots=True)
class _Applied:
    """An eviction applied to the simulation, with what undoing it needs."""

    owner: Members
    pod: Pod
    target: Node
    mark: int  # the simulation's state before it


@dataclass(slots=True)
class Trial:
    """A simulated eviction, applied, that ``keep`` turns into a Move or ``undo`` takes back."""

    members: Members  # the group it is for
    owner: Members  # the pod's own workload and profile
    pod: Pod
    target: Node
    mark: int  # the simulation's state before it
    gain: int  # the fall in distance from balance of the groups it touches (when measured)
    reason: str


class _Simulation:
    """One planning run: the simulated counts (simcounts), the eviction gate (evictor), the
    landing predictor (landing), and the pods moved and skipped so far. A move is tried,
    then kept or undone exactly."""

    def __init__(
        self,
        analysis: Analysis,
        policy: RebalancePolicy,
        held: Mapping[WorkloadRef, str] | None = None,
    ) -> None:
        self.index: SpreadIndex = analysis.index
        self.policy = policy
        state = self.index.state
        self.counts = SimCounts(analysis, policy.constraints.when_unsatisfiable)
        self.gate = EvictionGate(policy, state.budgets, held)
        self.landing = LandingPredictor(state.nodes, state.pods, policy.eviction.require_fit)
        self.moved: set[int] = set()  # ids of pods already moved (their replacements stay put)
        self.skipped: dict[int, Skip] = {}
        self._refused: dict[int, list[Pod]] = {}  # id(members) -> pods refused for the counts

    # ---- refusals ----------------------------------------------------------------------

    def refuse(self, m: Members, pod: Pod, skip: Skip) -> None:
        """Skip one of the members' pods; refusals for what the counts were (no room, another
        group) are remembered, to be tried again once the counts change."""
        self.skipped[id(pod)] = skip
        if skip.kind.for_the_counts:
            self._refused.setdefault(id(m), []).append(pod)

    def refused(self, m: Members) -> list[Pod]:
        """The members' pods refused for another group's sake, and not tried since."""
        skipped = self.skipped
        return [
            pod
            for pod in self._refused.get(id(m), ())
            if (skip := skipped.get(id(pod))) is not None and skip.kind is SkipKind.WOULD_VIOLATE
        ]

    def forget_refusals(self, m: Members) -> None:
        """Make the members' pods refused for what the counts were candidates again."""
        skipped = self.skipped
        for pod in self._refused.pop(id(m), ()):
            skip = skipped.get(id(pod))
            if skip is not None and skip.kind.for_the_counts:
                del skipped[id(pod)]

    # ---- one step ----------------------------------------------------------------------

    def land(self, owner: Members, pod: Pod) -> tuple[Node | None, str]:
        """Where the replacement of ``pod`` lands, with the pod already out of the counts."""
        counts = self.counts
        return self.landing.land(
            owner.profile, counts.tables(owner.profile), counts.wanted(owner.profile), pod
        )

    def trial(
        self, m: Members, owner: Members, pod: Pod, reason: str, measure: bool = False
    ) -> Trial | Skip | None:
        """Evict ``pod`` (one of ``owner``'s) for the sake of ``m`` in the simulation, and land
        its replacement. Applied, as a Trial, when it reduces ``m``'s misplaced pods and makes
        no group worse; otherwise undone, with a Skip saying why, or None (it does not help).
        ``measure``: also say by how much it brings the touched groups closer to balance (the
        fall in their exact minimum moves), to compare it with other candidate moves."""
        assert pod.node_name is not None
        counts = self.counts
        source = pod.node_name
        counting = counts.tables_counting(pod)
        affected = {id(x): x for t in counting for x in counts.users(t)}
        affected[id(m)] = m
        affected[id(owner)] = owner
        before = {k: counts.tally(x) for k, x in affected.items()}
        skews = counts.skews(affected.values(), before, counting)
        distance = counts.distance(affected.values()) if measure else 0
        mark = counts.mark()
        counts.shift(counting, source, -1)
        target, why = self.land(owner, pod)
        if target is None:
            counts.undo(mark)
            return Skip(pod, owner.workload, SkipKind.NO_ROOM, why)
        counts.shift(counting, target.name, +1)
        counts.relocate(owner, pod, source, target.name)
        after = {k: counts.tally(x) for k, x in affected.items()}
        harm = self.harm(m, affected, before, after, skews)
        if harm or after[id(m)][0] >= before[id(m)][0]:
            counts.undo(mark)
            if harm:
                return Skip(pod, owner.workload, SkipKind.WOULD_VIOLATE, harm)
            return None
        gain = distance - counts.distance(affected.values()) if measure else 0
        return Trial(m, owner, pod, target, mark, gain, reason)

    def harm(
        self,
        m: Members,
        affected: Mapping[int, Members],
        before: Mapping[int, tuple[int, Mapping[int, int]]],
        after: Mapping[int, tuple[int, Mapping[int, int]]],
        skews: Mapping[tuple[int, int], int],
    ) -> str:
        """Why the move may not be kept, or "": no group within its maxSkew (no misplaced pod)
        leaves it, no violated group ends with a larger skew unless within maxSkew, and no
        other workload ends with more misplaced pods."""
        for k, x in affected.items():
            was, now = before[k][1], after[k][1]
            for i in now:
                c = x.profile.constraints[i]
                if not was.get(i):
                    return f"the move would break the {c.key} spread of {x.workload}"
                old = skews.get((k, i))
                if old is not None:
                    new = self.counts.tables(x.profile)[i].skew(c.min_domains)
                    if new > old and new > c.max_skew:
                        return (
                            f"the move would raise the {c.key} skew of {x.workload} "
                            f"from {old} to {new}"
                        )
            if k != id(m) and after[k][0] > before[k][0]:
                return f"the move would break the spread of {x.workload}"
        return ""

    def undo(self, trial: Trial) -> None:
        self.counts.undo(trial.mark)

    def apply_move(self, owner: Members, pod: Pod) -> _Applied | None:
        """Evict the pod and land its replacement where predicted, whatever that does to the
        groups (None, and nothing changed, when no node would take it); ``undo_move`` takes
        it back exactly."""
        source = pod.node_name
        assert source is not None
        counts = self.counts
        counting = counts.tables_counting(pod)
        mark = counts.mark()
        counts.shift(counting, source, -1)
        target, _ = self.land(owner, pod)
        if target is None:
            counts.undo(mark)
            return None
        counts.shift(counting, target.name, +1)
        counts.relocate(owner, pod, source, target.name)
        self.landing.reserve(target.name, pod.spec.requests)
        return _Applied(owner, pod, target, mark)

    def undo_move(self, applied: _Applied) -> None:
        self.landing.release(applied.target.name, applied.pod.spec.requests)
        self.counts.undo(applied.mark)

    def keep_applied(self, applied: _Applied, reason: str) -> Move:
        """The Move of an applied eviction (its room is already reserved)."""
        pod, owner = applied.pod, applied.owner
        assert pod.node_name is not None
        self.moved.add(id(pod))
        self.skipped.pop(id(pod), None)
        return self._move(owner, pod, applied.target, reason)

    def _move(self, owner: Members, pod: Pod, target: Node, reason: str) -> Move:
        assert pod.node_name is not None
        return Move(
            pod,
            owner.workload,
            pod.node_name,
            target.name,
            self.counts.domains(owner.profile, pod.node_name),
            self.counts.domains(owner.profile, target.name),
            reason,
        )

    def force(self, owner: Members, pod: Pod, reason: str) -> Move:
        """Make the move whatever it does to the groups (a move of a sequence found by
        search, judged as a whole), landing the replacement where predicted."""
        assert pod.node_name is not None
        counts = self.counts
        source = pod.node_name
        counting = counts.tables_counting(pod)
        mark = counts.mark()
        counts.shift(counting, source, -1)
        target, why = self.land(owner, pod)
        assert target is not None, why  # the search landed it in this very state
        counts.shift(counting, target.name, +1)
        counts.relocate(owner, pod, source, target.name)
        trial = Trial(owner, owner, pod, target, mark, 0, reason)
        return self.keep(trial)

    def keep(self, trial: Trial) -> Move:
        pod, owner, target = trial.pod, trial.owner, trial.target
        self.landing.reserve(target.name, pod.spec.requests)
        self.moved.add(id(pod))
        return self._move(owner, pod, target, trial.reason)

    def commit(self, move: Move) -> None:
        self.gate.commit(move.pod, move.workload)

    def uncommit(self, move: Move) -> None:
        self.gate.uncommit(move.pod, move.workload)


def _eligible(
    sim: _Simulation,
    pod: Pod,
    *,
    workload: WorkloadRef,
    within_limits: bool,
    now: float | None,
    history: Mapping[WorkloadRef, float],
    record: bool,
) -> tuple[bool, str]:
    """Whether the pod may be tried this pass, and what would defer its eviction. ``record``
    keeps protected and budget-blocked pods among the skipped (a group's own pods)."""
    refusal = sim.gate.refusal(pod, now)
    if refusal is not None:
        if record:
            kind, reason = refusal
            sim.skipped[id(pod)] = Skip(pod, workload, SkipKind(kind.value), reason)
        return False, ""
    deferral = sim.gate.deferral(pod, workload, now, history)
    return not (within_limits and deferral), deferral


def _step(
    sim: _Simulation,
    m: Members,
    within_limits: bool,
    now: float | None,
    history: Mapping[WorkloadRef, float],
) -> tuple[Move, str] | None:
    """The next eviction for ``m``, and what defers it; None when no eviction helps.

    The first of ``m``'s own misplaced pods (most crowded first) whose move helps. Where
    ``m``'s selectors also count other workloads' pods in its crowded domains, moving one of
    those may help more (it may fix its own workload too) or be the only way: then every
    candidate, ``m``'s own first, is tried and the one that brings the groups it touches closest
    to balance wins (the earliest on ties).
    """
    foreign = victims.foreign(sim.counts, m, sim.moved, sim.skipped)
    measure = bool(foreign)
    best: tuple[int, Members, Pod, str, str] | None = None  # measured: the best move so far
    for pod, failing in victims.candidates(sim.counts, m, sim.moved, sim.skipped):
        ok, deferral = _eligible(
            sim,
            pod,
            workload=m.workload,
            within_limits=within_limits,
            now=now,
            history=history,
            record=True,
        )
        if not ok:
            continue
        assert pod.node_name is not None
        reason = sim.counts.verdict(m, pod.node_name, failing).reason
        trial = sim.trial(m, m, pod, reason, measure=measure)
        if trial is None:
            continue
        if isinstance(trial, Skip):
            sim.refuse(m, pod, trial)
            continue
        if not measure:
            return sim.keep(trial), deferral
        sim.undo(trial)
        if best is None or trial.gain > best[0]:
            best = (trial.gain, m, pod, reason, deferral)
    for owner, pod, reason in foreign:
        ok, deferral = _eligible(
            sim,
            pod,
            workload=owner.workload,
            within_limits=within_limits,
            now=now,
            history=history,
            record=False,
        )
        if not ok:
            continue
        trial = sim.trial(m, owner, pod, reason, measure=True)
        if isinstance(trial, Trial):
            sim.undo(trial)
            if best is None or trial.gain > best[0]:
                best = (trial.gain, owner, pod, reason, deferral)
    if best is None:
        return None
    _, owner, pod, reason, deferral = best
    trial = sim.trial(m, owner, pod, reason, measure=True)
    assert isinstance(trial, Trial)  # the state it was judged in, restored exactly
    return sim.keep(trial), deferral


def _compound(
    sim: _Simulation,
    m: Members,
    within_limits: bool,
    now: float | None,
    history: Mapping[WorkloadRef, float],
) -> list[tuple[Move, str]]:
    """Two moves judged as one step, when no single move helps ``m``: one of ``m``'s pods
    whose move was refused for breaking another workload's spread, then one of that
    workload's pods that mends it (a fix that needs a second workload to follow). Kept when
    the pair, as a whole, keeps the step's rule; [] when no pair does."""
    refused = sim.refused(m)
    judge = sim.counts.judge(m)
    for pod in refused[:FOREIGN_TRIALS]:
        assert pod.node_name is not None
        failing = fails(judge, sim.counts.node_labels[pod.node_name], pod.node_name)
        ok, deferral = _eligible(
            sim,
            pod,
            workload=m.workload,
            within_limits=within_limits,
            now=now,
            history=history,
            record=False,
        )
        if failing is None or not ok:
            continue
        reason = sim.counts.verdict(m, pod.node_name, failing).reason
        first = sim.apply_move(m, pod)
        if first is None:
            continue
        followers = victims.followers(sim.counts, m, pod, sim.moved, sim.skipped)
        sim.undo_move(first)
        for x, follower in followers:
            pair = _pair(
                sim,
                m,
                lead=(pod, reason, deferral),
                x=x,
                follower=follower,
                within_limits=within_limits,
                now=now,
                history=history,
            )
            if pair:
                return pair
    return []


def _pair(
    sim: _Simulation,
    m: Members,
    *,
    lead: tuple[Pod, str, str],
    x: Members,
    follower: Pod,
    within_limits: bool,
    now: float | None,
    history: Mapping[WorkloadRef, float],
) -> list[tuple[Move, str]]:
    pod, reason, deferral = lead
    ok, follower_deferral = _eligible(
        sim,
        follower,
        workload=x.workload,
        within_limits=within_limits,
        now=now,
        history=history,
        record=False,
    )
    if not ok:
        return []
    affected = sim.counts.affected(m, pod) | sim.counts.affected(x, follower)
    affected[id(m)] = m
    before = {k: sim.counts.tally(y) for k, y in affected.items()}
    changing = [*sim.counts.tables_counting(pod), *sim.counts.tables_counting(follower)]
    skews = sim.counts.skews(affected.values(), before, changing)
    first = sim.apply_move(m, pod)
    if first is None:
        return []
    second = sim.apply_move(x, follower)
    if second is not None:
        after = {k: sim.counts.tally(y) for k, y in affected.items()}
        if not sim.harm(m, affected, before, after, skews) and after[id(m)][0] < before[id(m)][0]:
            lead_move = sim.keep_applied(first, reason)
            follow_reason = (
                f"follows {pod.name}: its move would otherwise break the spread of {x.workload}"
            )
            follow_move = sim.keep_applied(second, follow_reason)
            if within_limits:  # both this run, or neither
                sim.commit(lead_move)
                follower_deferral = sim.gate.deferral(follower, x.workload, now, history)
                sim.uncommit(lead_move)
                if follower_deferral:
                    sim.moved.discard(id(pod))
                    sim.moved.discard(id(follower))
                    sim.undo_move(second)
                    sim.undo_move(first)
                    return []
            return [(lead_move, deferral), (follow_move, follower_deferral)]
        sim.undo_move(second)
    sim.undo_move(first)
    return []


def _run(
    sim: _Simulation,
    order: list[Members],
    within_limits: bool,
    now: float | None,
    history: Mapping[WorkloadRef, float],
) -> list[Move]:
    """Steps for each member in turn until none helps; a member is tried again once the counts
    its steps depend on have changed (its own tables or positions, or, when a move was refused
    for what it would do to another group, any kept move)."""
    moves: list[Move] = []
    failed: dict[int, tuple[tuple[int, ...], int]] = {}  # id(m) -> its stamp and moves then
    progress = True
    while progress:
        progress = False
        for m in order:
            last = failed.get(id(m))
            if last is not None:
                stamp, kept = last
                if stamp == sim.counts.stamp(m) and (kept == len(moves) or not sim.refused(m)):
                    continue
                sim.forget_refusals(m)
            while True:
                step = _step(sim, m, within_limits, now, history)
                steps = (
                    [step] if step is not None else _compound(sim, m, within_limits, now, history)
                )
                if not steps:
                    break
                progress = True
                sim.forget_refusals(m)  # the counts its refused pods were judged by changed
                for move, deferral in steps:
                    if within_limits:
                        sim.commit(move)
                        moves.append(move)
                    else:
                        moves.append(
                            replace(
                                move,
                                state=StepState.DEFERRED,
                                deferred_by=deferral
                                or "planned after this run's moves take effect",
                            )
                        )
            failed[id(m)] = (sim.counts.stamp(m), len(moves))
    return moves


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
    smaller than the greedy one, or balances what the greedy one does not."""
    history = history or {}
    held = held or {}
    greedy = _greedy_plan(analysis, policy, now, history, held)
    violations = analysis.violations
    if not violations:
        return greedy
    if sum(g.members.count for g in violations) > 4 * EXACT_MOVABLE:  # before a copy
        return replace(
            greedy,
            method_note=f"greedy (more than {EXACT_MOVABLE} movable pods: no exhaustive search)",
        )
    sim = _Simulation(analysis, policy, held)
    problem = _movable(sim, _violated_order(sim, analysis), now)
    if problem is None:
        return replace(
            greedy,
            method_note=f"greedy (more than {EXACT_MOVABLE} movable pods: no exhaustive search)",
        )
    movable, pool = problem
    greedy_moves = len(greedy.moves) + len(greedy.deferred)
    balanced = all(o.fixable for o in greedy.outcomes)
    limit = greedy_moves - 1 if balanced else len(movable)
    space = _ExactSpace(sim, movable, pool)
    budget = min(EXACT_BUDGET, EXACT_WORK // max(1, len(sim.counts.nodes)))
    found = fewest_moves(space, limit, budget)
    steering: list[tuple[Members, Pod]] = []
    if found.moves is None and found.complete:
        steering = _steering(sim, movable, now)
        if steering:
            movable = movable + steering
            wider = fewest_moves(
                _ExactSpace(sim, movable, pool), limit if balanced else len(movable), budget
            )
            if wider.moves is not None or not wider.complete:
                found = wider
    if found.moves is None:
        if not found.complete:
            note = f"greedy (the exhaustive search gave up after {found.applied} trial moves)"
        elif balanced:
            note = (
                f"greedy; an exhaustive search over {len(movable)} movable pods found "
                f"no plan with fewer than {greedy_moves} eviction(s)"
            )
        else:
            note = (
                f"greedy; an exhaustive search over {len(movable)} movable pods found no plan "
                f"that balances every group within {limit} eviction(s)"
            )
        return replace(greedy, method_note=note)
    return _sequence_plan(
        analysis,
        policy,
        now=now,
        history=history,
        held=held,
        sequence=[movable[i] for i in found.moves],
        steering={id(pod) for _, pod in steering},
        note=f"exact: the fewest evictions that balance every group ({len(found.moves)}), by "
        f"exhaustive search over {len(movable)} movable pods",
    )


def _violated_order(sim: _Simulation, analysis: Analysis) -> list[Members]:
    violated = {id(g.members) for g in analysis.violations}
    return sorted(
        (m for m in analysis.members if id(m) in violated),
        key=lambda m: (-sim.counts.violators(m), m.workload),
    )


def _greedy_plan(
    analysis: Analysis,
    policy: RebalancePolicy,
    now: float | None,
    history: Mapping[WorkloadRef, float],
    held: Mapping[WorkloadRef, str],
) -> Plan:
    sim = _Simulation(analysis, policy, held)
    order = _violated_order(sim, analysis)
    planned = _run(sim, order, True, now, history)
    after_run = {
        (id(g.members), g.index): sim.counts.violators(g.members, g.index)
        for g in analysis.violations
    }
    budgets_used = sim.gate.used()
    deferred = _run(sim, order, False, now, history)
    return _finish(
        analysis,
        sim,
        planned=planned,
        deferred=deferred,
        after_run=after_run,
        budgets_used=budgets_used,
        method="greedy",
    )


def _finish(
    analysis: Analysis,
    sim: _Simulation,
    *,
    planned: list[Move],
    deferred: list[Move],
    after_run: Mapping[tuple[int, int], int],
    budgets_used: Mapping[str, int],
    method: str,
    note: str = "",
) -> Plan:
    outcomes = []
    skipped_by_members: dict[WorkloadRef, list[Skip]] = defaultdict(list)
    for skip in sim.skipped.values():
        skipped_by_members[skip.workload].append(skip)
    for g in analysis.violations:
        remaining = sim.counts.violators(g.members, g.index)
        outcomes.append(
            Outcome(
                g,
                after_run[(id(g.members), g.index)],
                remaining,
                _message(g, remaining, skipped_by_members[g.workload]),
            )
        )
    skipped = sorted(sim.skipped.values(), key=lambda s: (s.pod.namespace, s.pod.name))
    return Plan(
        tuple(planned),
        tuple(deferred),
        tuple(skipped),
        tuple(outcomes),
        budgets_used,
        method,
        note,
    )


# The exhaustive search: at most this many movable pods, and this many simulated moves, fewer
# on large clusters (a predicted landing costs time in proportion to the nodes).
EXACT_MOVABLE = 14
EXACT_BUDGET = 20_000
EXACT_WORK = 2_000_000  # simulated moves times nodes: about a second at most


def _movable(
    sim: _Simulation, order: list[Members], now: float | None
) -> tuple[list[tuple[Members, Pod]], list[Members]] | None:
    """The pods an exhaustive search may move, misplaced pods first: those of the violated
    workloads, of the workloads their selectors count and of those whose selectors count
    them, and so on; neither protected nor blocked by a budget. None when there are more than
    ``EXACT_MOVABLE`` (other pods change no count that matters: an evicted pod holds its
    resources until it is gone)."""
    pool: dict[int, Members] = {id(m): m for m in order}
    work = list(order)
    while work:  # closed under both relations: a move there may touch a group here
        m = work.pop()
        related = [x for others in sim.counts.counted_others(m).values() for x in others]
        first = next(p for pods in m.by_node.values() for p in pods)
        related += [x for t in sim.counts.tables_counting(first) for x in sim.counts.users(t)]
        for x in related:
            if id(x) not in pool:
                pool[id(x)] = x
                work.append(x)
        if sum(x.count for x in pool.values()) > 4 * EXACT_MOVABLE:
            return None
    misplaced: list[tuple[Members, Pod]] = []
    rest: list[tuple[Members, Pod]] = []
    for x in sorted(pool.values(), key=lambda x: x.workload):
        judge = sim.counts.judge(x)
        for node_name, pods in x.by_node.items():
            bad = fails(judge, sim.counts.node_labels[node_name], node_name) is not None
            for pod in pods:
                if sim.gate.refusal(pod, now) is not None:
                    continue
                (misplaced if bad else rest).append((x, pod))
    found = misplaced + rest
    return (found, list(pool.values())) if len(found) <= EXACT_MOVABLE else None


def _steering(
    sim: _Simulation, movable: list[tuple[Members, Pod]], now: float | None
) -> list[tuple[Members, Pod]]:
    """Pods of the other workloads that a search may move as a last resort, up to
    ``EXACT_MOVABLE`` in all: their counts matter to no violated group, but their
    replacements take room, and a full node sends a later replacement elsewhere (an evicted
    pod holds its room until it is gone). Only where some node's room is limited."""
    room = EXACT_MOVABLE - len(movable)
    nodes = sim.counts.nodes.values()
    if room <= 0 or all(n.max_pods is None and n.allocatable is None for n in nodes):
        return []
    taken = {id(pod) for _, pod in movable}
    out: list[tuple[Members, Pod]] = []
    for members in sorted(
        (x for xs in sim.counts.members_by_namespace.values() for x in xs),
        key=lambda x: x.workload,
    ):
        for pods in members.by_node.values():
            for pod in pods:
                if id(pod) in taken or sim.gate.refusal(pod, now) is not None:
                    continue
                out.append((members, pod))
                if len(out) == room:
                    return out
    return out


class _ExactSpace:
    """The simulation as a search space (search.Space): moving a pod evicts it and lands its
    replacement where the planner predicts; the goal is every touched group balanced."""

    def __init__(
        self, sim: _Simulation, movable: list[tuple[Members, Pod]], pool: list[Members]
    ) -> None:
        self.sim = sim
        self.movable = movable
        watched: dict[int, Members] = {id(x): x for x in pool}
        for owner, pod in movable:
            watched[id(owner)] = owner
            for t in sim.counts.tables_counting(pod):
                for x in sim.counts.users(t):
                    watched.setdefault(id(x), x)
        self.watched = list(watched.values())
        self.moved = [False] * len(movable)
        self.stack: list[tuple[int, _Applied]] = []

    def items(self) -> list[int]:
        return [i for i, gone in enumerate(self.moved) if not gone]

    def apply(self, item: int) -> bool:
        owner, pod = self.movable[item]
        applied = self.sim.apply_move(owner, pod)
        if applied is None:
            return False
        self.moved[item] = True
        self.stack.append((item, applied))
        return True

    def undo(self) -> None:
        item, applied = self.stack.pop()
        self.sim.undo_move(applied)
        self.moved[item] = False

    def done(self) -> bool:
        return all(self.sim.counts.violators(x) == 0 for x in self.watched)

    def lower_bound(self) -> int | None:
        """The most moves any one violated constraint needs on its own (at least one).

        The exact minimum for a constraint brings every counted pod within maxSkew; that
        bounds the search only where every counted pod is one of the group's own, which must
        pass, and every member is counted. Other pods it counts need not move (and may not
        be able to): one move of a member, or of another workload's pod, may be all it
        takes."""
        counts = self.sim.counts
        bound = 0
        for x in self.watched:
            violated = counts.tally(x)[1]
            if not violated:
                continue
            bound = max(bound, 1)
            selected = counts.selected(x)
            positions = counts.positions(x)
            for i in violated:
                table = counts.tables(x.profile)[i]
                node_domain = table.space.node_domain
                own = sum(len(p) for n, p in positions.items() if n in node_domain)
                if not selected[i] or own != x.count or sum(table.counts.values()) != own:
                    continue  # members outside the counts, or other pods in them
                c = x.profile.constraints[i]
                moves = minimum_moves(
                    [table.get(d) for d in table.space.domain_nodes], c.max_skew, c.min_domains
                )
                bound = max(bound, moves or 1)
        return bound

    def key(self) -> frozenset[tuple[int, str]]:
        return frozenset((item, applied.target.name) for item, applied in self.stack)


def _sequence_plan(
    analysis: Analysis,
    policy: RebalancePolicy,
    *,
    now: float | None,
    history: Mapping[WorkloadRef, float],
    held: Mapping[WorkloadRef, str],
    sequence: list[tuple[Members, Pod]],
    steering: set[int] | None = None,
    note: str,
) -> Plan:
    """A plan that makes these moves in this order: this run's until the first that a cap,
    cooldown or budget defers, later runs' from there on."""
    sim = _Simulation(analysis, policy, held)
    order = _violated_order(sim, analysis)
    for m in order:  # the violated workloads' misplaced pods that may not move
        for pod, _ in victims.candidates(sim.counts, m, sim.moved, sim.skipped):
            _eligible(
                sim,
                pod,
                workload=m.workload,
                within_limits=False,
                now=now,
                history=history,
                record=True,
            )
    planned: list[Move] = []
    deferred: list[Move] = []
    after_run: dict[tuple[int, int], int] | None = None
    budgets_used: Mapping[str, int] = {}
    for owner, pod in sequence:
        assert pod.node_name is not None
        deferral = "" if deferred else sim.gate.deferral(pod, owner.workload, now, history)
        if (deferred or deferral) and after_run is None:
            after_run = _violators_now(sim, analysis)
            budgets_used = sim.gate.used()
        failing = fails(
            sim.counts.judge(owner), sim.counts.node_labels[pod.node_name], pod.node_name
        )
        if failing is not None:
            reason = sim.counts.verdict(owner, pod.node_name, failing).reason
        elif steering and id(pod) in steering:
            reason = (
                "its replacement takes room a later replacement would otherwise take, "
                "sending that one where its group is balanced"
            )
        else:
            reason = "counted by a violated group's spread: moving it lets that group be balanced"
        move = sim.force(owner, pod, reason)
        if after_run is None:
            sim.commit(move)
            planned.append(move)
        else:
            deferred.append(
                replace(
                    move,
                    state=StepState.DEFERRED,
                    deferred_by=deferral or "planned after this run's moves take effect",
                )
            )
    if after_run is None:
        after_run = _violators_now(sim, analysis)
        budgets_used = sim.gate.used()
    return _finish(
        analysis,
        sim,
        planned=planned,
        deferred=deferred,
        after_run=after_run,
        budgets_used=budgets_used,
        method="exact",
        note=note,
    )


def _violators_now(sim: _Simulation, analysis: Analysis) -> dict[tuple[int, int], int]:
    return {
        (id(g.members), g.index): sim.counts.violators(g.members, g.index)
        for g in analysis.violations
    }


def domains_needed(counts: list[int], max_skew: int, min_domains: int) -> tuple[int, int]:
    """How many empty domains must be added before moves can fix it, and the moves then."""
    extra = 1
    while True:
        moves = minimum_moves(counts + [0] * extra, max_skew, min_domains)
        if moves is not None:
            return extra, moves
        extra += 1


def _message(group: Group, remaining: int, skips: list[Skip]) -> str:
    c = group.constraint
    counts = [group.domain_count(d) for d in group.domains]
    if remaining == 0:
        return (
            f"{group.violating} pod(s) placed against {c.key} maxSkew {c.max_skew}; "
            f"fixable by eviction (at least {group.minimum_moves} move(s))"
        )
    if minimum_moves(counts, c.max_skew, c.min_domains) is None:
        extra, moves = domains_needed(counts, c.max_skew, c.min_domains)
        return (
            f"not fixable by eviction: {sum(counts)} pods at maxSkew {c.max_skew} over "
            f"{len(counts)} eligible {c.key} domain(s) (minDomains {c.min_domains}); needs "
            f"{extra} more eligible domain(s), then {moves} move(s) would fix it"
        )
    if skips:
        kinds = Counter(s.reason for s in skips)
        reason, n = kinds.most_common(1)[0]
        return f"not fixable by eviction now: {n} pod(s) that would have to move: {reason}"
    return f"not fixable by eviction now: {remaining} pod(s) still placed against {c.key}"

"""One planning run of the eviction planner: the simulation its moves are tried in, and the
plan it ends with.

``Simulation`` holds the parts with one job each: the simulated counts (analysis/tally.py on
the working counts of analysis/whatif.py, on the Filter kernel), the eviction gate
(evictor.py), the landing predictor (scheduling/landing.py), and the pods moved and skipped so
far. A move evicts a pod and lands
its replacement where predicted; it is tried, then kept or undone exactly (the working counts'
journal). ``Pass`` is one pass over the violated groups: this run's, within the policy's caps,
cooldown and budgets, or later runs', past them.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from respread.analysis.groups import Analysis, Group, Members, WorkloadRef, minimum_moves
from respread.analysis.tally import SimCounts
from respread.core.model import Node, Pod, PodName
from respread.inputs.policy import RebalancePolicy
from respread.remedies.evict.evictor import EvictionGate
from respread.remedies.evict.steps import Move, Skip, SkipKind, Verdict
from respread.scheduling.landing import LandingPredictor
from respread.scheduling.spread import SpreadIndex


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the plan does for one violated group."""

    group: Group
    violating_after_run: int  # after this run's planned moves
    violating_after_all: int  # after the deferred moves too
    message: str
    waiting_for: str = ""  # the holds whose lifting lets eviction fix it (verdict Waiting)

    @property
    def fixable(self) -> bool:
        return self.violating_after_all == 0

    @property
    def verdict(self) -> Verdict:
        if self.fixable:
            return Verdict.FIXABLE
        if self.waiting_for:
            return Verdict.WAITING
        if self.violating_after_all < self.group.violating:
            return Verdict.PARTLY_FIXABLE
        return Verdict.NOT_FIXABLE


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
class Applied:
    """An eviction applied to the simulation, with what undoing it needs."""

    owner: Members
    pod: Pod
    target: Node
    mark: int  # the working counts before it


@dataclass(slots=True)
class Trial:
    """A simulated eviction, applied, that ``keep`` turns into a Move or ``undo`` takes back."""

    members: Members  # the group it is for
    owner: Members  # the pod's own workload and profile
    pod: Pod
    target: Node
    mark: int  # the working counts before it
    # the fall in the misplaced pods of the groups it touches, then in their distance from
    # balance (when measured): a move that fixes two groups at once beats one that fixes one
    gain: tuple[int, int]
    reason: str


@dataclass(frozen=True, slots=True)
class PlanInputs:
    """What one plan is made from: the analysis under the policy, the time, the last eviction
    per workload (the cooldown) and the workloads the operator holds back this run."""

    analysis: Analysis
    policy: RebalancePolicy
    now: float | None
    history: Mapping[WorkloadRef, float]
    held: Mapping[WorkloadRef, str]

    def simulation(self) -> Simulation:
        return Simulation(self.analysis, self.policy, self.held)

    def passing(self, sim: Simulation, within_limits: bool) -> Pass:
        return Pass(sim, within_limits, self.now, self.history)


class Simulation:
    """One planning run: the simulated counts, the eviction gate, the landing predictor, and
    the pods moved and skipped so far. A move is tried, then kept or undone exactly."""

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
        self.moved: set[PodName] = set()  # pods already moved (their replacements stay put)
        self.skipped: dict[PodName, Skip] = {}
        self._refused: dict[Members, list[Pod]] = {}  # pods refused for the counts

    # ---- refusals ----------------------------------------------------------------------

    def refuse(self, m: Members, pod: Pod, skip: Skip) -> None:
        """Skip one of the members' pods; refusals for what the counts were (no room, another
        group) are remembered, to be tried again once the counts change."""
        self.skipped[(pod.namespace, pod.name)] = skip
        if skip.kind.for_the_counts:
            self._refused.setdefault(m, []).append(pod)

    def refused(self, m: Members) -> list[Pod]:
        """The members' pods refused for another group's sake, and not tried since."""
        skipped = self.skipped
        return [
            pod
            for pod in self._refused.get(m, ())
            if (skip := skipped.get((pod.namespace, pod.name))) is not None
            and skip.kind is SkipKind.WOULD_VIOLATE
        ]

    def forget_refusals(self, m: Members) -> None:
        """Make the members' pods refused for what the counts were candidates again."""
        skipped = self.skipped
        for pod in self._refused.pop(m, ()):
            skip = skipped.get((pod.namespace, pod.name))
            if skip is not None and skip.kind.for_the_counts:
                del skipped[(pod.namespace, pod.name)]

    # ---- one step ----------------------------------------------------------------------

    def land(self, owner: Members, pod: Pod) -> tuple[Node | None, str]:
        """Where the replacement of ``pod`` lands, with the pod already out of the counts."""
        counts = self.counts
        return self.landing.land(
            owner.profile, counts.tables(owner.profile), counts.wanted(owner.profile), pod
        )

    def _evict(self, owner: Members, pod: Pod) -> tuple[Node | None, str, int]:
        """Evict ``pod`` and land its replacement where predicted: the target (None, and
        nothing changed, when no node would take it), why not, and the state before."""
        assert pod.node_name is not None
        counts = self.counts
        mark = counts.mark()
        counts.remove_pod(pod, pod.node_name, owner)
        target, why = self.land(owner, pod)
        if target is None:
            counts.undo(mark)
        else:
            counts.add_pod(pod, target.name, owner)
        return target, why, mark

    def trial(
        self, m: Members, owner: Members, pod: Pod, reason: str, measure: bool = False
    ) -> Trial | Skip | None:
        """Evict ``pod`` (one of ``owner``'s) for the sake of ``m`` in the simulation, and land
        its replacement. Applied, as a Trial, when it reduces ``m``'s misplaced pods and makes
        no group worse; otherwise undone, with a Skip saying why, or None (it does not help).
        ``measure``: also say by how much it brings the touched groups closer to balance (the
        fall in their misplaced pods, then in their exact minimum moves), to compare it with
        other candidate moves."""
        counts = self.counts
        counting = counts.tables_counting(pod)
        affected = dict.fromkeys(x for t in counting for x in counts.users(t))
        affected[m] = affected[owner] = None
        before = {x: counts.tally(x) for x in affected}
        skews = counts.skews(affected, before, counting)
        distance = counts.distance(affected) if measure else 0
        target, why, mark = self._evict(owner, pod)
        if target is None:
            return Skip(pod, owner.workload, SkipKind.NO_ROOM, why)
        after = {x: counts.tally(x) for x in affected}
        harm = self.harm(m, affected, before, after, skews)
        if harm or after[m][0] >= before[m][0]:
            counts.undo(mark)
            if harm:
                return Skip(pod, owner.workload, SkipKind.WOULD_VIOLATE, harm)
            return None
        gain = (0, 0)
        if measure:
            fixed = sum(before[x][0] - after[x][0] for x in affected)
            gain = (fixed, distance - counts.distance(affected))
        return Trial(m, owner, pod, target, mark, gain, reason)

    def harm(
        self,
        m: Members,
        affected: Collection[Members],
        before: Mapping[Members, tuple[int, Mapping[int, int]]],
        after: Mapping[Members, tuple[int, Mapping[int, int]]],
        skews: Mapping[tuple[Members, int], int],
    ) -> str:
        """Why the move may not be kept, or "": no group within its maxSkew (no misplaced pod)
        leaves it, no violated group ends with a larger skew unless within maxSkew, and no
        other workload ends with more misplaced pods."""
        for x in affected:
            why = self._worse(x, before[x][1], after[x][1], skews)
            if why:
                return why
            if x is not m and after[x][0] > before[x][0]:
                return f"the move would break the spread of {x.workload}"
        return ""

    def _worse(
        self,
        x: Members,
        was: Mapping[int, int],
        now: Mapping[int, int],
        skews: Mapping[tuple[Members, int], int],
    ) -> str:
        """Why one group of ``x`` violated after the move is worse than before, or ""."""
        for i in now:
            c = x.profile.constraints[i]
            if not was.get(i):
                return f"the move would break the {c.key} spread of {x.workload}"
            old = skews.get((x, i))
            if old is not None:
                new = self.counts.tables(x.profile)[i].skew(c.min_domains)
                if new > old and new > c.max_skew:
                    return (
                        f"the move would raise the {c.key} skew of {x.workload} from {old} to {new}"
                    )
        return ""

    def undo(self, trial: Trial) -> None:
        self.counts.undo(trial.mark)

    def apply_move(self, owner: Members, pod: Pod) -> Applied | None:
        """Evict the pod and land its replacement where predicted, whatever that does to the
        groups (None, and nothing changed, when no node would take it); ``undo_move`` takes
        it back exactly."""
        target, _, mark = self._evict(owner, pod)
        if target is None:
            return None
        self.landing.reserve(target.name, pod.spec.requests)
        return Applied(owner, pod, target, mark)

    def undo_move(self, applied: Applied) -> None:
        self.landing.release(applied.target.name, applied.pod.spec.requests)
        self.counts.undo(applied.mark)

    def keep_applied(self, applied: Applied, reason: str) -> Move:
        """The Move of an applied eviction (its room is already reserved)."""
        pod, owner = applied.pod, applied.owner
        self.moved.add((pod.namespace, pod.name))
        self.skipped.pop((pod.namespace, pod.name), None)
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
        target, why, mark = self._evict(owner, pod)
        assert target is not None, why  # the search landed it in this very state
        return self.keep(Trial(owner, owner, pod, target, mark, (0, 0), reason))

    def keep(self, trial: Trial) -> Move:
        pod, owner, target = trial.pod, trial.owner, trial.target
        self.landing.reserve(target.name, pod.spec.requests)
        self.moved.add((pod.namespace, pod.name))
        return self._move(owner, pod, target, trial.reason)

    def commit(self, move: Move) -> None:
        self.gate.commit(move.pod, move.workload)

    def lift_holds(self) -> None:
        """Go on as a later run would once every hold has lifted (minPodAge, budgets whose
        pods are not all healthy or whose status is stale): the moves made so far stay made,
        and no pod is skipped any more (each is judged afresh, under the lifted gate)."""
        gate = self.gate
        self.gate = EvictionGate(gate.policy, self.index.state.budgets, gate.held, lift_holds=True)
        self.skipped.clear()
        self._refused.clear()

    def uncommit(self, move: Move) -> None:
        self.gate.uncommit(move.pod, move.workload)


@dataclass(frozen=True, slots=True)
class Pass:
    """One pass of the planner over a simulation: this run's (``within_limits``: the policy's
    caps, cooldown and budgets hold, and what they defer is not tried) or later runs'."""

    sim: Simulation
    within_limits: bool
    now: float | None
    history: Mapping[WorkloadRef, float]

    def eligible(
        self, pod: Pod, workload: WorkloadRef, *, record: bool = False
    ) -> tuple[bool, str]:
        """Whether the pod may be tried this pass, and what would defer its eviction. ``record``
        keeps protected and budget-blocked pods among the skipped (a group's own pods)."""
        sim = self.sim
        refusal = sim.gate.refusal(pod, self.now)
        if refusal is not None:
            if record:
                kind, reason = refusal
                sim.skipped[(pod.namespace, pod.name)] = Skip(pod, workload, kind, reason)
            return False, ""
        deferral = sim.gate.deferral(pod, workload, self.now, self.history)
        return not (self.within_limits and deferral), deferral

    def deferral(self, pod: Pod, workload: WorkloadRef) -> str:
        """What would defer the pod's eviction past this run ("": nothing)."""
        return self.sim.gate.deferral(pod, workload, self.now, self.history)


def violated_order(sim: Simulation, analysis: Analysis) -> list[Members]:
    """The members of violated groups, the most misplaced pods first."""
    violated = {g.members for g in analysis.violations}
    return most_misplaced_first(sim, [m for m in analysis.members if m in violated])


def most_misplaced_first(sim: Simulation, members: Collection[Members]) -> list[Members]:
    """The members, the most misplaced pods (now, in the simulation) first."""
    return sorted(members, key=lambda m: (-sim.counts.violators(m), m.workload))


@dataclass(frozen=True, slots=True)
class RunEnd:
    """The simulation once this run's moves are made: each violated group's misplaced pods,
    and the budgets those moves use."""

    violators: Mapping[tuple[Members, int], int]
    budgets_used: Mapping[str, int]

    @classmethod
    def of(cls, sim: Simulation, analysis: Analysis) -> RunEnd:
        counts = sim.counts
        violators = {
            (g.members, g.index): counts.violators(g.members, g.index) for g in analysis.violations
        }
        return cls(violators, sim.gate.used())


def finish(
    analysis: Analysis,
    sim: Simulation,
    *,
    planned: list[Move],
    deferred: list[Move],
    run_end: RunEnd,
    method: str,
    note: str = "",
) -> Plan:
    """The plan of a simulation run to its end: each violated group's outcome."""
    outcomes = []
    skipped_by_members: dict[WorkloadRef, list[Skip]] = defaultdict(list)
    for skip in sim.skipped.values():
        skipped_by_members[skip.workload].append(skip)
    for g in analysis.violations:
        remaining = sim.counts.violators(g.members, g.index)
        outcomes.append(
            Outcome(
                g,
                run_end.violators[(g.members, g.index)],
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
        run_end.budgets_used,
        method,
        note,
    )


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
    prefix, why = _not_fixable(group, counts, remaining, skips)
    if remaining < group.violating:
        return (
            f"partly fixable by eviction: {group.violating} misplaced pod(s) now, {remaining} "
            f"after every eviction this run and later runs plan; the rest are not: {why}"
        )
    return f"{prefix}: {why}"


def _not_fixable(
    group: Group, counts: list[int], remaining: int, skips: list[Skip]
) -> tuple[str, str]:
    """Why eviction leaves misplaced pods: not at all (the domains cannot hold the pods within
    maxSkew), or not now (the pods that would have to move, or what is left)."""
    c = group.constraint
    if minimum_moves(counts, c.max_skew, c.min_domains) is None:
        extra, moves = domains_needed(counts, c.max_skew, c.min_domains)
        return "not fixable by eviction", (
            f"{sum(counts)} pods at maxSkew {c.max_skew} over "
            f"{len(counts)} eligible {c.key} domain(s) (minDomains {c.min_domains}); needs "
            f"{extra} more eligible domain(s), then {moves} move(s) would fix it"
        )
    if skips:
        kinds = Counter(s.reason for s in skips)
        reason, n = kinds.most_common(1)[0]
        return "not fixable by eviction now", f"{n} pod(s) that would have to move: {reason}"
    return "not fixable by eviction now", f"{remaining} pod(s) still placed against {c.key}"

"""The exhaustive search for the fewest evictions: where the violated workloads, and the
workloads their selectors count, hold few enough movable pods, every sequence of moves is
tried (search.fewest_moves) on the planner's simulation, and the plan that makes the shortest
sequence found is built (``sequence_plan``).
"""

from __future__ import annotations

from dataclasses import replace

from respread.analysis.groups import Members, minimum_moves
from respread.analysis.tally import fails
from respread.core.model import Pod, PodName
from respread.remedies.evict import victims
from respread.remedies.evict.search import Found, fewest_moves
from respread.remedies.evict.simulation import (
    Applied,
    Plan,
    PlanInputs,
    RunEnd,
    Simulation,
    finish,
    violated_order,
)
from respread.remedies.evict.steps import Move, StepState

# The simulated moves a search may try (both searches of one plan together), fewer on larger
# clusters: a predicted landing costs time in proportion to the nodes. A count, not a time, so
# that the same input always gives the same plan; at most about 0.3 s of one core
# (bench/planner_worst.py, docs/limits.md).
EXACT_BUDGET = 2_000
EXACT_WORK = 16_000  # simulated moves tried times nodes

Movable = list[tuple[Members, Pod]]


def exact_plan(inputs: PlanInputs, greedy: Plan, limit: int) -> Plan:
    """The greedy plan, or the exact one when the search finds fewer evictions than it or
    balances what it does not, over at most ``limit`` movable pods; the greedy plan says how
    the search went."""
    too_many = replace(
        greedy, method_note=f"greedy (more than {limit} movable pods: no exhaustive search)"
    )
    sim, now = inputs.simulation(), inputs.now
    problem = _movable(sim, violated_order(sim, inputs.analysis), now, limit)
    if problem is None:
        return too_many
    movable, pool = problem
    greedy_moves = len(greedy.moves) + len(greedy.deferred)
    balanced = all(o.fixable for o in greedy.outcomes)
    bound = greedy_moves - 1 if balanced else len(movable)
    budget = min(EXACT_BUDGET, EXACT_WORK // max(1, len(sim.counts.nodes)))
    found = fewest_moves(_ExactSpace(sim, movable, pool), bound, budget)
    steering: Movable = []
    if found.moves is None and found.complete:
        steering = _steering(sim, movable, now, limit)
        if steering:
            movable = movable + steering
            wider = fewest_moves(
                _ExactSpace(sim, movable, pool),
                bound if balanced else len(movable),
                budget - found.tried,
            )
            if wider.moves is not None or not wider.complete:
                found = replace(wider, tried=found.tried + wider.tried)
    if found.moves is None:
        return replace(greedy, method_note=_search_note(found, balanced, movable, greedy_moves))
    return sequence_plan(
        inputs,
        sequence=[movable[i] for i in found.moves],
        steering={(pod.namespace, pod.name) for _, pod in steering},
        note=f"exact: the fewest evictions that balance every group ({len(found.moves)}), by "
        f"exhaustive search over {len(movable)} movable pods",
    )


def _search_note(found: Found, balanced: bool, movable: Movable, greedy_moves: int) -> str:
    """How a search that found nothing better went, one line."""
    if not found.complete:
        return (
            f"greedy (the exhaustive search gave up after {found.tried} trial moves: "
            "a plan with fewer evictions may exist)"
        )
    if balanced:
        return (
            f"greedy: {greedy_moves} eviction(s) in all, this run's and later runs' "
            f"together, the fewest there are (an exhaustive search over {len(movable)} "
            "movable pods found no plan with fewer)"
        )
    if not movable:
        return (
            "greedy: no plan balances every group (no pod that counts may be evicted now: "
            "each is protected, too young or refused by its budget; see the pods not "
            "evicted)"
        )
    return (
        "greedy: no plan balances every group (an exhaustive search found none among "
        f"the evictions of {len(movable)} movable pods)"
    )


def _related(sim: Simulation, order: list[Members], limit: int) -> dict[Members, None] | None:
    """The violated workloads, the workloads their selectors count and those whose selectors
    count them, and so on (a move there may touch a group here); None when they hold more
    than ``4 * limit`` pods."""
    pool = dict.fromkeys(order)
    work = list(order)
    counts = sim.counts
    while work:
        m = work.pop()
        related = [x for others in counts.counted_others(m).values() for x in others]
        first = next(p for pods in m.by_node.values() for p in pods)
        related += [x for t in counts.tables_counting(first) for x in counts.users(t)]
        for x in related:
            if x not in pool:
                pool[x] = None
                work.append(x)
        if sum(x.count for x in pool) > 4 * limit:
            return None
    return pool


def _movable(
    sim: Simulation, order: list[Members], now: float | None, limit: int
) -> tuple[Movable, list[Members]] | None:
    """The pods an exhaustive search may move, misplaced pods first: those of the related
    workloads (``_related``), neither protected nor blocked by a budget. None when there are
    more than ``limit`` (other pods change no count that matters: an evicted pod holds its
    resources until it is gone)."""
    pool = _related(sim, order, limit)
    if pool is None:
        return None
    misplaced: Movable = []
    rest: Movable = []
    counts = sim.counts
    for x in sorted(pool, key=lambda x: x.workload):
        judge = counts.judge(x)
        for node_name, pods in x.by_node.items():
            bad = fails(judge, counts.node_labels[node_name], node_name) is not None
            for pod in pods:
                if sim.gate.refusal(pod, now) is None:
                    (misplaced if bad else rest).append((x, pod))
    found = misplaced + rest
    return (found, list(pool)) if len(found) <= limit else None


def _steering(sim: Simulation, movable: Movable, now: float | None, limit: int) -> Movable:
    """Pods of the other workloads that a search may move as a last resort, up to ``limit``
    in all: their counts matter to no violated group, but their replacements take room, and a
    full node sends a later replacement elsewhere (an evicted pod holds its room until it is
    gone). Only where some node's room is limited."""
    room = limit - len(movable)
    nodes = sim.counts.nodes.values()
    if room <= 0 or all(n.max_pods is None and n.allocatable is None for n in nodes):
        return []
    taken = {(pod.namespace, pod.name) for _, pod in movable}
    everyone = sorted(
        (x for xs in sim.counts.members_by_namespace.values() for x in xs),
        key=lambda x: x.workload,
    )
    out: Movable = []
    for members in everyone:
        for pod in (p for pods in members.by_node.values() for p in pods):
            if (pod.namespace, pod.name) in taken or sim.gate.refusal(pod, now) is not None:
                continue
            out.append((members, pod))
            if len(out) == room:
                return out
    return out


class _ExactSpace:
    """The simulation as a search space (search.Space): moving a pod evicts it and lands its
    replacement where the planner predicts; the goal is every touched group balanced."""

    def __init__(self, sim: Simulation, movable: Movable, pool: list[Members]) -> None:
        self.sim = sim
        self.movable = movable
        watched = dict.fromkeys(pool)  # an ordered set
        for owner, pod in movable:
            watched[owner] = None
            for t in sim.counts.tables_counting(pod):
                watched.update(dict.fromkeys(sim.counts.users(t)))
        self.watched = list(watched)
        self.moved = [False] * len(movable)
        self.stack: list[tuple[int, Applied]] = []

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
        bound = 0
        for x in self.watched:
            violated = self.sim.counts.tally(x)[1]
            if violated:
                bound = max(bound, 1, *(self._own_moves(x, i) for i in violated))
        return bound

    def _own_moves(self, x: Members, constraint: int) -> int:
        """The exact minimum moves of one violated constraint of ``x`` where its counts hold
        only ``x``'s pods, all of them counted (else 1: no bound)."""
        counts = self.sim.counts
        table = counts.tables(x.profile)[constraint]
        node_domain = table.space.node_domain
        own = sum(len(p) for n, p in counts.positions(x).items() if n in node_domain)
        if (
            not counts.selected(x)[constraint]
            or own != x.count
            or sum(table.counts.values()) != own
        ):
            return 1  # members outside the counts, or other pods in them
        c = x.profile.constraints[constraint]
        moves = minimum_moves(
            [table.get(d) for d in table.space.domain_nodes], c.max_skew, c.min_domains
        )
        return moves or 1

    def key(self) -> frozenset[tuple[int, str]]:
        return frozenset((item, applied.target.name) for item, applied in self.stack)


def sequence_plan(
    inputs: PlanInputs,
    *,
    sequence: Movable,
    steering: set[PodName] | None = None,
    note: str,
) -> Plan:
    """A plan that makes these moves in this order: this run's until the first that a cap,
    cooldown or budget defers, later runs' from there on."""
    analysis = inputs.analysis
    sim = inputs.simulation()
    later = inputs.passing(sim, False)
    # the violated workloads' misplaced pods that may not move
    for m in violated_order(sim, analysis):
        for pod, _ in victims.candidates(sim.counts, m, sim.moved, sim.skipped):
            later.eligible(pod, m.workload, record=True)
    planned: list[Move] = []
    deferred: list[Move] = []
    run_end: RunEnd | None = None
    for owner, pod in sequence:
        deferral = "" if deferred else later.deferral(pod, owner.workload)
        if (deferred or deferral) and run_end is None:
            run_end = RunEnd.of(sim, analysis)
        move = sim.force(owner, pod, _reason(sim, owner, pod, steering or set()))
        if run_end is None:
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
    return finish(
        analysis,
        sim,
        planned=planned,
        deferred=deferred,
        run_end=run_end or RunEnd.of(sim, analysis),
        method="exact",
        note=note,
    )


def _reason(sim: Simulation, owner: Members, pod: Pod, steering: set[PodName]) -> str:
    """Why a move of a searched sequence is made, as the move's reason."""
    node = pod.node_name
    assert node is not None
    failing = fails(sim.counts.judge(owner), sim.counts.node_labels[node], node)
    if failing is not None:
        return sim.counts.verdict(owner, node, failing).reason
    if (pod.namespace, pod.name) in steering:
        return (
            "its replacement takes room a later replacement would otherwise take, "
            "sending that one where its group is balanced"
        )
    return "counted by a violated group's spread: moving it lets that group be balanced"

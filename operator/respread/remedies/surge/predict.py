"""What a surge of k is predicted to do: where the scheduler places the k new pods, one at a
time (scheduling/landing.py, the landing predictor every remedy uses), which k victims the
scale-back then removes (surge/victims.py), and the misplaced pods left. Simulated on the
working counts (surge/workload.py) and undone. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from respread.analysis.groups import Analysis, Members
from respread.core.model import Node, Pod
from respread.remedies.surge.others import judge_others
from respread.remedies.surge.victims import Victim, choose_victims
from respread.remedies.surge.workload import Domains, SurgedWorkload
from respread.scheduling.landing import LandingPredictor


@dataclass(frozen=True, slots=True)
class Landing:
    node: str
    domains: Domains
    # other domains the scheduler's Filter also admits, more or less crowded than this one
    others: tuple[Domains, ...] = ()


@dataclass(frozen=True, slots=True)
class Prediction:
    surge: int
    landings: tuple[Landing, ...]
    victims: tuple[Victim, ...]
    misplaced: int  # after the likely placement and the victims chosen from it
    worst: int  # after the worst admissible placement (= misplaced when determined)


def _synthetic(template: Pod, node: str, n: int) -> Pod:
    return replace(template, name=f"(new pod {n})", node_name=node, uid=None, created=None)


def _landing(
    sim: SurgedWorkload, options: list[tuple[int, Node]], *, worst: bool
) -> tuple[str, tuple[Domains, ...]]:
    """Of the nodes a new pod may land on (``LandingPredictor.admitted``, best first): the
    likely one (the first), or with ``worst`` the most crowded domain's best node (other scores
    may outweigh the spread score: at maxSkew above 1 several domains pass); and the other
    domains the Filter admits that are more or less crowded than the chosen one (a domain as
    crowded is an equivalent choice for the spread: the same counts, relabelled)."""
    by_domain: dict[Domains, tuple[int, Node]] = {}
    for score, node in options:  # the nodes of one domain score alike: its best comes first
        by_domain.setdefault(sim.domains(node.name), (score, node))
    if worst:
        chosen = max(by_domain, key=lambda d: (by_domain[d][0], d))
    else:
        chosen = sim.domains(options[0][1].name)
    score, node = by_domain[chosen]
    return node.name, tuple(sorted(d for d, (s, _) in by_domain.items() if s != score))


def _simulate(
    analysis: Analysis, members: Members, k: int, *, worst: bool
) -> tuple[tuple[Landing, ...], tuple[Victim, ...], int]:
    """k new pods placed one at a time (likely or worst), then the victims chosen from there
    (as Marking chooses them from the real placement): (landings, victims, misplaced)."""
    state = analysis.index.state
    template = next(iter(members.by_node.values()))[0]
    sim = SurgedWorkload(analysis, members)
    predictor = LandingPredictor(state.nodes, state.pods, True, ready_only=True)
    originals = [p for pods in members.by_node.values() for p in pods]
    landings = []
    for n in range(k):
        options = predictor.admitted(members.profile, sim.tables, sim.hard, template)
        if not options:
            break
        node, others = _landing(sim, options, worst=worst)
        predictor.reserve(node, template.spec.requests)
        sim.add(_synthetic(template, node, n), node)
        landings.append(Landing(node, sim.domains(node), others))
    judge = judge_others(
        analysis, members.workload, members.labels, added=[lnd.node for lnd in landings]
    )
    choice = choose_victims(sim, originals, len(landings), judge=judge)
    return tuple(landings), choice.victims, sim.misplaced()


def predict(
    analysis: Analysis, members: Members, original: int, max_surge: int, first: int
) -> Prediction | None:
    """The smallest k from ``first`` to ``max_surge`` whose likely and worst admissible
    placements both leave no misplaced pod; else the smallest whose likely placement leaves
    none (its worst case reported); else the best found at ``max_surge``. None when not even
    one new pod has a node to land on."""
    best: Prediction | None = None
    for k in range(max(1, first), max_surge + 1):
        landings, victims, misplaced = _simulate(analysis, members, k, worst=False)
        if not landings:
            return best
        worst = misplaced
        if any(lnd.others for lnd in landings):
            worst = max(misplaced, _simulate(analysis, members, k, worst=True)[2])
        found = Prediction(len(landings), landings, victims, misplaced, worst)
        if best is None or (found.misplaced, found.worst) < (best.misplaced, best.worst):
            best = found
        if (found.misplaced == 0 and found.worst == 0) or len(landings) < k:
            break
    return best

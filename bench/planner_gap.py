"""The greedy planner alone against the brute-force optimum, on many seeded tiny clusters.

Draws ``--clusters`` random clusters of 4 to 8 pods (seeded), plans each with the exhaustive
search off (as on clusters too large for it) and compares with tests/support/brute_force.py:
the clusters where the greedy plan makes more evictions than the fewest that balance every
group, and those it leaves unbalanced that some evictions balance (up to 6).

    .venv/bin/python bench/planner_gap.py --clusters 900
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from unittest.mock import patch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "operator"))
sys.path.insert(0, str(ROOT))

from tests.support.brute_force import fewest_evictions  # noqa: E402
from tests.support.builders import eviction_policy, hard, node, pod, sel, state  # noqa: E402
from tests.support.constants import HOST, ZONE  # noqa: E402

from respread.analysis.groups import analyze  # noqa: E402
from respread.core.model import ClusterState, OwnerRef, Pod  # noqa: E402
from respread.remedies.evict import planner  # noqa: E402

POLICY = eviction_policy(cooldown=0.0)


def cluster(seed: int) -> ClusterState:
    """2 to 4 nodes, 2 or 3 workloads of 4 to 8 pods in all, crowded, selectors counting the
    workload or its tier."""
    rng = random.Random(seed)
    nodes = [
        node(
            f"n{k}",
            {ZONE: rng.choice(["za", "za", "zb", "zb", "zc"]), HOST: f"h{k}"},
            max_pods=rng.choice([None, None, 2, 3]),
        )
        for k in range(rng.randint(2, 4))
    ]
    pods: list[Pod] = []
    total = rng.randint(4, 8)
    for w in range(rng.randint(2, 3)):
        left = total - len(pods)
        if left <= 0:
            break
        count = max(1, min(left, rng.randint(1, 4)))
        app, tier = f"w{w}", rng.choice(["a", "b"])
        spread = []
        for key in (ZONE, HOST):
            if rng.random() < 0.7:
                selector = sel(tier=tier) if rng.random() < 0.4 else sel(app=app)
                spread.append(hard(key, selector, max_skew=rng.choice([1, 1, 2])))
        crowd = rng.randint(1, len(nodes))
        owner = OwnerRef("ReplicaSet", f"{app}-1")
        for i in range(count):
            on = nodes[rng.randrange(crowd)].name
            labels = {"app": app, "tier": tier}
            pods.append(
                pod(
                    f"{app}-{i}",
                    on,
                    labels,
                    constraints=tuple(spread),
                    owner=owner,
                    created=float(i),
                )
            )
    return state(nodes, pods)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clusters", type=int, default=300)
    parser.add_argument("--seed", type=int, default=0, help="the first cluster's seed")
    args = parser.parse_args(argv)
    more: list[tuple[int, int, int]] = []
    left: list[tuple[int, int]] = []
    violated = 0
    for seed in range(args.seed, args.seed + args.clusters):
        s = cluster(seed)
        with patch.object(planner, "EXACT_MOVABLE", 0):
            result = planner.plan(analyze(s, POLICY), POLICY)
        if not result.outcomes:
            continue
        violated += 1
        evictions = len(result.moves) + len(result.deferred)
        if all(o.fixable for o in result.outcomes):
            optimum = fewest_evictions(s, POLICY, evictions)
            if optimum is not None and optimum < evictions:
                more.append((seed, evictions, optimum))
        else:
            optimum = fewest_evictions(s, POLICY, 6)
            if optimum is not None:
                left.append((seed, optimum))
    print(f"{args.clusters} clusters, {violated} violated")
    print(f"more evictions than the fewest ({len(more)}): (seed, greedy, fewest) {more}")
    print(f"left unbalanced, yet fixable ({len(left)}): (seed, fewest) {left}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

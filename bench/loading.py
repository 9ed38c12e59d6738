"""Loading a generated cluster's text as `respread plan` reads a snapshot, for the benchmarks.

The 150,000-pod cluster is 1.6 GB of JSON, above the 512 MiB a snapshot may hold by default
(docs/limits.md): the bound is raised to the text's size, as `--max-snapshot-size` would be. A
generated cluster loads without problems; one that does not is an error here, never a state
timed as if it were whole.
"""

from __future__ import annotations

import dataclasses

from respread.core.limits import DEFAULT_LIMITS
from respread.inputs.objects import LoadResult, load_texts


def load_generated(source: str, text: str) -> LoadResult:
    limits = dataclasses.replace(DEFAULT_LIMITS, max_bytes=max(DEFAULT_LIMITS.max_bytes, len(text)))
    result = load_texts([(source, text)], limits=limits)
    if result.problems:
        first = result.problems[0]
        raise SystemExit(
            f"{source}: {len(result.problems)} problem(s) loading a generated cluster, the first:"
            f" {first}"
        )
    return result

"""Names and times the tests share, defined once.

The well-known label keys are spelled out here rather than imported from respread, so that a
typo in the operator's own constant is caught by the tests instead of copied into them.
"""

from __future__ import annotations

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

NOW = "2026-11-22T10:00:00Z"  # the --now of CLI, runtime and fuzz runs
NOW_EPOCH = 1_800_000_000.0  # 2027-01-15T08:00:00Z: the clock of pure planning and memory tests

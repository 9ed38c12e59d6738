"""The eviction planner: which misplaced pods to evict, in what order, and where each replacement
lands."""

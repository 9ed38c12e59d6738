"""The scheduler's semantics: spread, placement, budgets, safety, landing, the ReplicaSet
controller's ranking."""

"""Surge moves: raise replicas, let the scheduler place the new pods, scale back through the
crowded domains."""

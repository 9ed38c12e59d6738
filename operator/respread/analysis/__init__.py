"""Violations per constraint group, their causes, and the one what-if simulation of counts."""

"""Bounded readers: documents, the objects of a snapshot, the RebalancePolicy and its schema,
cron."""

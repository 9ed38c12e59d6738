"""Differential tests against the real Kubernetes code (see test_scheduler_oracle.py)."""

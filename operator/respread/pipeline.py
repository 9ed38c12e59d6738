"""The one pure scan: cluster state + policy (+ memory) -> report, for the CLI and the operator."""

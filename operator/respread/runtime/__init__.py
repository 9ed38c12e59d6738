"""The operator process: kopf handlers and indexes, scheduled scans, metrics, settings."""

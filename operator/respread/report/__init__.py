"""The report: what a scan found and would do, as JSON and text, the bounded status, the Events to
emit."""

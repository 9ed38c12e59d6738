"""The only code that talks to the API server: reading state, evictions, status, events."""

"""roam's Discord session-event sink."""

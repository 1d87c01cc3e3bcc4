"""The encrypted, content-addressed, append-only store (format v1, see docs/format.md)."""

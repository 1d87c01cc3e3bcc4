"""roam's git storage backend."""

"""roam's s3 storage backend."""

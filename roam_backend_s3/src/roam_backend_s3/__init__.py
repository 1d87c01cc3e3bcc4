"""roam's s3 storage backend (S3, Cloudflare R2 and S3-compatible servers).

`S3Backend` is imported lazily from `roam_backend_s3.backend`, so importing this package
(as roam does when it lists plugins) never imports boto3.
"""

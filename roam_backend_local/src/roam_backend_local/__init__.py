"""roam's shared-directory backend: a folder on a disk every device can reach."""

from roam_backend_local.backend import LocalBackend

__all__ = ["LocalBackend"]

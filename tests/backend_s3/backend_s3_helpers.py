"""Helpers shared by the s3 backend's tests (server fixtures: support.s3_servers)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from roam_core.manager import get_manager
from roam_core.storage import Backend
from roam_core.types import PluginContext
from support.s3_servers import S3Server


def open_backend(settings: dict[str, Any], secret: Callable[[str], str | None],
                 home: Path | None = None) -> Backend:
    """Open the s3 backend the way core does: through the plugin manager's record."""
    home = home or Path("/nonexistent-home")
    context = PluginContext(home=home, state_dir=home / "roam", secret=secret)
    return get_manager().backend("s3").factory(settings, context)


def server_backend(server: S3Server, bucket: str, **overrides: Any) -> Backend:
    """A backend on `bucket` of `server` with the server's credentials."""
    settings = server.settings(bucket)
    settings.update(overrides)
    return open_backend(settings, server.secret)

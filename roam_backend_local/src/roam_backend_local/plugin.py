"""Storage in a shared directory (flock + compare-and-swap), the embedded default."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from roam_backend_local.backend import LocalBackend
from roam_core.plugin import BackendPlugin, ConfigError, PluginContext, Setting, hookimpl


def _factory(settings: Mapping[str, Any], context: PluginContext) -> LocalBackend:
    raw = settings.get("local_dir")
    if not raw:
        raise ConfigError("backend local needs the setting local_dir "
                          "(roam config set local_dir DIR)")
    path = Path(str(raw)).expanduser()
    if not path.is_absolute():
        path = context.home / path
    return LocalBackend(path)


@hookimpl
def roam_storage_backends() -> Iterator[BackendPlugin]:
    yield BackendPlugin(
        name="local",
        summary="a directory on this machine or a shared mount",
        factory=_factory,
        settings=(Setting("local_dir", "the store's directory (absolute, or relative to the home)",
                          required=True),),
    )

"""The plugin module roam loads through the entry point: one hook, one record."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from roam_core.plugin import Backend, BackendPlugin, ConfigError, PluginContext, Setting, hookimpl

SETTINGS = (
    Setting("example_path", "the SQLite file that holds the store (absolute, or relative to "
            "the home); the same file on every device, e.g. on a shared mount", required=True),
)


def _factory(settings: Mapping[str, Any], context: PluginContext) -> Backend:
    # Validate settings here and fail with a one-line ConfigError, but never touch the
    # store: the factory runs before any deadline applies; the first backend call may.
    raw = settings.get("example_path")
    if not isinstance(raw, str) or not raw.strip():
        raise ConfigError("backend example needs the setting example_path "
                          "(roam config set example_path /path/to/store.sqlite)")
    path = Path(raw.strip()).expanduser()
    if not path.is_absolute():
        path = context.home / path
    # Import the implementation only when a backend is really opened: listing plugins
    # must stay cheap (a real backend would import its client library in there).
    from roam_backend_example.backend import SqliteBackend

    return SqliteBackend(path, deadline=context.deadline)


@hookimpl
def roam_storage_backends() -> Iterator[BackendPlugin]:
    yield BackendPlugin(
        name="example",
        summary="the whole store in one SQLite file (a template to copy)",
        factory=_factory,
        settings=SETTINGS,
    )

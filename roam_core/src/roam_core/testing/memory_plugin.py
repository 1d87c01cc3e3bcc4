"""A plugin exposing `MemoryBackend` as backend `memory`, for in-process tests only.

Register it with `get_manager().register(memory_plugin, "memory")`; it is deliberately
not an entry point, so no user can pick a backend that forgets on exit. The setting
`memory_store` names the shared in-process store (devices with the same name share it).
"""

from __future__ import annotations

from collections.abc import Iterator

from roam_core.hookspecs import hookimpl
from roam_core.testing.memory import MemoryBackend, named_store
from roam_core.types import BackendPlugin, Setting


@hookimpl
def roam_storage_backends() -> Iterator[BackendPlugin]:
    yield BackendPlugin(
        name="memory",
        summary="in-process dict (tests only)",
        factory=lambda settings, context: MemoryBackend(
            named_store(str(settings.get("memory_store") or "default"))),
        settings=(Setting("memory_store", "name of the in-process store", default="default"),),
    )

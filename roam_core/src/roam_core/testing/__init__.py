"""Test helpers that ship with roam-core: a reference backend and the conformance suites.

Importing this package pulls in nothing heavy; `BackendContract` and `SinkContract` need
pytest, which the tests of any plugin have anyway, so they load on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from roam_core.testing.memory import MemoryBackend, MemoryStore

if TYPE_CHECKING:
    from roam_core.testing.contract import BackendContract
    from roam_core.testing.sink_contract import SinkContract

__all__ = ["BackendContract", "MemoryBackend", "MemoryStore", "SinkContract"]


def __getattr__(name: str) -> Any:
    if name == "BackendContract":
        from roam_core.testing.contract import BackendContract

        return BackendContract
    if name == "SinkContract":
        from roam_core.testing.sink_contract import SinkContract

        return SinkContract
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Test helpers that ship with roam-core: a reference backend and the conformance suites.

Importing this package pulls in nothing heavy; `BackendContract` and `SinkContract` need
pytest, which the tests of any plugin have anyway.
"""

from roam_core.testing.memory import MemoryBackend, MemoryStore

__all__ = ["MemoryBackend", "MemoryStore"]

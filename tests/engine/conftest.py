from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleet import Device, new_key, settings_for
from roam_core.testing.memory import MemoryBackend


@pytest.fixture(params=["memory", "local"])
def backend_kind(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def make_device(tmp_path: Path, backend_kind: str) -> Callable[..., Device]:
    settings = settings_for(backend_kind, tmp_path)
    key = new_key()

    def make(name: str, **extra: object) -> Device:
        return Device(tmp_path / name, name, {**settings, **extra}, key)

    return make


@pytest.fixture
def tree_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every tree key the memory backend is asked for, in order."""
    reads: list[str] = []
    original = MemoryBackend.get

    def spy(self: MemoryBackend, key: str, offset: int = 0, length: int | None = None) -> bytes:
        if key.startswith("trees/"):
            reads.append(key)
        return original(self, key, offset, length)

    monkeypatch.setattr(MemoryBackend, "get", spy)
    yield reads

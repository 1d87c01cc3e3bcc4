from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fleet import Device, new_key, settings_for
from roam_core.store.repository import Repository
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
    """Every read of trees from the memory backend, in order: the key of a tree stored on its
    own (format 1), or the tree pack and range of one ranged read of packed trees (format 2).
    """
    reads: list[str] = []
    original = MemoryBackend.get
    tree_packs: set[str] = set()
    original_index = Repository._write_index_of

    def note(self: Repository, pack: str, refs: list, trees: list, note: str | None = None) -> str:
        if trees:
            tree_packs.add(pack)
        return original_index(self, pack, refs, trees, note)

    def spy(self: MemoryBackend, key: str, offset: int = 0, length: int | None = None) -> bytes:
        if key.startswith("trees/"):
            reads.append(key)
        elif key in tree_packs and (length is None or length > 1):
            # (a one-byte read is a push's check that the pack is still stored, not a read)
            reads.append(f"{key}@{offset}+{length}")
        return original(self, key, offset, length)

    monkeypatch.setattr(MemoryBackend, "get", spy)
    monkeypatch.setattr(Repository, "_write_index_of", note)
    yield reads


@pytest.fixture
def collector_on() -> Iterator[None]:
    """Python's cycle collector on for the test, as it was after it."""
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()

"""Issue 22: a remote load of a whole generation reads each tree pack once, whatever its depth.

The trees of the levels below are held (bounded by bytes) until their level asks for them;
a pack whose trees do not fit is read as before, level by level. Either way the manifest is
the same and every tree is authenticated under its id.
"""

from __future__ import annotations

import os

import pytest

from roam_core import crypto
from roam_core.errors import IntegrityError
from roam_core.storage import Capabilities
from roam_core.store import tree_reads
from roam_core.store.manifest import FileEntry
from roam_core.store.repository import Repository
from roam_core.testing.memory import MemoryBackend

KEYS = crypto.Keys.derive(os.urandom(32))
DEPTH = 10


class RemoteMemory(MemoryBackend):
    """The memory store, counted as remote (so reads are batched as on S3), reads counted."""

    capabilities = Capabilities(deletes=True, remote=True)

    def __init__(self) -> None:
        super().__init__()
        self.reads: list[str] = []

    def get(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        self.reads.append(key)
        return super().get(key, offset, length)


def _entry(path: str, number: int) -> FileEntry:
    digest = f"{number:064x}"
    return FileEntry(path, number, 0o644, digest, "shared", ((digest, "packs/aa/x", 0, 1),))


def _store() -> tuple[RemoteMemory, str, dict[str, FileEntry]]:
    backend = RemoteMemory()
    writer = Repository(backend, KEYS)
    writer.format = 2
    deep = "/".join(f"d{n}" for n in range(DEPTH))
    manifest = {f"skills/{deep}/b{n % 3}/f{n}.md": _entry(f"skills/{deep}/b{n % 3}/f{n}.md", n)
                for n in range(12)}
    manifest["SOUL.md"] = _entry("SOUL.md", 99)
    root = writer.write_manifest(manifest)
    backend.reads.clear()
    return backend, root, manifest


def _loaded(backend: RemoteMemory, root: str) -> dict[str, FileEntry]:
    reader = Repository(backend, KEYS)
    reader.format = 2
    return dict(reader.load_manifest(root))


def test_a_generation_s_trees_are_one_read_of_their_tree_pack() -> None:
    backend, root, manifest = _store()
    assert _loaded(backend, root) == manifest
    packs = [key for key in backend.reads if key.startswith("packs/")]
    assert len(packs) == 1, backend.reads


def test_a_tree_pack_too_large_to_hold_is_read_level_by_level(
        monkeypatch: pytest.MonkeyPatch) -> None:
    backend, root, manifest = _store()
    monkeypatch.setattr(tree_reads, "HELD_TREE_BYTES", 0)
    assert _loaded(backend, root) == manifest
    packs = [key for key in backend.reads if key.startswith("packs/")]
    assert len(packs) == DEPTH + 3  # root, skills, d0…d9, the three branches


def test_a_held_tree_that_was_tampered_with_is_an_integrity_error() -> None:
    backend, root, _manifest = _store()
    pack = next(key for key in backend.store.objects if key.startswith("packs/"))
    data = bytearray(backend.store.objects[pack])
    data[len(data) // 2] ^= 1  # a tree below the root, held until its level
    backend.store.objects[pack] = bytes(data)
    with pytest.raises(IntegrityError):
        _loaded(backend, root)


def test_a_format_1_load_asks_the_object_cache_once_per_level(
        tmp_path: os.PathLike[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Trees stored one object each: the load asks the cache for a level's trees in one
    query and reads the ones it lacks from the store, without asking again for each."""
    from pathlib import Path

    from roam_core.store.object_cache import ObjectCache

    backend = RemoteMemory()
    writer = Repository(backend, KEYS)
    writer.format = 1
    manifest = {f"skills/s{n % 4}/f{n}.md": _entry(f"skills/s{n % 4}/f{n}.md", n)
                for n in range(12)}
    root = writer.write_manifest(manifest)
    asked: list[int] = []
    real = ObjectCache.get_many

    def counted(self: ObjectCache, kind: str, ids: list[str]) -> dict[str, bytes]:
        asked.append(len(ids))
        return real(self, kind, ids)

    monkeypatch.setattr(ObjectCache, "get_many", counted)
    reader = Repository(backend, KEYS, cache_dir=Path(tmp_path))
    reader.format = 1
    assert dict(reader.load_manifest(root)) == manifest
    # three levels (the root, skills/, its four folders): one query each
    assert asked == [1, 1, 4], asked

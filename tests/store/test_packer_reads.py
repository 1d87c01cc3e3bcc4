"""A push's plain files are read by descriptor into buffers of their own size (`add_path`).

Whatever the walk's size says (the file may have grown or shrunk since), the digest, size
and blobs are those of the bytes on disk, exactly what the file-object path (`add_file`)
gives for the same bytes.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path

import pytest

from roam_core import crypto
from roam_core.storage import GuardedBackend
from roam_core.store.objects import CHUNK_SIZE
from roam_core.store.packer import Packer
from roam_core.store.repository import Repository
from roam_core.testing.memory import MemoryBackend

KEYS = crypto.Keys.derive(bytes(range(32)))


def _packer() -> Packer:
    return Packer(Repository(GuardedBackend(MemoryBackend()), KEYS, None), {}, workers=1)


@pytest.mark.parametrize(("length", "walked"), [
    (0, 0), (1, 1), (5000, 5000),
    (5000, 4000),  # grew since the walk
    (5000, 6000),  # shrank since the walk
    (0, 10),  # emptied since the walk
    (CHUNK_SIZE - 1, CHUNK_SIZE - 1),
    (CHUNK_SIZE, CHUNK_SIZE - 1),  # grew to a whole chunk
    (CHUNK_SIZE + 7, 100),  # grew past a chunk
    (CHUNK_SIZE + 7, CHUNK_SIZE + 7),
])
def test_a_file_read_by_path_packs_as_its_bytes_on_disk(tmp_path: Path, length: int,
                                                        walked: int) -> None:
    content = hashlib.sha256(b"seed").digest() * (length // 32 + 1)
    content = content[:length]
    path = tmp_path / "file"
    path.write_bytes(content)
    by_path, by_handle = _packer(), _packer()
    found = by_path.add_path(str(path), walked)
    expected = by_handle.add_file(io.BytesIO(content))
    assert found == expected
    assert found[:2] == (hashlib.sha256(content).hexdigest(), length)
    by_path.finish()
    by_handle.finish()
    assert by_path.new_blobs == by_handle.new_blobs


def test_a_missing_file_is_not_found(tmp_path: Path) -> None:
    # the push notes a file deleted between the walk and the read as vanished
    with pytest.raises(FileNotFoundError):
        _packer().add_path(str(tmp_path / "gone"), 10)


def _reads(monkeypatch: pytest.MonkeyPatch, cap: int | None = None) -> list[int]:
    """Count `add_path`'s reads; `cap` makes each return at most that many bytes (a FUSE or
    network file system's transfer limit)."""
    import roam_core.store.packer as packer_module

    real, counted = packer_module.os.read, []

    def read(fd: int, length: int) -> bytes:
        counted.append(length)
        return real(fd, length if cap is None else min(length, cap))

    monkeypatch.setattr(packer_module.os, "read", read)
    return counted


def test_a_small_file_of_an_unaligned_size_is_read_once(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    # a read ending short of a 4 KiB boundary ended at the file's end: no read to confirm it
    path = tmp_path / "file"
    path.write_bytes(b"x" * 5000)
    counted = _reads(monkeypatch)
    assert _packer().add_path(str(path), 5000)[1] == 5000
    assert counted == [5001]


@pytest.mark.parametrize("length", [4096, 3 * 4096])
def test_a_read_cut_at_a_transfer_limit_is_read_on(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   length: int) -> None:
    # a file system that hands over at most 4 KiB a read: the bytes read are the file's
    # whole, never its first 4 KiB taken for all of it (planted: trusting every short read
    # packed 4,096 bytes of the 12,288)
    content = hashlib.sha256(b"seed").digest() * (length // 32)
    path = tmp_path / "file"
    path.write_bytes(content)
    _reads(monkeypatch, cap=4096)
    found = _packer().add_path(str(path), length)
    assert found[:2] == (hashlib.sha256(content).hexdigest(), length)

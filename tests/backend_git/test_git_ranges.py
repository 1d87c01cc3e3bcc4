"""Ranged reads straight from a pack entry's stored blocks (packread.py), byte for byte.

A pull reads each pack object in spans; the reader serves a span by reading only the stored
(zlib level 0) blocks that hold it. These tests compare every such read with a slice of the
object, at block edges, and check that an entry that is not a clean run of stored blocks is
refused (None: the caller reads the whole object through zlib or git) and never misread.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import pytest

from roam_backend_git.packread import PackReader
from roam_backend_git.staging import StagingPack

#: Around the sizes of zlib's stored blocks (up to 65,535 bytes; the reader walks them).
SIZES = [0, 1, 65_530, 65_531, 65_532, 200_000, (1 << 20) + 3]


def _pack(tmp_path: Path, blobs: list[bytes]) -> tuple[Path, list[str]]:
    staging = StagingPack(tmp_path / "pack")
    shas = [staging.add(blob) for blob in blobs]
    staging.finish()
    return tmp_path / "pack", shas


def test_every_range_is_the_slice_of_the_object(tmp_path: Path) -> None:
    blobs = [os.urandom(size) for size in SIZES]
    pack_dir, shas = _pack(tmp_path, blobs)
    reader = PackReader(pack_dir)
    edges = [0, 1, 65_530, 65_531, 65_532, 131_061, 131_062, 199_999, 200_000, 1 << 20]
    for blob, sha in zip(blobs, shas, strict=True):
        for start in edges:
            for length in (None, 0, 1, 2, 65_531, 65_532, 300_000, 5 << 20):
                end = None if length is None else start + length
                assert reader.read_range(sha, start, length) == blob[start:end], (
                    len(blob), start, length)
    reader.close()


def _blocks(raw: bytes, at: int) -> list[int]:
    """Where each stored block's 5-byte header starts, from the zlib header at `at`."""
    at += 2
    found = []
    while True:
        found.append(at)
        if raw[at] & 1:
            return found
        at += 5 + int.from_bytes(raw[at + 1:at + 3], "little")


@pytest.mark.parametrize("damage", ["nlen", "compressed block", "truncated", "length"])
def test_an_entry_that_is_not_clean_stored_blocks_is_refused(tmp_path: Path,
                                                             damage: str) -> None:
    blob = os.urandom(200_000)
    pack_dir, (sha,) = _pack(tmp_path, [blob])
    pack = next(pack_dir.glob("pack-*.pack"))
    raw = bytearray(pack.read_bytes())
    blocks = _blocks(raw, 12 + 3)  # past the pack's header and the entry's 3-byte header
    assert len(blocks) >= 3, "the layout the test expects changed"
    second, last = blocks[1], blocks[-1]
    if damage == "nlen":
        raw[second + 3] ^= 0xFF
    elif damage == "compressed block":
        raw[second] |= 0x02  # BTYPE 01: fixed Huffman codes
    elif damage == "truncated":
        raw = raw[:second + 1000]
    else:  # the last block claims more bytes than the object has
        size = int.from_bytes(raw[last + 1:last + 3], "little") + 1
        raw[last + 1:last + 5] = size.to_bytes(2, "little") + (size ^ 0xFFFF).to_bytes(
            2, "little")
    os.chmod(pack, 0o644)
    pack.write_bytes(bytes(raw))
    reader = PackReader(pack_dir)
    assert reader.read_range(sha, 190_000, 1000) is None
    assert reader.read_range(sha, 0, 10) is None
    reader.close()


def test_a_deflated_entry_is_left_to_zlib(tmp_path: Path) -> None:
    blob = b"roam " * 50_000
    pack_dir, (sha,) = _pack(tmp_path, [blob])
    pack = next(pack_dir.glob("pack-*.pack"))
    raw = bytearray(pack.read_bytes())
    # the same object deflated at level 9, as a host's repack would store it
    raw[12 + 3:len(raw) - 20] = zlib.compress(blob, 9)
    os.chmod(pack, 0o644)
    pack.write_bytes(bytes(raw))
    reader = PackReader(pack_dir)
    assert reader.read_range(sha, 10, 20) is None
    assert reader.read(sha) == blob
    reader.close()

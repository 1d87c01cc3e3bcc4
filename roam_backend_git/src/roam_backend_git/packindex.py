"""Indexing a fetched pack as it arrives, with hashlib: what `git index-pack` does for a fetch.

`git index-pack` hashes every object with git's collision-detecting SHA-1 (~260 MiB/s here);
hashlib's runs at ~1,450 MiB/s, so a first fetch of the large home spent 2.9-3.4 s of processor
time in index-pack and ~1.4 s in this (bench/git_index_hashlib.py, bench/git_fetch_hashlib.py).
The pack is read once, piece by piece, as the network gives it: every entry inflated and
hashed, its CRC-32 taken, the object count and the trailing checksum of the whole pack checked,
and a version-2 index written (staging.index_v2), byte-identical to index-pack's.

Deltas are resolved against the commits, trees and tags kept in memory (each up to
`BASE_MAX`, `BASES_BUDGET` in all): a server's `pack-objects` deltifies git's own trees
against each other, never roam's blobs (encrypted: nothing to share). A delta against
anything else (a blob, a large base, one past the budget) is `Unsupported`: the caller gives
the written pack to `git index-pack`, which resolves anything. Damage (a truncated stream, a
corrupt entry, a wrong count or checksum) is `Damaged`.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable

from roam_backend_git.staging import index_v2

#: Bytes asked of the stream at a time.
PIECE = 1 << 16
#: A commit, tree or tag up to this size is kept as a possible delta base.
BASE_MAX = 1 << 20
#: At most this much of them in all (the large home's trees and commits: a few hundred KiB).
BASES_BUDGET = 64 << 20
TYPES = {1: b"commit", 2: b"tree", 3: b"blob", 4: b"tag"}
_BLOB, _OFS_DELTA, _REF_DELTA = 3, 6, 7


class Damaged(Exception):
    """The pack is not what it claims to be: truncated, corrupt, or its checksum is wrong."""


class Unsupported(Exception):
    """A sound pack this indexer does not resolve (a delta against a base it did not keep)."""


def index_stream(read: Callable[[int], bytes]) -> tuple[bytes, int]:
    """Index the pack `read(n)` returns piece by piece (b"" at its end): the .idx, the size.

    Raises `Damaged` or `Unsupported`; either may come before the stream's end, so a caller
    that keeps the pack reads the rest itself.
    """
    pack_sum = hashlib.sha1(usedforsecurity=False)
    buffer = bytearray()
    eof = False

    def fill(need: int) -> None:
        nonlocal eof
        while len(buffer) < need and not eof:
            piece = read(PIECE)
            if not piece:
                eof = True
            buffer.extend(piece)

    fill(12)
    if len(buffer) < 12:
        raise Damaged(f"the pack ends after {len(buffer)} bytes")
    if bytes(buffer[:4]) != b"PACK" or int.from_bytes(buffer[4:8], "big") not in (2, 3):
        raise Damaged("the answer is not a pack")
    count = int.from_bytes(buffer[8:12], "big")
    pack_sum.update(buffer[:12])
    del buffer[:12]
    offset = 12
    entries: list[tuple[bytes, int, int]] = []
    bases: dict[int, tuple[int, bytes]] = {}          # offset -> (type, body)
    bases_by_name: dict[bytes, tuple[int, bytes]] = {}
    kept = 0
    for _ in range(count):
        fill(32)
        if not buffer:
            raise Damaged(f"the pack ends after {len(entries)} of its {count} objects")
        byte = buffer[0]
        kind, size, shift, at = (byte >> 4) & 7, byte & 0x0F, 4, 1
        while byte & 0x80:
            if at >= len(buffer) or at > 10:
                raise Damaged(f"a bad object header at {offset}")
            byte = buffer[at]
            size |= (byte & 0x7F) << shift
            shift += 7
            at += 1
        base: tuple[int, bytes] | None = None
        if kind == _OFS_DELTA:  # a delta against the entry `distance` bytes before this one
            byte, at = buffer[at] if at < len(buffer) else 0, at + 1
            distance = byte & 0x7F
            while byte & 0x80:
                if at >= len(buffer) or at > 20:
                    raise Damaged(f"a bad delta header at {offset}")
                byte = buffer[at]
                distance = ((distance + 1) << 7) | (byte & 0x7F)
                at += 1
            if not 0 < distance <= offset:
                raise Damaged(f"a delta at {offset} points outside the pack")
            base = bases.get(offset - distance)
        elif kind == _REF_DELTA:  # a delta against a named object
            if at + 20 > len(buffer):
                raise Damaged(f"the pack ends inside the object at {offset}")
            base = bases_by_name.get(bytes(buffer[at:at + 20]))
            at += 20
        elif kind not in TYPES:
            raise Damaged(f"an object of unknown type {kind} at {offset}")
        if kind in (_OFS_DELTA, _REF_DELTA) and (base is None or size > BASE_MAX):
            raise Unsupported(f"a delta at {offset} against a base not kept in memory")
        if at > len(buffer):
            raise Damaged(f"the pack ends inside the object at {offset}")
        crc = zlib.crc32(buffer[:at])
        pack_sum.update(buffer[:at])
        del buffer[:at]
        length = at
        digest = None if base else hashlib.sha1(TYPES[kind] + b" %d\0" % size,
                                                usedforsecurity=False)
        small: list[bytes] | None = [] if base or (kind != _BLOB and size <= BASE_MAX) else None
        inflater = zlib.decompressobj()
        got = 0
        while not inflater.eof:
            if not buffer:
                fill(1)
                if not buffer:
                    raise Damaged(f"the pack ends inside the object at {offset}")
            piece = bytes(buffer)
            try:  # never more than the header's size plus one byte, however the data inflates
                data = inflater.decompress(piece, size - got + 1)
            except zlib.error as error:
                raise Damaged(f"the object at {offset} is corrupt ({error})") from None
            used = len(piece) - len(inflater.unconsumed_tail) - len(inflater.unused_data)
            view = memoryview(piece)[:used]
            crc = zlib.crc32(view, crc)
            pack_sum.update(view)
            del buffer[:used]
            length += used
            got += len(data)
            if got > size:
                raise Damaged(f"the object at {offset} is longer than its header says")
            if digest is not None:
                digest.update(data)
            if small is not None:
                small.append(data)
        if got != size:
            raise Damaged(f"the object at {offset} is {got} bytes, its header says {size}")
        if base is not None:
            try:
                kind, body = base[0], apply_delta(base[1], b"".join(small or ()))
            except IndexError:
                raise Damaged(f"the delta at {offset} ends inside an order") from None
            name = hashlib.sha1(TYPES[kind] + b" %d\0" % len(body) + body,
                                usedforsecurity=False).digest()
        else:
            assert digest is not None
            name = digest.digest()
            body = b"".join(small) if small is not None else b""
        if small is not None and kind != _BLOB and len(body) <= BASE_MAX \
                and kept + len(body) <= BASES_BUDGET:
            bases[offset] = bases_by_name[name] = (kind, body)
            kept += len(body)
        entries.append((name, crc, offset))
        offset += length
    fill(21)
    if len(buffer) < 20:
        raise Damaged("the pack ends before its checksum")
    if len(buffer) > 20:
        raise Damaged("the pack has data past its checksum")
    checksum = bytes(buffer)
    if checksum != pack_sum.digest():
        raise Damaged("the pack's checksum does not match its bytes")
    index = index_v2(entries, checksum)
    if len({name for name, _crc, _offset in entries}) != len(entries):
        raise Damaged("the pack holds an object twice")
    return index, offset + 20


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data):
            raise Damaged("a delta ends inside its header")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """Apply a delta in git's format: the base's size, the result's, then copy and insert orders."""
    base_size, at = _varint(delta, 0)
    size, at = _varint(delta, at)
    if base_size != len(base):
        raise Damaged("a delta against a base of another size")
    if size > BASE_MAX:
        # a delta of at most BASE_MAX bytes can still say "copy the base" a million times:
        # a result this large is git index-pack's to build (it refuses what it cannot)
        raise Unsupported(f"a delta whose result is {size} bytes")
    out = bytearray()
    while at < len(delta):
        order = delta[at]
        at += 1
        if order & 0x80:  # copy from the base
            start = length = 0
            for bit in range(4):
                if order & (1 << bit):
                    start |= delta[at] << (8 * bit)
                    at += 1
            for bit in range(3):
                if order & (0x10 << bit):
                    length |= delta[at] << (8 * bit)
                    at += 1
            length = length or 0x10000
            if start + length > len(base):
                raise Damaged("a delta copies from past its base's end")
            out += base[start:start + length]
        elif order:  # insert the next `order` bytes
            out += delta[at:at + order]
            at += order
        else:
            raise Damaged("a delta holds order 0")
        if len(out) > size:
            break
    if len(out) != size or at > len(delta):
        raise Damaged("a delta's result has another size than it says")
    return bytes(out)

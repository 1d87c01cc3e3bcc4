"""Objects staged for the next commit, written by roam straight into one pack of the mirror.

`git hash-object -w` per object cost a process, git's collision-detecting SHA-1 and a loose
file each (14 s of the large home's 41 s first push at 100 ms RTT), and the push's
`pack-objects` then read every loose object back and packed it again. Here each staged object
is hashed with hashlib and appended to one pack file under `objects/pack/` as it comes;
`finish` (run before a commit needs git to see the objects) writes the object count, the
trailing checksum and a version-2 index, then renames both into place, so git sees a pack like
the ones it writes itself, and `pack-objects` copies its entries as they are.

Entries are whole objects (no deltas) in zlib streams of level 0: roam's objects are
encrypted, so neither deltas nor deflating could shrink them (the same reason as
`core.compression=0` in runner.BASE_CONFIG). The pack format is git's
(Documentation/gitformat-pack.txt): a 12-byte header, entries, a SHA-1 of all of it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import struct
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path

from roam_core.plugin import BackendError

#: The object type of a blob in a pack entry's header.
BLOB = 3
#: Pack offsets from here on go to the index's table of 64-bit offsets.
LARGE_OFFSET = 0x80000000
#: A zlib stream's header for "deflate, 32 KiB window, fastest" (what level 0 writes).
ZLIB_HEADER = b"\x78\x01"
#: The most data one stored deflate block holds.
STORED_BLOCK = 0xFFFF
#: The staging file's name starts like git's own temporary packs, so `git gc` clears a
#: leftover of a killed process.
TMP_PREFIX = "tmp_roam_"


def blob_id(data: bytes) -> str:
    """The object id git gives `data` as a blob (SHA-1 of `blob <size>`, a NUL, `data`)."""
    digest = hashlib.sha1(b"blob %d\0" % len(data), usedforsecurity=False)
    digest.update(data)
    return digest.hexdigest()


def entry_header(kind: int, size: int) -> bytes:
    """A pack entry's header: type and size, 4 bits then 7 bits a byte, low bits first."""
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    out = bytearray()
    while size:
        out.append(byte | 0x80)
        byte = size & 0x7F
        size >>= 7
    out.append(byte)
    return bytes(out)


def index_v2(entries: list[tuple[bytes, int, int]], pack_checksum: bytes) -> bytes:
    """A version-2 pack index for `entries` (binary object id, CRC-32, offset in the pack)."""
    entries = sorted(entries)
    fanout = [0] * 256
    for name, _crc, _offset in entries:
        fanout[name[0]] += 1
    for first in range(1, 256):
        fanout[first] += fanout[first - 1]
    small: list[int] = []
    large: list[int] = []
    for _name, _crc, offset in entries:
        if offset < LARGE_OFFSET:
            small.append(offset)
        else:
            small.append(LARGE_OFFSET | len(large))
            large.append(offset)
    count = len(entries)
    out = bytearray(b"\xfftOc" + struct.pack(">I", 2))
    out += struct.pack(">256I", *fanout)
    out += b"".join(name for name, _crc, _offset in entries)
    out += struct.pack(f">{count}I", *(crc for _name, crc, _offset in entries))
    out += struct.pack(f">{count}I", *small)
    out += struct.pack(f">{len(large)}Q", *large)
    out += pack_checksum
    out += hashlib.sha1(out, usedforsecurity=False).digest()
    return bytes(out)


def stored_entry(header: bytes, data: bytes) -> list[list[bytes | memoryview]]:
    """A pack entry holding `data` in a zlib stream of stored blocks, as a list of writes.

    What `zlib.compress(data, 0)` makes, framed here instead: the data is not copied into
    two fresh 16 MiB buffers (the stream, then the stream behind the entry's header), whose
    pages were faulted in and zeroed each time, and goes out a block (~64 KiB) a write.
    Staging the large home's 368 MiB of packs took a median 3.00 s of processor time the old
    way (2.4-2.7 s of it system time, in most runs), 0.41 s this way
    (bench/git_stage_writes.py, 6 alternating runs).
    """
    view = memoryview(data)
    writes: list[list[bytes | memoryview]] = []
    first: list[bytes | memoryview] = [header, ZLIB_HEADER]
    for start in range(0, max(len(data), 1), STORED_BLOCK):
        block = view[start:start + STORED_BLOCK]
        final = start + STORED_BLOCK >= len(data)
        size = len(block)
        head = bytes((1 if final else 0,)) + struct.pack("<HH", size, size ^ 0xFFFF)
        writes.append([*first, head, block])
        first = []
    writes[-1].append(struct.pack(">I", zlib.adler32(data)))
    return writes


@dataclass(frozen=True)
class _Entry:
    offset: int
    length: int  # the whole entry: header and zlib stream
    header: int  # the header's length
    crc: int


class StagingPack:
    """One pack file being written in `pack_dir`; thread-safe."""

    def __init__(self, pack_dir: Path) -> None:
        self.pack_dir = pack_dir
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._path: Path | None = None
        self._end = 0
        self._entries: dict[str, _Entry] = {}

    def add(self, data: bytes) -> str:
        """Append `data` as a blob (once per id); returns its object id."""
        sha = blob_id(data)
        # hashing and framing outside the lock: hashlib and zlib let the other worker run
        header = entry_header(BLOB, len(data))
        writes = stored_entry(header, data)
        crc = 0
        for write in writes:
            for piece in write:
                crc = zlib.crc32(piece, crc)
        length = sum(len(piece) for write in writes for piece in write)
        with self._lock:
            if sha in self._entries:
                return sha
            fd = self._open()
            at = self._end
            try:
                for write in writes:
                    want = sum(len(piece) for piece in write)
                    written = os.pwritev(fd, write, at)
                    if written != want:
                        raise OSError(f"short write ({written} of {want} bytes)")
                    at += written
            except OSError as error:
                raise BackendError(f"cannot write to the git mirror's staging pack "
                                   f"{self._path}: {error}") from None
            self._entries[sha] = _Entry(self._end, length, len(header), crc)
            self._end += length
        return sha

    def holds(self, sha: str) -> bool:
        """Whether `sha` is staged here and not yet finished."""
        with self._lock:
            return sha in self._entries

    def read(self, sha: str) -> bytes | None:
        """The bytes of a blob staged here and not yet finished, else None."""
        with self._lock:
            entry = self._entries.get(sha)
            if entry is None or self._fd is None:
                return None
            raw = os.pread(self._fd, entry.length, entry.offset)
        return zlib.decompress(raw[entry.header:])

    def finish(self) -> None:
        """Make the staged objects a pack git reads (count, checksum, index); none: no-op."""
        with self._lock:
            if self._fd is None:
                return
            fd, path, entries = self._fd, self._path, self._entries
            assert path is not None
            try:
                os.pwrite(fd, struct.pack(">I", len(entries)), 8)
                digest = hashlib.sha1(usedforsecurity=False)
                with open(fd, "rb", closefd=False) as reader:
                    reader.seek(0)
                    while chunk := reader.read(1 << 20):
                        digest.update(chunk)
                checksum = digest.digest()
                os.pwrite(fd, checksum, self._end)
                os.fsync(fd)  # as git fsyncs its packs: the index must not outlive the data
                index = index_v2([(bytes.fromhex(sha), e.crc, e.offset)
                                  for sha, e in entries.items()], checksum)
                final = self.pack_dir / f"pack-{checksum.hex()}"
                idx_tmp = path.with_suffix(".idx")
                with open(idx_tmp, "wb") as out:
                    out.write(index)
                    out.flush()
                    os.fsync(out.fileno())
                os.chmod(path, 0o444)
                os.chmod(idx_tmp, 0o444)
                # the pack before its index: git only looks at packs that have one
                os.replace(path, final.with_suffix(".pack"))
                os.replace(idx_tmp, final.with_suffix(".idx"))
            except OSError as error:
                raise BackendError(f"cannot finish the git mirror's staging pack {path}: "
                                   f"{error}") from None
            finally:
                os.close(fd)
                self._fd = self._path = None
                self._entries = {}
                self._end = 0

    def discard(self) -> None:
        """Drop what is staged and not finished (its objects were never committed)."""
        with self._lock:
            if self._fd is None:
                return
            os.close(self._fd)
            if self._path is not None:
                with contextlib.suppress(FileNotFoundError):
                    self._path.unlink()
            self._fd = self._path = None
            self._entries = {}
            self._end = 0

    def _open(self) -> int:
        if self._fd is not None:
            return self._fd
        self.pack_dir.mkdir(parents=True, exist_ok=True)
        path = self.pack_dir / f"{TMP_PREFIX}{secrets.token_hex(8)}.pack"
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
            os.pwrite(fd, b"PACK" + struct.pack(">II", 2, 0), 0)  # the count comes at the end
        except OSError as error:
            raise BackendError(f"cannot write to the git mirror {self.pack_dir}: "
                               f"{error.strerror or error}") from None
        self._fd, self._path, self._end = fd, path, 12
        return fd

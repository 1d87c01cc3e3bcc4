"""Reading whole blobs straight from the mirror's packs, without a git process.

A pull reads every pack object of the store; through `git cat-file blob` that was one process
and one pipe per object (71 processes and 371 MiB piped for the benchmark's `large` home).
roam's objects sit in the mirror whole: the pushing device wrote them undeltified at zlib level
0 (staging.py) and git's `pack-objects` copies such entries as they are into every fetch. So
the reader finds the object through the pack's version-2 index (mapped: 28 bytes an object)
and reads and inflates its entry with `pread`. The pack itself is not mapped: every page of a
mapping a pull touched stayed in roam's resident set, so reading the large home's 375 MiB pack
raised the pull's peak from 255 to 623 MiB (tests/backend_git/test_git_memory.py).
Anything else (a delta, a loose object, an index of another version, a pack gc just removed)
answers None and the caller asks git, so a host's own repack stays readable.

The bytes are not re-hashed: roam authenticates every object it reads (AEAD), as
`git cat-file` does not re-hash either.
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import os
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

#: A pack entry's type for a whole blob (deltas are 6 and 7).
BLOB = 3
_IDX_MAGIC = b"\xfftOc\x00\x00\x00\x02"
_NAMES = 8 + 256 * 4  # where the sorted object ids start in a version-2 index
#: Block maps kept per pack (~2 KiB each for a 16 MiB object): a span read maps its object once.
_MAPS_KEPT = 256
#: An entry's header: a type and a size of up to 64 bits, 7 bits a byte after the first 4.
_HEADER_MAX = 10


class _Pack:
    """One pack, open for `pread`, and its index, mapped read-only."""

    def __init__(self, idx_path: Path) -> None:
        self.idx_path = idx_path
        with open(idx_path, "rb") as handle:
            self.idx = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            if self.idx[:8] != _IDX_MAGIC:
                raise ValueError("not a version-2 pack index")
            self.count = int.from_bytes(self.idx[_NAMES - 4:_NAMES], "big")
            self.fd = os.open(idx_path.with_suffix(".pack"), os.O_RDONLY | os.O_CLOEXEC)
        except BaseException:
            self.idx.close()
            raise
        self.size = os.fstat(self.fd).st_size
        self.names = _Names(self.idx, self.count)
        # a read holds the descriptor open: closed under a read, its number could be reused
        # by another file before the `pread`
        self._guard = threading.Lock()
        self._readers = 0
        self._closed = False
        self._maps: dict[int, tuple[int, list[int], list[int]]] = {}  # offset -> _blocks

    def offset(self, name: bytes) -> int | None:
        """Where object `name` starts in the pack, or None when this pack lacks it."""
        first = name[0]
        low = int.from_bytes(self.idx[8 + (first - 1) * 4:8 + first * 4], "big") if first else 0
        high = int.from_bytes(self.idx[8 + first * 4:8 + (first + 1) * 4], "big")
        at = bisect.bisect_left(self.names, name, low, high)
        if at >= high or self.names[at] != name:
            return None
        table = _NAMES + self.count * 24  # past the names (20 bytes) and the CRCs (4 bytes)
        small = int.from_bytes(self.idx[table + at * 4:table + at * 4 + 4], "big")
        if not small & 0x80000000:
            return small
        large = table + self.count * 4 + (small & 0x7FFFFFFF) * 8
        return int.from_bytes(self.idx[large:large + 8], "big")

    @contextlib.contextmanager
    def _reading(self) -> Iterator[int]:
        """The pack's descriptor, kept open until the read is done."""
        with self._guard:
            if self._closed:
                raise ValueError("pack closed")
            self._readers += 1
        try:
            yield self.fd
        finally:
            with self._guard:
                self._readers -= 1
                if self._closed and not self._readers:
                    os.close(self.fd)

    def _header(self, offset: int) -> tuple[int, int, int]:
        """The entry at `offset`: its type, its size and where its zlib stream starts."""
        head = os.pread(self.fd, _HEADER_MAX, offset)
        byte = head[0]  # IndexError past the pack's end: a damaged index
        kind, size, shift, at = (byte >> 4) & 7, byte & 0x0F, 4, 1
        while byte & 0x80:
            byte = head[at]  # IndexError past the longest header: a damaged pack
            size |= (byte & 0x7F) << shift
            shift += 7
            at += 1
        return kind, size, offset + at

    def blob(self, offset: int) -> bytes | None:
        """The whole blob stored at `offset`, or None when the entry is anything else."""
        with self._reading():
            kind, size, offset = self._header(offset)
            if kind != BLOB:
                return None
            return self._inflate(offset, size)

    def blob_range(self, offset: int, start: int, length: int | None) -> bytes | None:
        """Bytes `start`… of the blob at `offset` (at most `length`), read alone.

        Only a blob stored at zlib level 0 (what roam and `pack-objects` copying roam's
        entries write) has its bytes at known places: such a stream is the data in blocks
        of up to 64 KiB, each behind a 5-byte header. Anything else: None.
        """
        with self._reading():
            found = self._blocks(offset)
            if found is None:
                return None
            size, starts, places = found
            end = size if length is None else min(size, start + length)
            if start >= end:
                return b""
            first = bisect.bisect_right(starts, start) - 1
            last = bisect.bisect_left(starts, end)  # blocks first..last-1 hold the range
            base = places[first]
            raw = memoryview(os.pread(self.fd, places[last - 1] - base + _block_size(
                starts, size, last - 1), base))
            parts = []
            for block in range(first, last):
                low = max(start, starts[block]) - starts[block]
                high = min(end, _block_end(starts, size, block)) - starts[block]
                at = places[block] - base
                parts.append(raw[at + low:at + high])
            data = b"".join(parts)
            if len(data) != end - start:
                return None  # the pack is shorter than its blocks said
            return data

    def _blocks(self, offset: int) -> tuple[int, list[int], list[int]] | None:
        """The blob's size, and where each stored block's data starts in it and in the pack."""
        with self._guard:
            known = self._maps.get(offset)
        if known is not None:
            return known
        kind, size, at = self._header(offset)
        if kind != BLOB:
            return None
        zhead = os.pread(self.fd, 2, at)
        if len(zhead) != 2 or zhead[0] & 0x0F != 8 or zhead[1] & 0x20 \
                or int.from_bytes(zhead, "big") % 31:
            return None  # not a zlib stream without a preset dictionary
        at += 2
        starts: list[int] = []
        places: list[int] = []
        done = 0
        while True:
            head = os.pread(self.fd, 5, at)
            if len(head) != 5 or head[0] & 0xFE:
                return None  # a compressed block (or padding git would not write)
            block = int.from_bytes(head[1:3], "little")
            if block ^ int.from_bytes(head[3:5], "little") != 0xFFFF:
                return None
            starts.append(done)
            places.append(at + 5)
            done += block
            at += 5 + block
            if head[0] & 1:  # the final block
                break
            if done > size:
                return None
        if done != size:
            return None
        found = (size, starts, places)
        with self._guard:
            if len(self._maps) >= _MAPS_KEPT:
                self._maps.pop(next(iter(self._maps)))
            self._maps[offset] = found
        return found

    def _inflate(self, offset: int, size: int) -> bytes | None:
        inflater = zlib.decompressobj()
        # a stored (level-0) stream is the data plus 5 bytes per block: read a little more
        # than the data at once, and on until the stream ends (a deflated one is shorter)
        step = size + size // 256 + 64
        parts = []
        while not inflater.eof and offset < self.size:
            chunk = os.pread(self.fd, step, offset)
            if not chunk:
                break
            parts.append(inflater.decompress(chunk))
            offset += len(chunk)
        data = b"".join(parts)
        if not inflater.eof or len(data) != size:
            return None
        return data

    def close(self) -> None:
        with self._guard:
            if self._closed:
                return
            self._closed = True
            idle = not self._readers
        if idle:
            os.close(self.fd)
        self.idx.close()


def _block_end(starts: list[int], size: int, block: int) -> int:
    return starts[block + 1] if block + 1 < len(starts) else size


def _block_size(starts: list[int], size: int, block: int) -> int:
    return _block_end(starts, size, block) - starts[block]


class _Names:
    """The index's sorted object ids as a sequence `bisect` can search (no copy made)."""

    def __init__(self, idx: mmap.mmap, count: int) -> None:
        self.idx = idx
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, at: int) -> bytes:
        start = _NAMES + at * 20
        return self.idx[start:start + 20]


class PackReader:
    """Whole blobs from the packs under `pack_dir`; thread-safe."""

    def __init__(self, pack_dir: Path) -> None:
        self.pack_dir = pack_dir
        self._lock = threading.Lock()
        self._packs: dict[Path, _Pack] = {}

    def read(self, sha: str) -> bytes | None:
        """The blob `sha` when a pack holds it whole; None: ask git."""
        return self._find(sha, lambda pack, offset: pack.blob(offset))

    def read_range(self, sha: str, start: int, length: int | None) -> bytes | None:
        """Bytes `start`… of blob `sha` (at most `length`) without reading the rest of it.

        None when no pack holds it stored as roam writes it: read it whole instead.
        """
        return self._find(sha, lambda pack, offset: pack.blob_range(offset, start, length))

    def _find(self, sha: str, read: Callable[[_Pack, int], bytes | None]) -> bytes | None:
        if len(sha) != 40:
            return None  # a SHA-256 mirror: not this reader's format
        name = bytes.fromhex(sha)
        for refreshed in (False, True):
            if refreshed and not self._rescan():
                return None
            with self._lock:
                packs = list(self._packs.values())
            for pack in packs:
                try:
                    offset = pack.offset(name)
                    if offset is not None:
                        return read(pack, offset)
                except (OSError, ValueError, IndexError, zlib.error):
                    return None  # a damaged or unexpected pack: git says what is wrong
        return None

    def _rescan(self) -> bool:
        """Map packs that appeared since the last look; whether any did."""
        with self._lock:
            found = False
            for idx_path in sorted(self.pack_dir.glob("pack-*.idx")):
                if idx_path in self._packs:
                    continue
                try:
                    self._packs[idx_path] = _Pack(idx_path)
                    found = True
                except (OSError, ValueError):
                    continue  # being written or removed, or another index version
            return found

    def forget_gone(self) -> None:
        """Unmap packs whose index is gone (a gc replaced them), so their space is freed.

        A read racing this one finds its pack closed (ValueError) and asks git instead.
        """
        with self._lock:
            gone = [path for path in self._packs if not path.exists()]
            packs = [self._packs.pop(path) for path in gone]
        for pack in packs:
            with contextlib.suppress(BufferError):
                pack.close()

    def close(self) -> None:
        with self._lock:
            packs, self._packs = self._packs, {}
        for pack in packs.values():
            with contextlib.suppress(BufferError):
                pack.close()

"""A push's outgoing files and what packing them gave, as compact columns (issue 22).

A first push sends every file of the home. Held as one `LocalFile` each (with its stat
signature's list and integers) beside each file's digest, blob ids and size from the packer,
that was ~850 bytes a file at the end of the packing, the push's peak: ~85 MiB at 100,000
files. Here a plain file of the home costs its path (which the result lists anyway) and a
few machine integers: its record is made again, briefly, whenever the packer or the secret
scan reads it. What packing gave is kept as bytes (digest and blob id: 32 each) until the
new manifest is built.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import overload

from roam_core.engine.scan import LocalFile
from roam_core.store.manifest import FileEntry, file_node_text, node_text

#: size, mode, and the four integers of the stat signature of each compact file
_NUMBERS = 6
_LOW, _HIGH = -(1 << 63), 1 << 63
_DIGEST = 32


class Outgoing(Sequence[LocalFile]):
    """The files a push sends, in order; reading one makes its record afresh.

    A file is kept whole (its own `LocalFile`) when its record carries more than the walk
    gave: a config's projection, a redacted copy, a digest already known, a file outside the
    home's folder (the session archive), or a number too large for the columns. The records
    made afresh are read-only for the caller: only what the columns hold comes back.
    """

    def __init__(self, files: Iterable[LocalFile]) -> None:
        self.rels: list[str] = []
        self._home: str | None = None
        self._numbers = array("q")
        self._whole: dict[int, LocalFile] = {}
        # what packing gave, by index (`packed`): digest, size, blob ids
        self._digests = bytearray()
        self._sizes = array("q")
        self._blobs = bytearray()
        self._odd_blobs: dict[int, tuple[str, ...]] = {}
        self._packed = bytearray()
        for item in files:
            self._add(item)

    def _add(self, item: LocalFile) -> None:
        index = len(self.rels)
        self.rels.append(item.rel)
        self._packed.append(0)
        numbers = (item.size, item.mode, *item.signature)
        if self._home is None and item.where.endswith("/"):
            self._home = item.where
        if not item.travels_as_is or item.cached is not None \
                or item.sha256 is not None or item.where != self._home \
                or len(numbers) != _NUMBERS or not all(_LOW <= n < _HIGH for n in numbers):
            self._whole[index] = item
            numbers = (0,) * _NUMBERS
        self._numbers.extend(numbers)

    def __len__(self) -> int:
        return len(self.rels)

    @overload
    def __getitem__(self, index: int) -> LocalFile: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[LocalFile]: ...

    def __getitem__(self, index: int | slice) -> LocalFile | Sequence[LocalFile]:
        if isinstance(index, slice):
            return [self[at] for at in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self.rels)
        rel = self.rels[index]  # IndexError past the end ends an iteration
        whole = self._whole.get(index)
        if whole is not None:
            return whole
        at = index * _NUMBERS
        numbers = self._numbers
        assert self._home is not None
        return LocalFile(rel, self._home, numbers[at], numbers[at + 1],
                         list(numbers[at + 2:at + _NUMBERS]))

    def __iter__(self) -> Iterator[LocalFile]:
        for index in range(len(self.rels)):
            yield self[index]

    def plain(self) -> Sequence[tuple[str, str, int]]:
        """(path, location, size) of each file read as it is on disk (what a scan reads).

        A view: each tuple is made when read, so a scan holding it holds no string per file.
        """
        return _PlainView(self, array("q", (index for index in range(len(self.rels))
                                            if self._is_plain(index))))

    def _is_plain(self, index: int) -> bool:
        whole = self._whole.get(index)
        return whole is None or whole.travels_as_is

    def packed(self, index: int, sha256: str, size: int, blob_ids: tuple[str, ...]) -> None:
        """Note what packing file `index` gave: its digest, size and blob ids."""
        end = index * _DIGEST
        self._grow(end + _DIGEST)
        self._digests[end:end + _DIGEST] = bytes.fromhex(sha256)
        self._sizes[index] = size
        blob = _raw(blob_ids[0]) if len(blob_ids) == 1 else None
        if blob is None:
            self._odd_blobs[index] = blob_ids
        else:
            self._blobs[end:end + _DIGEST] = blob
        self._packed[index] = 1

    def _grow(self, length: int) -> None:
        if len(self._digests) < length:  # the first result: room for every file's at once
            count = len(self.rels)
            self._digests = bytearray(count * _DIGEST)
            self._blobs = bytearray(count * _DIGEST)
            self._sizes = array("q", bytes(8 * count))

    def results(self) -> Iterator[tuple[str, str, int, tuple[str, ...], int]]:
        """(path, sha256, size, blob ids, mode) of each packed file, in order."""
        for index, rel in enumerate(self.rels):
            if not self._packed[index]:
                continue
            at = index * _DIGEST
            blobs = self._odd_blobs.get(index) or (self._blobs[at:at + _DIGEST].hex(),)
            whole = self._whole.get(index)
            mode = whole.mode if whole is not None else self._numbers[index * _NUMBERS + 1]
            yield (rel, self._digests[at:at + _DIGEST].hex(), self._sizes[index], blobs,
                   mode)

    def clear(self) -> None:
        """Let go of every file and result (the manifest has taken them)."""
        self.__init__(())  # type: ignore[misc]


def _raw(blob_id: str) -> bytes | None:
    """A blob id as its 32 bytes, when it is 64 lowercase hex digits (else None)."""
    if len(blob_id) != 2 * _DIGEST:
        return None
    try:
        raw = bytes.fromhex(blob_id)
    except ValueError:
        return None
    return raw if raw.hex() == blob_id else None


class _PlainView(Sequence[tuple[str, str, int]]):
    """(path, location, size) of the plain files of an `Outgoing`, made when read."""

    def __init__(self, files: Outgoing, indexes: array[int]) -> None:
        self._files = files
        self._indexes = indexes

    def __len__(self) -> int:
        return len(self._indexes)

    @overload
    def __getitem__(self, index: int) -> tuple[str, str, int]: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[tuple[str, str, int]]: ...

    def __getitem__(self, index: int | slice
                    ) -> tuple[str, str, int] | Sequence[tuple[str, str, int]]:
        if isinstance(index, slice):
            return [self[at] for at in range(*index.indices(len(self)))]
        item = self._files[self._indexes[index]]
        return item.rel, item.location, item.size

    def __iter__(self) -> Iterator[tuple[str, str, int]]:
        # straight from the columns: a record made per file cost the scan ~1.5 µs a file of
        # the push's interpreter lock, twice (its worker's work, its findings by path)
        files = self._files
        rels, numbers, whole, home = files.rels, files._numbers, files._whole, files._home
        for index in self._indexes:
            item = whole.get(index)
            if item is not None:
                yield item.rel, item.location, item.size
            else:
                rel = rels[index]
                yield rel, f"{home}{rel}", numbers[index * _NUMBERS]


class NewManifest(Mapping[str, FileEntry]):
    """A new generation's entries: those kept as they were, and the files sent as rows.

    A sent file of one blob is a row of bytes and machine integers (~110 bytes) instead of
    an entry with its digest, its blob ref and the blob id as objects (~560 bytes): at
    100,000 files that was most of the push's peak while the trees were written (issue 22).
    Its `FileEntry` is made afresh whenever it is read, so readers see equal entries (never
    the same object twice). Read-only once built; rows are found by path (the files are sent
    in path order, so a binary search; a dictionary if they were not).
    """

    def __init__(self, entries: dict[str, FileEntry]) -> None:
        #: entries kept as objects: the reference's, and the sent files rows cannot hold
        self._entries = entries
        self._rels: list[str] = []
        self._index: dict[str, int] | None = None  # only when rows came out of path order
        self._sha = bytearray()
        self._blob = bytearray()
        self._numbers = array("q")  # size, mode, pack number, offset, length of each row
        self._packs: list[str] = []
        self._pack_numbers: dict[str, int] = {}

    def add(self, entry: FileEntry) -> None:
        """Add a sent file's entry (its path must not be in the manifest yet)."""
        rel = entry.path
        row = self._row_of(entry)
        if row is None or rel in self._entries:
            self._entries[rel] = entry
            return
        sha, blob, pack, numbers = row
        if self._index is None and self._rels and rel <= self._rels[-1]:
            self._index = {path: at for at, path in enumerate(self._rels)}
        if self._index is not None:
            self._index[rel] = len(self._rels)
        self._rels.append(rel)
        self._sha += sha
        self._blob += blob
        number = self._pack_numbers.setdefault(pack, len(self._packs))
        if number == len(self._packs):
            self._packs.append(pack)
        self._numbers.extend((numbers[0], numbers[1], number, numbers[2], numbers[3]))

    @staticmethod
    def _row_of(entry: FileEntry) -> tuple[bytes, bytes, str, tuple[int, ...]] | None:
        if entry.scope != "shared" or len(entry.blobs) != 1:
            return None
        blob_id, pack, offset, length = entry.blobs[0]
        sha, blob = _raw(entry.sha256), _raw(blob_id)
        numbers = (entry.size, entry.mode, offset, length)
        if sha is None or blob is None or not all(0 <= n < _HIGH for n in numbers):
            return None
        return sha, blob, pack, numbers

    def _at(self, rel: str) -> int | None:
        if self._index is not None:
            return self._index.get(rel)
        at = bisect.bisect_left(self._rels, rel)
        return at if at < len(self._rels) and self._rels[at] == rel else None

    def __getitem__(self, rel: str) -> FileEntry:
        entry = self._entries.get(rel)
        if entry is not None:
            return entry
        at = self._at(rel)
        if at is None:
            raise KeyError(rel)
        numbers = self._numbers[at * 5:at * 5 + 5]
        span = slice(at * _DIGEST, (at + 1) * _DIGEST)
        return FileEntry(rel, numbers[0], numbers[1], self._sha[span].hex(), "shared",
                         ((self._blob[span].hex(), self._packs[numbers[2]], numbers[3],
                           numbers[4]),))

    def node_text(self, rel: str) -> str:
        """`manifest.node_text` of the entry at `rel`, from its row (no entry made for it)."""
        entry = self._entries.get(rel)
        if entry is not None:
            return node_text(entry)
        at = self._at(rel)
        if at is None:
            raise KeyError(rel)
        size, mode, pack, offset, length = self._numbers[at * 5:at * 5 + 5]
        span = slice(at * _DIGEST, (at + 1) * _DIGEST)
        return file_node_text(size, mode, self._sha[span].hex(), "shared",
                              ((self._blob[span].hex(), self._packs[pack], offset, length),))

    def total_size(self) -> int:
        """The bytes of every entry (the snapshot's total), no entry made for it."""
        return sum(entry.size for entry in self._entries.values()) + sum(self._numbers[::5])

    def __contains__(self, rel: object) -> bool:
        return rel in self._entries or (isinstance(rel, str) and self._at(rel) is not None)

    def __iter__(self) -> Iterator[str]:
        yield from self._entries
        yield from self._rels

    def __len__(self) -> int:
        return len(self._entries) + len(self._rels)


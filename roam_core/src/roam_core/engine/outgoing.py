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

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

from roam_core.engine.scan import LocalFile

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
        if item.is_config or item.redacted is not None or item.cached is not None \
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
        return whole is None or (not whole.is_config and whole.redacted is None)

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

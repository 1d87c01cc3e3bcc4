"""A file's contents from the store: its blobs in order, checked against its entry.

`ContentSource` re-reads one file each time it is called; `ContentStream` reads the
contents of many files at once, by pack span (`Repository.read_blobs`), in the order given.
Either way a file's bytes are checked against its manifest entry's size and SHA-256.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import TYPE_CHECKING

from roam_core.errors import IntegrityError
from roam_core.store.manifest import FileEntry

if TYPE_CHECKING:
    from roam_core.store.repository import Repository


class ContentSource:
    """A file's bytes from the store, each time it is called.

    `sha256` is what the bytes are checked against while they are read (a mismatch raises
    `IntegrityError`), so a consumer need not hash them again.
    """

    __slots__ = ("entry", "repo", "sha256")  # one per file a pull writes

    def __init__(self, repo: Repository, entry: FileEntry) -> None:
        self.repo = repo
        self.entry = entry
        self.sha256 = entry.sha256

    def __call__(self) -> Iterator[bytes]:
        return self.repo.iter_content(self.entry)


def checked_content(entry: FileEntry, blobs: Iterator[tuple[bytes, bytes]]) -> Iterator[bytes]:
    """The file's bytes from its blobs (bytes, SHA-256), checked against `entry` at the end.

    Takes exactly one item of `blobs` per blob reference (fewer only when it fails).
    """
    if len(entry.blobs) == 1:
        # one blob (most files): its name check already hashed exactly the file's bytes
        data, single = next(blobs)
        if len(data) != entry.size or single.hex() != entry.sha256:
            raise IntegrityError(f"integrity error: content of {entry.path!r} does not "
                                 "match its manifest entry")
        yield data
        return
    digest = hashlib.sha256()
    size = 0
    for _ref in entry.blobs:
        data, _single = next(blobs)
        digest.update(data)
        size += len(data)
        if size > entry.size:
            break
        yield data
    if size != entry.size or digest.hexdigest() != entry.sha256:
        raise IntegrityError(f"integrity error: content of {entry.path!r} does not match "
                             "its manifest entry")


class ContentStream:
    """The contents of many files of one store, read ahead by pack span, in the given order.

    `content(entry)` must be called for the entries in the order they were given; each
    reads on where the last one stopped.
    """

    def __init__(self, repo: Repository, entries: list[FileEntry]) -> None:
        self._blobs = repo.read_blobs([ref for entry in entries for ref in entry.blobs])

    def content(self, entry: FileEntry) -> Iterator[bytes]:
        return checked_content(entry, self._blobs)

    def close(self) -> None:
        """Stop reading ahead (the span readers finish the request they are in)."""
        self._blobs.close()  # type: ignore[attr-defined]

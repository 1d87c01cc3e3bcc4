"""The index catalogue in memory: a pack's refs as arrays, and a blob table without a dict.

At 100,000 blobs the catalogue held as a list of `(hex id, pack, offset, length)` tuples per
index cost ~250 bytes a blob, copied again into every dict built from it (the blob table a
push asks for, the places a read falls back on): the largest part of what `roam stats`,
`roam prune` and `roam key rotate` held at once (issue 23). Here one pack's refs are one
interned pack key, the ids in one bytes object (32 bytes each) and the offsets and lengths
in two `array('Q')`s: 48 bytes a blob. A `BlobTable` finds a blob by a binary search over
one sorted bytes object of ids (and an array saying where each is): 44 bytes a blob, no
Python object per blob. Refs come out as the same tuples as before, made when asked for.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, overload

from roam_core.store.manifest import BlobRef, is_hex64

#: Bytes of one binary id (a SHA-256-sized keyed name).
ID_SIZE = 32


class RefTable(Sequence[BlobRef]):
    """The refs one index lists, all in one pack: ids, offsets and lengths as arrays."""

    __slots__ = ("ids", "lengths", "offsets", "pack")

    def __init__(self, pack: str, ids: bytes, offsets: array, lengths: array) -> None:
        self.pack = pack
        self.ids = ids
        self.offsets = offsets
        self.lengths = lengths

    def __len__(self) -> int:
        return len(self.offsets)

    @overload
    def __getitem__(self, index: int) -> BlobRef: ...

    @overload
    def __getitem__(self, index: slice) -> list[BlobRef]: ...

    def __getitem__(self, index: int | slice) -> BlobRef | list[BlobRef]:
        if isinstance(index, slice):
            return [self[at] for at in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self)
        if not 0 <= index < len(self):
            raise IndexError("ref index out of range")
        start = index * ID_SIZE
        return (self.ids[start:start + ID_SIZE].hex(), self.pack, self.offsets[index],
                self.lengths[index])

    def __iter__(self) -> Iterator[BlobRef]:
        ids, pack = self.ids, self.pack
        for at, (offset, length) in enumerate(zip(self.offsets, self.lengths, strict=True)):
            yield ids[at * ID_SIZE:(at + 1) * ID_SIZE].hex(), pack, offset, length

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(self) == len(other) and all(
                tuple(mine) == tuple(theirs) for mine, theirs in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RefTable({self.pack!r}, {len(self)} refs)"

    def id_at(self, index: int) -> bytes:
        """The binary id of the `index`th ref (no hex string made)."""
        return self.ids[index * ID_SIZE:(index + 1) * ID_SIZE]

    def binary_ids(self) -> Iterator[bytes]:
        """Each ref's binary id, in order."""
        ids = self.ids
        return (ids[at:at + ID_SIZE] for at in range(0, len(ids), ID_SIZE))


def compact(refs: Iterable[Sequence[Any]]) -> Sequence[BlobRef]:
    """`refs` as a `RefTable` (one pack, hex ids); anything else stays a list of tuples.

    Raises `ValueError` for a ref that is not (64-hex id, pack, offset, length) with whole
    numbers from 0 up: the cache reader then reads that index again.
    """
    refs = list(refs)
    if not refs:
        return RefTable("", b"", array("Q"), array("Q"))
    pack = refs[0][1]
    if not isinstance(pack, str) or any(ref[1] != pack for ref in refs):
        return [tuple(ref) for ref in refs]
    if not all(is_hex64(ref[0]) for ref in refs):
        raise ValueError("malformed ref id")  # fromhex would take upper case and spaces
    try:
        ids = b"".join(bytes.fromhex(ref[0]) for ref in refs)
        offsets = array("Q", (ref[2] for ref in refs))
        lengths = array("Q", (ref[3] for ref in refs))
    except (TypeError, OverflowError) as error:
        raise ValueError(f"malformed ref: {error}") from None
    if len(ids) != ID_SIZE * len(refs):
        raise ValueError("malformed ref id")
    return RefTable(sys.intern(pack), ids, offsets, lengths)


def found_ref(ref: BlobRef | None, blob_id: str) -> BlobRef:
    """`ref`, or `KeyError` for `blob_id` when there is none (a blob table's `get` said so)."""
    if ref is None:
        raise KeyError(blob_id)
    return ref


class BlobTable(Mapping[str, BlobRef]):
    """Blob id → where it is stored, over `RefTable`s: sorted binary ids, no dict.

    Where one id is listed more than once, the last table's ref wins (as a dict built from
    the catalogue in order did).
    """

    def __init__(self, tables: Sequence[Sequence[BlobRef]]) -> None:
        self._tables = [table if isinstance(table, RefTable) else compact(table)
                        for table in tables if len(table)]
        # one sort of id + (table, position): a short-lived key per blob while building
        keyed = sorted(
            table.id_at(at) + ((number << 32) | at).to_bytes(8, "big")
            for number, table in enumerate(self._tables) if isinstance(table, RefTable)
            for at in range(len(table)))
        ids: list[bytes] = []
        where = array("Q")
        for key in keyed:
            if ids and ids[-1] == key[:ID_SIZE]:
                where[-1] = int.from_bytes(key[ID_SIZE:], "big")  # a later copy wins
                continue
            ids.append(key[:ID_SIZE])
            where.append(int.from_bytes(key[ID_SIZE:], "big"))
        del keyed
        self._ids = b"".join(ids)
        self._where = where
        # each id's first 4 bytes, searched by the C bisect: a lookup is a dict's order of
        # cost (a search in Python over the ids took 30 times as long), for 4 bytes a blob
        self._prefixes = array("I", (int.from_bytes(blob[:4], "big") for blob in ids))
        del ids
        # a table left a list (refs of several packs: never written so) is looked up as one
        self._loose: dict[str, BlobRef] = {
            str(ref[0]): tuple(ref)  # type: ignore[misc]
            for table in self._tables if not isinstance(table, RefTable) for ref in table}

    def _find(self, blob_id: bytes) -> int:
        prefixes, ids = self._prefixes, self._ids
        prefix = int.from_bytes(blob_id[:4], "big")
        at = bisect_left(prefixes, prefix)
        while at < len(prefixes) and prefixes[at] == prefix:
            if ids[at * ID_SIZE:(at + 1) * ID_SIZE] == blob_id:
                return at
            at += 1
        return -1

    def __getitem__(self, blob_id: str) -> BlobRef:
        return found_ref(self.get(blob_id), blob_id)

    def get(self, blob_id: str, default: BlobRef | None = None  # type: ignore[override]
            ) -> BlobRef | None:
        """The ref of `blob_id`, else `default`.

        A push asks once per chunk, most often for a blob the store lacks: a raised and
        caught `KeyError` cost more than the search.
        """
        found = self._loose.get(blob_id) if self._loose else None
        if found is not None:
            return found
        if not self._where:
            return default
        try:
            binary = bytes.fromhex(blob_id) if isinstance(blob_id, str) else b""
        except ValueError:
            binary = b""
        at = self._find(binary) if len(binary) == ID_SIZE else -1
        if at < 0:
            return default
        slot = self._where[at]
        return self._tables[slot >> 32][slot & 0xFFFFFFFF]

    def __contains__(self, blob_id: object) -> bool:
        try:
            self[blob_id]  # type: ignore[index]
        except KeyError:
            return False
        return True

    def __iter__(self) -> Iterator[str]:
        ids = self._ids
        for at in range(0, len(ids), ID_SIZE):
            yield ids[at:at + ID_SIZE].hex()
        yield from (blob for blob in self._loose if self._find(bytes.fromhex(blob)) < 0)

    def __len__(self) -> int:
        return len(self._where) + sum(1 for blob in self._loose
                                      if self._find(bytes.fromhex(blob)) < 0)


class KnownBlobs(MutableMapping[str, BlobRef]):
    """A push's blob table: a shared `BlobTable` under what this push added or dropped.

    `copy()` gives another such view over the same table (not a dict of every blob).
    """

    def __init__(self, table: BlobTable, added: Mapping[str, BlobRef] | None = None,
                 dropped: Iterable[str] = ()) -> None:
        self.table = table
        self.added: dict[str, BlobRef] = dict(added or {})
        self.dropped: set[str] = set(dropped)

    def __getitem__(self, blob_id: str) -> BlobRef:
        return found_ref(self.get(blob_id), blob_id)

    def get(self, blob_id: str, default: BlobRef | None = None  # type: ignore[override]
            ) -> BlobRef | None:
        """The ref of `blob_id`, else `default` (no `KeyError` raised and caught)."""
        found = self.added.get(blob_id)
        if found is not None:
            return found
        if blob_id in self.dropped:
            return default
        return self.table.get(blob_id, default)

    def __setitem__(self, blob_id: str, ref: BlobRef) -> None:
        self.added[blob_id] = ref
        self.dropped.discard(blob_id)

    def __delitem__(self, blob_id: str) -> None:
        if blob_id not in self:
            raise KeyError(blob_id)
        self.added.pop(blob_id, None)
        self.dropped.add(blob_id)

    def __contains__(self, blob_id: object) -> bool:
        if blob_id in self.added:
            return True
        return blob_id not in self.dropped and blob_id in self.table

    def __iter__(self) -> Iterator[str]:
        yield from self.added
        yield from (blob for blob in self.table
                    if blob not in self.added and blob not in self.dropped)

    def __len__(self) -> int:
        return sum(1 for _blob in self)

    def copy(self) -> KnownBlobs:
        return KnownBlobs(self.table, self.added, self.dropped)

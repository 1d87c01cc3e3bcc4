"""A key rotation's bookkeeping: what earlier runs did, and what this run writes.

`Journal` reads the rotation's records back from the store (see `roam_core.store.rotation`
for where they live and how they are sealed); `Recording` wraps the backend to note every
key the rotation writes, so each record can say which objects are the new store's.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roam_core import crypto
from roam_core.storage import Backend
from roam_core.store import rotation
from roam_core.store.catalog import ID_SIZE
from roam_core.store.manifest import BlobRef
from roam_core.store.rotation import journal_prefix, read_record


class Recording(Backend):
    """The backend, noting every key written through it (the rotation's own objects)."""

    def __init__(self, inner: Backend) -> None:
        self.inner = inner
        self.capabilities = inner.capabilities
        self._lock = threading.Lock()
        self._wrote: set[str] = set()

    def take(self) -> list[str]:
        """The keys written since the last call."""
        with self._lock:
            found, self._wrote = sorted(self._wrote), set()
        return found

    def put_new(self, key: str, data: bytes) -> None:
        with self._lock:  # noted first: an existing object (a rerun) is the rotation's too
            self._wrote.add(key)
        self.inner.put_new(key, data)

    def get(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        return self.inner.get(key, offset, length)

    def list(self, prefix: str = "") -> Iterator[str]:
        return self.inner.list(prefix)

    def read_ref(self, name: str) -> tuple[bytes, str] | None:
        return self.inner.read_ref(name)

    def swap_ref(self, name: str, data: bytes, expected_version: str | None) -> str:
        return self.inner.swap_ref(name, data, expected_version)

    def identity(self) -> str:
        return self.inner.identity()

    def flush(self) -> None:
        self.inner.flush()

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)


class BlobMoves:
    """Old blob id → its new ref, for every blob a rotation re-sealed: arrays, no dict.

    A dict of hex ids to ref tuples cost ~350 bytes a blob (38 MB at 110,000 blobs, held
    for the whole rotation); here an entry is 84 bytes in a few arrays, found by a binary
    search over the old ids (sorted again after each batch of additions).
    """

    def __init__(self) -> None:
        self._old = bytearray()
        self._new = bytearray()
        self._pack = array("L")
        self._offsets = array("Q")
        self._lengths = array("Q")
        self._packs: list[str] = []
        self._pack_numbers: dict[str, int] = {}
        self._order: array | None = None

    def __len__(self) -> int:
        return len(self._pack)

    def update(self, moves: Mapping[str, Sequence[Any]]) -> None:
        """Add `old id → new ref` for each of `moves` (refs as tuples or lists)."""
        for old, ref in moves.items():
            self._old += bytes.fromhex(old)
            self._new += bytes.fromhex(str(ref[0]))
            number = self._pack_numbers.setdefault(str(ref[1]), len(self._packs))
            if number == len(self._packs):
                self._packs.append(str(ref[1]))
            self._pack.append(number)
            self._offsets.append(int(ref[2]))
            self._lengths.append(int(ref[3]))
        self._order = None

    def _sorted(self) -> array:
        if self._order is None:
            old = self._old
            self._order = array("L", sorted(range(len(self)),
                                            key=lambda at: old[at * ID_SIZE:(at + 1) * ID_SIZE]))
        return self._order

    def _find(self, old_id: str) -> int:
        try:
            key = bytes.fromhex(old_id)
        except ValueError:
            return -1
        order, old = self._sorted(), self._old
        low, high = 0, len(order)
        while low < high:
            mid = (low + high) // 2
            at = order[mid] * ID_SIZE
            if old[at:at + ID_SIZE] < key:
                low = mid + 1
            else:
                high = mid
        if low < len(order) and old[order[low] * ID_SIZE:(order[low] + 1) * ID_SIZE] == key:
            return order[low]
        return -1

    def __contains__(self, old_id: object) -> bool:
        return isinstance(old_id, str) and self._find(old_id) >= 0

    def get(self, old_id: str) -> BlobRef | None:
        at = self._find(old_id)
        if at < 0:
            return None
        return (bytes(self._new[at * ID_SIZE:(at + 1) * ID_SIZE]).hex(),
                self._packs[self._pack[at]], self._offsets[at], self._lengths[at])

    def __getitem__(self, old_id: str) -> BlobRef:
        found = self.get(old_id)
        if found is None:
            raise KeyError(old_id)
        return found


@dataclass
class Journal:
    """What earlier invocations of this rotation did, from its records in the store."""

    records: list[str] = field(default_factory=list)
    started: dict[str, object] | None = None
    indexes: set[str] = field(default_factory=set)
    blobs: BlobMoves = field(default_factory=BlobMoves)
    snapshots: dict[str, str] = field(default_factory=dict)
    wrote: set[str] = field(default_factory=set)
    publishes: dict[str, dict[str, object]] = field(default_factory=dict)
    forgets: set[str] = field(default_factory=set)

    @classmethod
    def load(cls, backend: Backend, new_keys: crypto.Keys) -> Journal:
        journal = cls()
        prefix = journal_prefix(new_keys)
        for key in sorted(backend.list(prefix)):
            journal.records.append(key)
            name = key[len(prefix):]
            if name.startswith("doomed-"):
                continue  # read only when deleting
            record = read_record(backend, new_keys, key)
            journal.wrote.update(str(item) for item in record.get("wrote", []))
            if name == rotation.STARTED:
                journal.started = record
            elif name.startswith("blobs-"):
                journal.indexes.update(record["indexes"])
                journal.blobs.update(record["map"])
            elif name.startswith("snapshot-"):
                journal.snapshots[str(record["old"])] = str(record["new"])
            elif name.startswith("forgets-"):
                journal.forgets.update(str(item) for item in record["old"])
            elif name.startswith("publish-"):
                journal.publishes[name[len("publish-"):]] = record
        return journal

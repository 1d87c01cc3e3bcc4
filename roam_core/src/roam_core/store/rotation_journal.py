"""A key rotation's bookkeeping: what earlier runs did, and what this run writes.

`Journal` reads the rotation's records back from the store (see `roam_core.store.rotation`
for where they live and how they are sealed); `Recording` wraps the backend to note every
key the rotation writes, so each record can say which objects are the new store's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

from roam_core import crypto
from roam_core.storage import Backend
from roam_core.store import rotation
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


@dataclass
class Journal:
    """What earlier invocations of this rotation did, from its records in the store."""

    records: list[str] = field(default_factory=list)
    started: dict[str, object] | None = None
    indexes: set[str] = field(default_factory=set)
    blobs: dict[str, BlobRef] = field(default_factory=dict)
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
                journal.blobs.update({old: tuple(ref)
                                      for old, ref in record["map"].items()})
            elif name.startswith("snapshot-"):
                journal.snapshots[str(record["old"])] = str(record["new"])
            elif name.startswith("forgets-"):
                journal.forgets.update(str(item) for item in record["old"])
            elif name.startswith("publish-"):
                journal.publishes[name[len("publish-"):]] = record
        return journal

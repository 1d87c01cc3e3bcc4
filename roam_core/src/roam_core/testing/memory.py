"""An in-memory reference backend: the storage contract with nothing else in the way.

Several `MemoryBackend` instances opened on one `MemoryStore` behave like several devices
talking to one remote, which is how core's own tests model a fleet.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from roam_core.errors import ObjectExists, ObjectNotFound, RefConflict
from roam_core.storage import Backend
from roam_core.types import Capabilities


@dataclass
class MemoryStore:
    """The shared "remote" of one or more memory backends."""

    name: str = "memory"
    objects: dict[str, bytes] = field(default_factory=dict)
    refs: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


_STORES: dict[str, MemoryStore] = {}
_STORES_LOCK = threading.Lock()


def named_store(name: str) -> MemoryStore:
    """The process-wide store called `name` (created empty on first use)."""
    with _STORES_LOCK:
        return _STORES.setdefault(name, MemoryStore(name))


class MemoryBackend(Backend):
    """The storage contract in a dict. Thread-safe; versions are counters."""

    capabilities = Capabilities(deletes=True)

    def __init__(self, store: MemoryStore | None = None) -> None:
        self.store = store if store is not None else MemoryStore()

    def get(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        with self.store.lock:
            try:
                data = self.store.objects[key]
            except KeyError:
                raise ObjectNotFound(key) from None
        end = len(data) if length is None else offset + length
        return data[offset:end]

    def put_new(self, key: str, data: bytes) -> None:
        with self.store.lock:
            if key in self.store.objects:
                raise ObjectExists(key)
            self.store.objects[key] = bytes(data)

    def delete(self, keys: Iterable[str]) -> None:
        with self.store.lock:
            for key in keys:
                self.store.objects.pop(key, None)

    def list(self, prefix: str = "") -> Iterator[str]:
        with self.store.lock:
            keys = sorted(key for key in self.store.objects if key.startswith(prefix))
        return iter(keys)

    def read_ref(self, name: str) -> tuple[bytes, str] | None:
        with self.store.lock:
            found = self.store.refs.get(name)
        return None if found is None else (found[0], str(found[1]))

    def swap_ref(self, name: str, data: bytes, expected_version: str | None) -> str:
        with self.store.lock:
            current = self.store.refs.get(name)
            current_version = None if current is None else str(current[1])
            if current_version != expected_version:
                raise RefConflict(f"ref {name} is at {current_version}, not {expected_version}")
            version = 1 if current is None else current[1] + 1
            self.store.refs[name] = (bytes(data), version)
        return str(version)

    def identity(self) -> str:
        return f"memory://{self.store.name}"

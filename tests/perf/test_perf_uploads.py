"""Parallel uploads stay bounded, keep the deadline, and store a pack before its index."""

from __future__ import annotations

import os
import threading
import time
from typing import Any

import pytest

from roam_core import crypto, deadline
from roam_core.errors import DeadlineExceeded
from roam_core.storage import GuardedBackend
from roam_core.store import uploads as uploads_module
from roam_core.store.packer import Packer
from roam_core.store.repository import Repository
from roam_core.store.uploads import Uploads
from roam_core.testing.memory import MemoryBackend


class SlowBackend(MemoryBackend):
    """Records how many bytes were being written at once, and the order of keys."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        self.busy = 0
        self.peak = 0
        self.order: list[str] = []

    def put_new(self, key: str, data: bytes) -> None:
        with self.lock:
            self.busy += len(data)
            self.peak = max(self.peak, self.busy)
        time.sleep(0.01)
        super().put_new(key, data)
        with self.lock:
            self.busy -= len(data)
            self.order.append(key)


def test_bytes_in_flight_never_pass_the_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(uploads_module, "BYTES_IN_FLIGHT", 3000)
    backend = SlowBackend()
    uploads = Uploads(backend, workers=8)
    for number in range(40):
        uploads.put(f"objects/{number:03d}", b"x" * 1000)
    uploads.wait()
    uploads.close()
    assert len(backend.order) == 40
    assert backend.peak <= 3000


def test_the_deadline_reaches_the_worker_threads() -> None:
    backend = GuardedBackend(SlowBackend(), "slow")
    uploads = Uploads(backend, workers=4)
    with deadline.running(deadline.Deadline.after(-1, "push")):
        uploads.put("objects/late", b"data")
    with pytest.raises(DeadlineExceeded):
        uploads.wait()
    uploads.close()


def test_each_index_is_written_after_its_pack(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("roam_core.store.packer.PACK_TARGET", 64 * 1024)
    backend = SlowBackend()
    repo = Repository(backend, crypto.Keys.derive(bytes(range(32))))
    packer = Packer(repo, {}, workers=4)
    for _ in range(12):
        packer.add_chunk(os.urandom(40000))  # incompressible: each pack holds two
    packer.finish()
    packs = [key for key in backend.order if key.startswith("packs/")]
    assert len(packs) >= 4
    for key in packs:
        index_at = next(i for i, k in enumerate(backend.order)
                        if k.startswith("index/") and _names(repo, k) == key)
        assert index_at > backend.order.index(key)


def _names(repo: Repository, index_key: str) -> Any:
    return repo.load_index(index_key.rpartition("/")[2])[0][1]

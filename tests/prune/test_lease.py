"""Issue 23: the deleters' lease (engine/lease.py) on the in-memory and local backends.

One deleter at a time, an expired lease free for the next, a lost lease noticed, marks kept
across a release and read back by what pushers call, and a lease under another key refused.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from roam_backend_local.backend import LocalBackend
from roam_core import crypto
from roam_core.engine import lease
from roam_core.errors import IntegrityError
from roam_core.storage import GuardedBackend
from roam_core.store.repository import Repository
from roam_core.testing.memory import MemoryBackend


@pytest.fixture(params=["memory", "local"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Repository:
    inner = MemoryBackend() if request.param == "memory" else LocalBackend(tmp_path / "store")
    return Repository(GuardedBackend(inner), crypto.Keys.derive(os.urandom(32)))


def test_one_holder_at_a_time_and_release_frees(repo: Repository) -> None:
    assert not lease.read_lease(repo).active()
    held = lease.acquire(repo, "dev-a", "laptop", "prune")
    assert lease.read_lease(repo).active()
    with pytest.raises(lease.LeaseHeld, match="laptop holds the store's lease for prune"):
        lease.acquire(repo, "dev-b", "desk", "rotate")
    held.release()
    assert not lease.read_lease(repo).active()
    lease.acquire(repo, "dev-b", "desk", "rotate").release()


def test_an_expired_lease_is_free_and_its_old_holder_notices(repo: Repository) -> None:
    crashed = lease.acquire(repo, "dev-a", "laptop", "prune", seconds=0.2)
    time.sleep(0.3)
    taker = lease.acquire(repo, "dev-b", "desk", "prune")
    with pytest.raises(lease.LeaseHeld, match="taken by another device"):
        crashed.renew()
    taker.renew()
    assert lease.read_lease(repo).holder == "dev-b"


def test_marks_survive_release_and_name_keys_for_pushers(repo: Repository) -> None:
    with lease.held(repo, "dev-a", "laptop", "prune") as held:
        first = lease.write_mark(repo, "laptop", ["packs/ab/" + "ab" * 32, "index/" + "cd" * 32])
        held.set_marks([first])
    record = lease.read_lease(repo)
    assert not record.active() and record.marks == (first,)
    assert lease.marked_keys(repo) == {"packs/ab/" + "ab" * 32, "index/" + "cd" * 32}
    assert lease.load_mark(repo, first).device == "laptop"


def test_a_lease_sealed_under_another_key_is_refused(repo: Repository) -> None:
    other = Repository(repo.backend, crypto.Keys.derive(os.urandom(32)))
    lease.acquire(other, "dev-x", "stranger", "prune")
    with pytest.raises(IntegrityError):
        lease.read_lease(repo)

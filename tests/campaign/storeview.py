"""Reading a store behind roam's back: every generation, and every object decrypted.

The campaign checks the store with the Repository API rather than trusting what the CLI
says: `generations()` walks HEAD's chain, `plaintexts()` decrypts every object the backend
holds (HEAD, snapshots, trees, indexes, and each blob cut out of its pack by the indexes),
so a planted secret cannot hide anywhere in the store.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from campaign.harness import Store

from roam_core import crypto
from roam_core.manager import get_manager
from roam_core.storage import GuardedBackend
from roam_core.store import codec
from roam_core.store.manifest import Manifest
from roam_core.store.objects import HEAD_REF, STORE_FORMATS, Snapshot
from roam_core.store.repository import Repository
from roam_core.store.rotation import TOMBSTONE_PREFIX
from roam_core.types import PluginContext

KINDS = {"snapshots/": crypto.KIND_SNAPSHOT, "trees/": crypto.KIND_TREE,
         "index/": crypto.KIND_INDEX, "voids/": crypto.KIND_VOID,
         "forgets/": crypto.KIND_FORGET, "marks/": crypto.KIND_MARK}


@contextlib.contextmanager
def open_repository(store: Store, scratch: Path, cache: bool = False) -> Iterator[Repository]:
    """The store opened like a device would, outside any home (a scratch state folder)."""
    scratch.mkdir(parents=True, exist_ok=True)
    plugin = get_manager().backend(str(store.settings["backend"]))
    context = PluginContext(home=scratch, state_dir=scratch / "roam",
                            secret=lambda name: store.secrets.get(name))
    backend = GuardedBackend(plugin.factory(store.settings, context), plugin.name)
    keys = crypto.Keys.derive(crypto.parse_key(store.key))
    try:
        yield Repository(backend, keys, scratch / "cache" if cache else None)
    finally:
        backend.close()


def generations(repo: Repository, *,
                with_forgotten: bool = False) -> dict[int, tuple[str, Snapshot]]:
    """Every generation reachable from HEAD: number → (snapshot id, snapshot).

    A forgotten generation is stepped over through its record, as `roam history` does (its
    snapshot may already be pruned), unless `with_forgotten` (its snapshot still stored).
    """
    from roam_core.store.forgets import forgotten

    head = repo.read_head()
    found: dict[int, tuple[str, Snapshot]] = {}
    snapshot_id = None if head is None else head.snapshot
    dropped = {} if with_forgotten else forgotten(repo)
    while snapshot_id is not None:
        gone = dropped.get(snapshot_id)
        if gone is not None:
            snapshot_id = gone.parent
            continue
        snapshot = repo.load_snapshot(snapshot_id)
        found[snapshot.generation] = (snapshot_id, snapshot)
        snapshot_id = snapshot.parent
    return found


def manifest_of(repo: Repository, snapshot: Snapshot) -> Manifest:
    return repo.load_manifest(snapshot.root)


def plaintexts(repo: Repository) -> Iterator[tuple[str, bytes]]:
    """(key, plaintext) for every object of the store; a pack yields each of its blobs.

    Raises AssertionError when a pack holds bytes no index accounts for: those could not be
    decrypted here, and a store written without crashes has none.
    """
    backend = repo.backend
    found = backend.read_ref(HEAD_REF)
    if found is not None:
        yield "HEAD", crypto.open_sealed(repo.keys.head, crypto.KIND_HEAD, HEAD_REF, found[0],
                                         "HEAD", STORE_FORMATS)
    # pack key → (id, offset, length, kind): data packs hold blobs, tree packs trees
    packs: dict[str, list[tuple[str, int, int, bytes]]] = {}
    keys = sorted(backend.list(""))
    for key in keys:
        for prefix, kind in KINDS.items():
            if key.startswith(prefix):
                object_id = key.rpartition("/")[2]
                sealed = backend.get(key)
                plain = codec.decode(crypto.open_sealed(repo.keys.encryption, kind, object_id,
                                                        sealed, key), key)
                yield key, plain
                if kind == crypto.KIND_INDEX:
                    blobs, trees = repo.load_index_entries(object_id)
                    for refs, held in ((blobs, crypto.KIND_BLOB), (trees, crypto.KIND_TREE)):
                        for item_id, pack, offset, length in refs:
                            packs.setdefault(pack, []).append((item_id, offset, length, held))
    for key in keys:
        if key.startswith(TOMBSTONE_PREFIX):
            continue  # sealed under a key the fleet rotated away from: when and who, no more
        if not key.startswith("packs/"):
            if not any(key.startswith(prefix) for prefix in KINDS):
                raise AssertionError(f"the store holds an object roam does not write: {key}")
            continue
        data = backend.get(key)
        covered = 0
        for item_id, offset, length, held in sorted(packs.get(key, []),
                                                    key=lambda ref: ref[1]):
            assert offset == covered, f"{key}: bytes {covered}..{offset} are in no index"
            sealed = data[offset:offset + length]
            yield f"{key}@{offset}", codec.decode(crypto.open_sealed(
                repo.keys.encryption, held, item_id, sealed, key), key)
            covered = offset + length
        assert covered == len(data), f"{key}: bytes {covered}..{len(data)} are in no index"

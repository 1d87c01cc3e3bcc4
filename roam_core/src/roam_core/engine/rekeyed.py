"""A device catching up with a key rotation: its merge base re-pointed at the re-sealed blobs.

A rotation keeps every generation's number and content but renames every blob (names are a
keyed hash), so the base manifest in the state still names blobs the store no longer
holds. The first push or pull under a new key finds the generation this device is on in the
rotated store (same number, on HEAD's chain), and takes each base entry's blob references
from it, matched by path and content. The floor needs nothing: it is keyed by the store id,
which a rotation keeps. `keyprint.json` remembers which key the state was last used with, so
this costs nothing when the key did not change.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from roam_core import crypto
from roam_core.engine.remote import RemoteView
from roam_core.engine.session import Session
from roam_core.engine.state import LocalState, save_state
from roam_core.errors import IntegrityError
from roam_core.fs import ensure_private_dir, write_atomic
from roam_core.store.manifest import BlobRef, FileEntry, Manifest
from roam_core.store.objects import snapshot_key
from roam_core.store.repository import Repository

KEYPRINT_FILE = "keyprint.json"


def note_key(state_dir: Path, store: str, keys: crypto.Keys) -> None:
    """Record that this device's state matches `store` under `keys`."""
    ensure_private_dir(state_dir)
    write_atomic(state_dir / KEYPRINT_FILE,
                 json.dumps({"v": 1, "store": store, "key": keys.fingerprint}).encode())


def _noted(state_dir: Path) -> tuple[str, str] | None:
    try:
        data = json.loads((state_dir / KEYPRINT_FILE).read_text(encoding="utf-8"))
        return str(data["store"]), str(data["key"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def adopt(session: Session, state: LocalState, view: RemoteView) -> bool:
    """Re-point the base at the current key's blobs when the key changed; True if it did.

    Called by push and pull (which hold the home's lock) once HEAD has been verified.
    """
    keys = session.keys
    noted = _noted(session.state_dir)
    if noted == (state.store, keys.fingerprint):
        return False
    if state.generation is None or state.snapshot is None or not state.base:
        note_key(session.state_dir, state.store, keys)
        return False
    # a home from before key rotation (or re-joined): one probe says whether its snapshot
    # is still there under the name it knows
    if (noted is None or noted[0] != state.store) \
            and session.backend.exists(snapshot_key(state.snapshot)):
        note_key(session.state_dir, state.store, keys)
        return False
    rebase(state, session.repo, view)
    save_state(session.state_dir, state)
    note_key(session.state_dir, state.store, keys)
    return True


def rebase(state: LocalState, repo: Repository, view: RemoteView) -> None:
    """Point `state`'s base and snapshot at what `repo`'s key names (in memory)."""
    if state.generation is None or not state.base:
        return
    found = snapshot_at(repo, view, state.generation)
    if found is not None:
        snapshot_id, manifest = found
        state.set_base(rebased(state.base_manifest(), manifest))
        state.snapshot = snapshot_id
    else:
        state.set_base({})  # nothing to match against: the next pull compares as a first one


def snapshot_at(repo: Repository, view: RemoteView, generation: int
                ) -> tuple[str, Manifest] | None:
    """The id and manifest of `generation` on HEAD's chain (None: not on it)."""
    snapshot_id, snapshot = view.head.snapshot, view.snapshot
    while snapshot.generation > generation and snapshot.parent:
        snapshot_id = snapshot.parent
        try:
            snapshot = repo.load_snapshot(snapshot_id)
        except IntegrityError:
            return None
    if snapshot.generation != generation:
        return None
    return snapshot_id, repo.load_manifest(snapshot.root)


def rebased(base: Manifest, rotated: Manifest) -> Manifest:
    """`base` with each entry's blobs taken from `rotated` (same path and content first).

    An entry whose content the rotated generation does not hold is left out: a push sends
    it again, a pull treats it as new on both sides, neither reads a blob that is gone.
    """
    by_content = {(entry.sha256, entry.size): entry for entry in rotated.values()}
    found: Manifest = {}
    for path, entry in base.items():
        same = rotated.get(path)
        if same is None or same.sha256 != entry.sha256 or same.size != entry.size:
            same = by_content.get((entry.sha256, entry.size))
        if same is not None:
            found[path] = FileEntry(path, entry.size, entry.mode, entry.sha256, entry.scope,
                                    same.blobs)
    return found


def remapped(base: Manifest, moved: Callable[[str], BlobRef | None]) -> Manifest:
    """`base` with each blob ref replaced by `moved(old id)` (the rotation's own map).

    An entry with a blob `moved` does not know is left out, as `rebased` leaves one out.
    `base` is emptied as it is read: each old entry goes as its new one comes.
    """
    found: Manifest = {}
    for path in list(base):
        entry = base.pop(path)
        blobs = tuple(moved(ref[0]) for ref in entry.blobs)
        if all(blobs):
            found[path] = FileEntry(path, entry.size, entry.mode, entry.sha256, entry.scope,
                                    blobs)  # type: ignore[arg-type]
    return found

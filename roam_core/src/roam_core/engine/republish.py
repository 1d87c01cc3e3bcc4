"""Re-publishing a lost, damaged or replayed HEAD from the newest authentic snapshot.

HEAD is the one mutable object; the snapshots it points to are immutable and sealed with the
fleet's key. When HEAD is gone, fails to open, or was replaced by an older one, and the
snapshots are intact, the newest snapshot that authenticates names the generation to
publish again, with the store id this device recorded when it joined. Never below the
floor this device holds: what it verified once is never given up.
"""

from __future__ import annotations

from roam_core.engine.session import Session
from roam_core.engine.state import RECOVERY_DOC, LocalState, load_floor
from roam_core.errors import ArchiveKeyError, ConflictError, IntegrityError, RefConflict, UserError
from roam_core.store.objects import HEAD_REF, Head, Snapshot
from roam_core.store.repository import Repository


def publish_staged(repo: Repository, what: str) -> None:
    """Make the objects `what` (repair, forget) wrote durable and visible to every device.

    A batched backend (git) sends objects with the next ref swap only: HEAD is sealed again,
    unchanged in what it says, so the objects travel; a device that pushed meanwhile wins
    the swap, and the objects stay staged for the next try.
    """
    repo.backend.flush()
    if not repo.backend.capabilities.batched_publish:
        return
    for _attempt in range(3):
        head = repo.read_head()
        if head is None:
            return
        try:
            repo.write_head(head, head.version)
            return
        except RefConflict:
            continue
    raise ConflictError(f"the remote head kept moving during the {what}; run it again")


def head_needs_repair(repo: Repository, state: LocalState, floor: int) -> bool:
    """Whether HEAD is missing, unreadable, or below `floor` (for this device's store)."""
    try:
        head = repo.read_head()
    except (ArchiveKeyError, IntegrityError):
        return True
    return head is None or (head.store == state.store and head.generation < floor)


def newest_snapshot(repo: Repository) -> tuple[str, Snapshot] | None:
    """The authentic snapshot with the highest generation (None: none opens with this key)."""
    best: tuple[str, Snapshot] | None = None
    for key in sorted(repo.backend.list("snapshots/")):
        snapshot_id = key.rpartition("/")[2]
        try:
            snapshot = repo.load_snapshot(snapshot_id)
        except IntegrityError:
            continue  # damaged, foreign or missing: only authentic snapshots count
        if best is None or snapshot.generation > best[1].generation:
            best = (snapshot_id, snapshot)
    return best


def republish_head(session: Session, repo: Repository, state: LocalState) -> int | None:
    """Publish HEAD again when it needs it; return the generation published (None: fine).

    `repo` is opened without the object cache: only snapshots the backend holds now count.
    """
    floor = load_floor(session.state_dir, state.store, session.backend.identity(), state)
    if not head_needs_repair(repo, state, floor):
        return None
    found = newest_snapshot(repo)
    if found is None:
        raise UserError("HEAD cannot be re-published: no snapshot in the store opens with "
                        "this archive key (check ROAM_ARCHIVE_KEY, or the backend settings)")
    snapshot_id, snapshot = found
    if snapshot.generation < floor:
        raise UserError(
            f"HEAD cannot be re-published: the newest snapshot in the store is generation "
            f"{snapshot.generation}, below generation {floor} that this device verified; a "
            f"device that has generation {floor} can push it again (see {RECOVERY_DOC})")
    raw = session.backend.read_ref(HEAD_REF)
    # HEAD cannot say (it is why it is re-published): trees in packs mean format 2
    repo.format = repo.detect_format()
    head = Head(snapshot.generation, snapshot_id, state.store, snapshot.device,
                snapshot.created)
    try:
        repo.write_head(head, None if raw is None else raw[1])
    except RefConflict:
        raise UserError("HEAD changed while it was being re-published; run roam check "
                        "--repair again") from None
    return snapshot.generation

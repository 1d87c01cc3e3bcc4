"""Publishing this device's generation again when its trees or snapshot are damaged.

Trees and snapshots are create-once, named by their content: a damaged one can never be
replaced in place, and writing the same content again gives the same name. When the
generation HEAD names no longer reads back (a tree or its snapshot damaged, or lost with no
copy to put back) and this device holds exactly that generation, `roam check --repair`
publishes the same files as the next generation: every tree written fresh with a note that
gives it a new name, a new snapshot whose parent is the damaged generation, HEAD swapped by
compare-and-swap. Older generations that used the damaged objects stay as they are; the
check after the repair names them with the folders they can no longer read.
"""

from __future__ import annotations

from roam_core import __version__
from roam_core.engine import roster as roster_module
from roam_core.engine.push import now_iso
from roam_core.engine.session import Session, hermes_version
from roam_core.engine.state import LocalState, raise_floor, save_state
from roam_core.errors import IntegrityError, RefConflict, UserError
from roam_core.store.objects import Head, Snapshot
from roam_core.store.repository import Repository


def _head_reads(repo: Repository, head: Head) -> Snapshot | None:
    """HEAD's snapshot when it and every tree below it read back (None: they do not)."""
    try:
        snapshot = repo.load_snapshot(head.snapshot)
        repo.load_manifest(snapshot.root)
    except IntegrityError:
        return None
    return snapshot


def republish_generation(session: Session, repo: Repository, state: LocalState) -> int | None:
    """Publish this device's generation again when HEAD's no longer reads; its number.

    `repo` is opened without the object cache (only what the backend holds counts). None
    when HEAD's generation reads back, or when this device does not hold exactly it (then
    a device that does can run the repair).
    """
    head = repo.read_head()
    if head is None or head.store != state.store or head.generation != state.generation \
            or head.snapshot != state.snapshot or not state.base:
        return None
    if _head_reads(repo, head) is not None:
        return None
    try:
        roster = repo.load_snapshot(head.snapshot).roster
    except IntegrityError:
        roster = {}  # the damaged snapshot's roster is gone: devices add their rows again
    manifest = state.base_manifest()
    generation = head.generation + 1
    root = repo.write_manifest(manifest, note=f"written again by roam check --repair at "
                               f"generation {generation}")
    created = now_iso()
    roster = roster_module.with_row(roster, state.id, state.device, {
        "last_push": generation, "last_pull": state.last_pull, "roam_version": __version__,
        "hermes_version": hermes_version(), "time": created})
    snapshot = Snapshot(generation, head.snapshot, state.device, created, root, __version__,
                        hermes_version(), roster, len(manifest),
                        sum(entry.size for entry in manifest.values()), device_id=state.id)
    snapshot_id = repo.write_snapshot(snapshot)
    try:
        repo.write_head(Head(generation, snapshot_id, head.store, state.device, created),
                        head.version)
    except RefConflict:
        raise UserError("HEAD changed while the repair published generation "
                        f"{generation}; run roam check --repair again") from None
    raise_floor(session.state_dir, head.store, session.backend.identity(), generation)
    state.generation = state.last_push = generation
    state.snapshot = snapshot_id
    save_state(session.state_dir, state)
    return generation

"""Reading the remote side safely: HEAD against the floor and the store id, snapshots, manifests."""

from __future__ import annotations

import functools

from roam_core.engine.session import Session
from roam_core.engine.state import RECOVERY_DOC, Floors, LocalState, read_floors
from roam_core.errors import ConflictError, IntegrityError, UserError
from roam_core.store.manifest import Manifest
from roam_core.store.objects import Head, Snapshot
from roam_core.store.repository import Repository


class RemoteView:
    """The verified remote generation; its manifest is read on first use."""

    def __init__(self, head: Head, snapshot: Snapshot, repo: Repository) -> None:
        self.head = head
        self.snapshot = snapshot
        self._repo = repo

    @functools.cached_property
    def manifest(self) -> Manifest:
        return self._repo.load_manifest(self.snapshot.root)

    def read_trees(self) -> Manifest:
        """Read this generation's trees now (once); reading each records it as present.

        A push that compares against its base instead still needs them known as present,
        so that folders that did not change are not written to the store again.
        """
        return self.manifest

    def remember_trees(self) -> None:
        """Tell the cache which trees this generation holds (see `Repository.remember_trees`)."""
        self._repo.remember_trees(self.head.snapshot, self.snapshot.root)


def read_verified_head(session: Session, state: LocalState | None) -> Head | None:
    """HEAD, authenticated, of this fleet's store, and not below this device's rollback floor.

    `state` must have been read before this call, as the floors are here: see `Floors`.
    """
    floors = read_floors(session.state_dir)
    head = session.repo.read_head()
    if head is None:
        if state is not None and state.store:
            raise IntegrityError(
                f"the store at {session.backend.identity()} has no HEAD: it was lost or "
                "emptied, or the backend settings point somewhere else (check roam config "
                "get); with its snapshots intact, roam check --repair re-publishes it (see "
                f"{RECOVERY_DOC})")
        return None
    if state is not None and state.store and head.store != state.store:
        raise IntegrityError(
            f"the store's HEAD belongs to another fleet ({head.store[:12]}, expected "
            f"{state.store[:12]}); check the backend settings"
        )
    refuse_rollback(session, head, state, floors)
    return head


def refuse_rollback(session: Session, head: Head, state: LocalState | None,
                    floors: Floors | None = None) -> None:
    """Raise when `head` is below the floor this device holds for its store, however reached.

    `floors` read before `head` (see `Floors`); None reads them now, which only a caller
    holding the home's lock may do (no other process of the home can raise them meanwhile).
    """
    floors = read_floors(session.state_dir) if floors is None else floors
    floor = floors.of(head.store, session.backend.identity(), state)
    if head.generation < floor:
        raise IntegrityError(
            f"rollback refused: the store's HEAD is generation {head.generation}, below "
            f"generation {floor} that this device already verified; roam check --repair "
            f"re-publishes the newest generation the store holds (see {RECOVERY_DOC})"
        )


def load_remote(session: Session, state: LocalState | None) -> RemoteView | None:
    head = read_verified_head(session, state)
    if head is None:
        return None
    snapshot = session.repo.load_snapshot(head.snapshot)
    if snapshot.generation != head.generation:
        raise IntegrityError(f"integrity error: snapshot {head.snapshot} is not generation "
                             f"{head.generation}")
    return RemoteView(head, snapshot, session.repo)


def require_remote(session: Session, state: LocalState) -> RemoteView:
    view = load_remote(session, state)
    if view is None:
        raise UserError("the store has no HEAD; run roam init --create-remote on one device")
    return view


def behind_error() -> ConflictError:
    return ConflictError("the remote head moved ahead — run roam pull first")

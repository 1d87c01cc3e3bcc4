"""`roam init`: validate settings and key, reach the backend, found or join a fleet."""

from __future__ import annotations

import secrets as random_tokens
from dataclasses import dataclass

from roam_core import __version__
from roam_core.engine.check import lost_head_error
from roam_core.engine.push import now_iso
from roam_core.engine.remote import refuse_rollback
from roam_core.engine.session import Session, hermes_version
from roam_core.engine.state import LocalState, raise_floor, save_state
from roam_core.errors import RefConflict, UserError
from roam_core.store.objects import Head, Snapshot


@dataclass
class InitResult:
    founded: bool
    generation: int
    identity: str
    device: str
    rejoined: bool = False


def init(session: Session, *, create_remote: bool = False) -> InitResult:
    """Found the fleet (generation 0) on an empty store, or join the existing one."""
    keys = session.keys  # a malformed key fails here, before any network call
    del keys
    backend = session.backend
    if create_remote:
        backend.create_remote()
    backend.ping()
    identity = backend.identity()
    previous = session.state()
    head = session.repo.read_head()  # a key that cannot open HEAD is refused here
    founded = False
    if head is None:
        refused = lost_head_error(session)
        if refused is not None:
            raise refused
        head = _found(session)
        founded = True
    else:
        # joining below a floor this device holds for this store would install a replay
        refuse_rollback(session, head, previous)
    if previous is not None and previous.store == head.store and previous.identity == identity:
        raise_floor(session.state_dir, head.store, identity, previous.generation or 0)
        return InitResult(False, head.generation, identity, previous.device, rejoined=True)
    state = LocalState(device=session.device, store=head.store, identity=identity)
    if founded:
        state.generation = head.generation
        state.snapshot = head.snapshot
    save_state(session.state_dir, state)
    raise_floor(session.state_dir, head.store, identity, head.generation if founded else 0)
    return InitResult(founded, head.generation, identity, state.device)


def _found(session: Session) -> Head:
    repo = session.repo
    root = repo.write_manifest({})
    created = now_iso()
    roster = {session.device: {"last_push": 0, "last_pull": None, "roam_version": __version__,
                               "hermes_version": hermes_version(), "time": created}}
    snapshot = Snapshot(0, None, session.device, created, root, __version__, hermes_version(),
                        roster)
    snapshot_id = repo.write_snapshot(snapshot)
    head = Head(0, snapshot_id, random_tokens.token_hex(16), session.device, created)
    try:
        version = repo.write_head(head, None)
    except RefConflict:
        raise UserError("another device created the store at the same moment; run roam init "
                        "again to join it") from None
    return Head(head.generation, head.snapshot, head.store, head.device, head.time, version)

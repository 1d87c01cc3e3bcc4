"""`roam init`: validate settings and key, reach the backend, found or join a fleet."""

from __future__ import annotations

import secrets as random_tokens
from dataclasses import dataclass

from roam_core import __version__
from roam_core.engine import roster as roster_module
from roam_core.engine.check import lost_head_error
from roam_core.engine.filemodes import keeps_modes
from roam_core.engine.push import now_iso
from roam_core.engine.rekeyed import note_key
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
    device_id: str = ""


def init(session: Session, *, create_remote: bool = False, name: str | None = None,
         store_format: int | None = None) -> InitResult:
    """Found the fleet (generation 0) on an empty store, or join the existing one.

    The device gets a random id; its name (`name`, else the device_name setting, else the
    host name) must be free in the roster: a taken name given explicitly is refused, a taken
    host name gets a short suffix.
    """
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
    device_id = roster_module.new_device_id()
    explicit = bool(name or session.core.device_name)
    wanted = name or session.default_name
    if head is None:
        refused = lost_head_error(session)
        if refused is not None:
            raise refused
        device = roster_module.choose_name({}, device_id, wanted, explicit=explicit)
        if store_format is not None:  # founding only: a joined store keeps its own
            session.repo.format = store_format
        head = _found(session, device_id, device)
        founded = True
    else:
        # joining below a floor this device holds for this store would install a replay
        refuse_rollback(session, head, previous)
        if previous is not None and previous.store == head.store \
                and previous.identity == identity:
            raise_floor(session.state_dir, head.store, identity, previous.generation or 0)
            return InitResult(False, head.generation, identity, previous.device, rejoined=True)
        roster = session.repo.load_snapshot(head.snapshot).roster
        device = roster_module.choose_name(roster, device_id, wanted, explicit=explicit)
    state = LocalState(device=device, store=head.store, identity=identity, device_id=device_id)
    if founded:
        state.generation = head.generation
        state.snapshot = head.snapshot
    save_state(session.state_dir, state)
    note_key(session.state_dir, head.store, session.keys)
    raise_floor(session.state_dir, head.store, identity, head.generation if founded else 0)
    keeps_modes(session.state_dir)  # probed here, so no later verb writes it on its way
    return InitResult(founded, head.generation, identity, state.device, device_id=device_id)


def _found(session: Session, device_id: str, device: str) -> Head:
    repo = session.repo
    root = repo.write_manifest({})
    created = now_iso()
    roster = {device_id: {"name": device, "last_push": 0, "last_pull": None,
                          "roam_version": __version__, "hermes_version": hermes_version(),
                          "time": created}}
    snapshot = Snapshot(0, None, device, created, root, __version__, hermes_version(),
                        roster, device_id=device_id)
    snapshot_id = repo.write_snapshot(snapshot)
    repo.remember_trees(snapshot_id, root)  # the first push need not read them back
    head = Head(0, snapshot_id, random_tokens.token_hex(16), device, created)
    try:
        version = repo.write_head(head, None)
    except RefConflict:
        raise UserError("another device created the store at the same moment; run roam init "
                        "again to join it") from None
    return Head(head.generation, head.snapshot, head.store, head.device, head.time, version)

"""`roam devices rename|forget`: change the roster in a generation of its own.

A roster change publishes a generation whose files are the remote's, unchanged (same root
tree), so it costs one snapshot and one HEAD swap; like a push, it needs this device to be in
step with the remote (exit 2 otherwise).
"""

from __future__ import annotations

from roam_core import __version__
from roam_core.engine import remote as remote_module
from roam_core.engine import roster as roster_module
from roam_core.engine.push import now_iso
from roam_core.engine.session import Session, hermes_version
from roam_core.engine.state import LocalState, raise_floor, save_state
from roam_core.errors import ConflictError, RefConflict, UserError
from roam_core.store.objects import Head, Snapshot


def rename(session: Session, new_name: str) -> tuple[str, str]:
    """Give this device a new name (free in the roster); returns (old, new)."""
    state = session.require_state()
    name = roster_module.check_name(new_name)
    old = state.device
    view = _in_step(session, state)
    other = roster_module.holder(view.snapshot.roster, name, state.id)
    if other is not None:
        raise roster_module.taken(name, other, "choose another name")
    row = {key: value for key, value in (view.snapshot.roster.get(state.id) or {}).items()
           if key != "name"}
    roster = roster_module.with_row(view.snapshot.roster, state.id, name, {
        **row, "roam_version": __version__, "hermes_version": hermes_version(),
        "time": now_iso()})
    state.device = name
    _publish(session, state, view, roster)
    return old, name


def forget(session: Session, word: str) -> str:
    """Drop another device's row (by name or id); returns its name. Its files stay."""
    state = session.require_state()
    view = _in_step(session, state)
    device_id = roster_module.find(view.snapshot.roster, word)
    if device_id == state.id:
        raise UserError("this is the device you are on; forget it from another device")
    name = roster_module.name_of(view.snapshot.roster, device_id)
    roster = {key: dict(row) for key, row in view.snapshot.roster.items() if key != device_id}
    _publish(session, state, view, roster)
    return name


def _in_step(session: Session, state: LocalState) -> remote_module.RemoteView:
    view = remote_module.require_remote(session, state)
    if view.head.generation != state.generation:
        raise remote_module.behind_error()
    return view


def _publish(session: Session, state: LocalState, view: remote_module.RemoteView,
             roster: roster_module.Roster) -> None:
    old = view.snapshot
    generation = view.head.generation + 1
    created = now_iso()
    snapshot = Snapshot(generation, view.head.snapshot, state.device, created, old.root,
                        __version__, hermes_version(), roster, old.files, old.bytes,
                        device_id=state.id)
    snapshot_id = session.repo.write_snapshot(snapshot)
    head = Head(generation, snapshot_id, view.head.store, state.device, created)
    try:
        session.repo.write_head(head, view.head.version)
    except RefConflict:
        raise ConflictError("the remote head moved ahead — run roam pull first") from None
    raise_floor(session.state_dir, head.store, session.backend.identity(), generation)
    state.generation = generation
    state.snapshot = snapshot_id
    save_state(session.state_dir, state)
    session.repo.remember_trees(snapshot_id, old.root)

"""History and restore: every generation the store holds, and any file version in them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from roam_core.engine import remote as remote_module
from roam_core.engine.backups import unpushed_paths
from roam_core.engine.filemodes import home_files
from roam_core.engine.journal import Install, Op
from roam_core.engine.plan import _raw_sha
from roam_core.engine.scan import StatCache, fill_digests, install_mode
from roam_core.engine.session import Session
from roam_core.engine.tiers import restore_op
from roam_core.errors import IntegrityError, UserError
from roam_core.store.forgets import forgotten
from roam_core.store.manifest import FileEntry, check_path, synced_mode
from roam_core.store.objects import Snapshot
from roam_core.tiers.cron import Landed, is_jobs_file, profile_of, resume_command
from roam_core.types import Scope


@dataclass
class Generation:
    number: int
    snapshot_id: str
    snapshot: Snapshot


def generations(session: Session) -> Iterator[Generation]:
    """Newest first, following parents from HEAD; stops at the first object that fails.

    Forgotten generations (`roam forget`) are stepped over, not yielded.
    """
    state = session.state()
    head = remote_module.read_verified_head(session, state)
    if head is None:
        return
    snapshot_id: str | None = head.snapshot
    expected = head.generation
    dropped = forgotten(session.repo)
    while snapshot_id is not None:
        gone = dropped.get(snapshot_id)
        if gone is not None:  # stepped over through its record: its snapshot may be pruned
            if gone.generation != expected:
                raise IntegrityError(f"integrity error: snapshot {snapshot_id} is out of order")
            snapshot_id = gone.parent
            expected -= 1
            continue
        snapshot = session.repo.load_snapshot(snapshot_id)
        if snapshot.generation != expected:
            raise IntegrityError(f"integrity error: snapshot {snapshot_id} is out of order")
        yield Generation(snapshot.generation, snapshot_id, snapshot)
        snapshot_id = snapshot.parent
        expected -= 1


def generation_list(session: Session) -> list[dict[str, Any]]:
    rows = []
    for gen in generations(session):
        rows.append({"generation": gen.number, "device": gen.snapshot.device,
                     "date": gen.snapshot.created, "files": gen.snapshot.files,
                     "bytes": gen.snapshot.bytes, "snapshot": gen.snapshot_id})
    return rows


def path_history(session: Session, path: str) -> list[dict[str, Any]]:
    """One row per generation in which `path` changed (added, edited or deleted), newest first."""
    check_path(path, "the path given")
    chain = list(generations(session))
    rows: list[dict[str, Any]] = []
    # only the trees on the path, level by level, every generation's at once
    entries = session.repo.entries_at([gen.snapshot.root for gen in chain], path)
    for index, gen in enumerate(chain):
        entry = entries[index]
        older = entries[index + 1] if index + 1 < len(entries) else None
        if entry is None and older is None:
            continue
        if entry is not None and entry.same_content(older):
            continue
        rows.append({"generation": gen.number, "device": gen.snapshot.device,
                     "date": gen.snapshot.created,
                     "sha256": None if entry is None else entry.sha256,
                     "size": None if entry is None else entry.size,
                     "deleted": entry is None})
    return rows


def _config_op(session: Session, accepted: str | None, entry: FileEntry, local: Any,
               expect: list[int] | None) -> Op:
    """A config comes back as a merge: the old shared keys, this host's own keys kept."""
    import hashlib

    from roam_core.config import merge_config

    old = session.repo.read_content(entry).decode("utf-8")
    text = None if local is None else local.path.read_text(encoding="utf-8")
    merged = merge_config(text, accepted, old, overwrite_conflicts=True,
                          host_keys=session.scope.host_keys)
    data = merged.text.encode("utf-8")
    return Op(entry.path, "write", hashlib.sha256(data).hexdigest(),
              entry.mode if local is None else local.mode, expect, _raw_sha(local),
              source=lambda: iter((data,)))


def entry_at(session: Session, generation: int, path: str) -> FileEntry | None:
    """`path`'s entry in `generation` (reading only the trees on the path), or None."""
    for gen in generations(session):
        if gen.number == generation:
            return session.repo.entry_at(gen.snapshot.root, path)
    for gone in forgotten(session.repo).values():
        if gone.generation == generation:
            raise UserError(f"{gone.describe()}; roam history lists the generations kept")
    raise UserError(f"the store has no generation {generation}")


def restore(session: Session, path: str, generation: int, *, apply: bool) -> dict[str, Any]:
    """Bring back `path` as it was in `generation`, through the journal; a local change after."""
    check_path(path, "the path given")
    scope = session.scope
    if scope.classify(path) is not Scope.SHARED:
        raise UserError(f"{path} is not shared on this device ({scope.classify(path).value}); "
                        "roam restores only shared paths")
    state = session.require_state()
    entry = entry_at(session, generation, path)
    if entry is None:
        raise UserError(f"{path} does not exist in generation {generation}")
    files = home_files(session, state)
    local = files.get(path)
    if local is not None:
        fill_digests({path: local}, StatCache(session.state_dir / "cache"))
    if local is not None and local.sha256 == entry.sha256 \
            and synced_mode(local.mode) == synced_mode(entry.mode):
        return {"path": path, "generation": generation, "action": "unchanged", "applied": False}
    action = "replace" if local is not None else "create"
    landed: list[Landed] = []
    if apply:
        expect = None if local is None else local.signature
        if scope.is_config(path):
            op = _config_op(session, state.projections.get(path), entry, local, expect)
        elif is_jobs_file(path):  # old definitions come back paused, like a pull's
            cron_op, landed = restore_op(session, entry, local, expect)
            if cron_op is None:
                return {"path": path, "generation": generation, "action": "unchanged",
                        "applied": False}
            op = cron_op
        else:
            op = Op(path, "write", entry.sha256, install_mode(entry.mode, local), expect,
                    _raw_sha(local),
                    source=session.repo.content_source(entry))
        unpushed = unpushed_paths([op], state.base, (), True)
        Install(session.root, session.state_dir, [op], unpushed=unpushed).run(state)
    result: dict[str, Any] = {"path": path, "generation": generation, "action": action,
                              "applied": apply, "size": entry.size, "sha256": entry.sha256}
    if landed:
        profile = profile_of(path)
        result["cron_paused"] = [{"id": job.job_id, "name": job.name, "change": job.change,
                                  "resume": resume_command(profile, job.job_id)}
                                 for job in landed]
    return result

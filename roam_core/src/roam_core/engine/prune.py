"""`roam prune`: delete what no kept generation needs, safely beside concurrent pushes.

Mark and sweep, under the store's lease (engine/lease.py). Each run finds the garbage: packs
none of whose blobs a kept generation references (and their indexes), trees and snapshots
no kept generation reaches (forgotten ones, and those of pushes that never published), and
mark records no longer pending. Garbage not yet marked is marked (a mark record named in
LEASE, which every push reads and honours). Garbage marked at least the grace period ago,
and still garbage now, is deleted: indexes first (so no push counts on a pack about to go),
then packs, trees, snapshots. A crash anywhere leaves marks and garbage that the next run
finds again; nothing a kept generation needs is ever in a mark that comes due. The argument
is in docs/decisions.md ("Prune and concurrent pushes").

Packs that are mostly garbage are repacked first (engine/repack.py): their live content is
copied into new packs, and the old ones are then deletable like dead ones, on the same marks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from roam_core.engine import lease as lease_module
from roam_core.engine import remote as remote_module
from roam_core.engine.history import generations
from roam_core.engine.journal import kill_point
from roam_core.engine.progress import ProgressSink
from roam_core.engine.repack import THRESHOLD_PERCENT, PackSurvey, repack, select, survey_packs
from roam_core.engine.session import Session
from roam_core.errors import UserError
from roam_core.store.objects import mark_key
from roam_core.store.repository import Repository
from roam_core.store.tree_walk import walk_trees

#: Keys per delete call: one S3 batch, and a bounded step between lease renewals.
BATCH = 1000
#: Deletion order: nothing is deleted while something still names it as present.
ORDER = ("index/", "packs/", "trees/", "snapshots/", "marks/")


@dataclass
class PruneResult:
    """What a prune found, marked and deleted; `as_json` is `roam prune --json`."""

    applied: bool
    grace_minutes: float
    kept_generations: int = 0
    garbage: dict[str, int] = field(default_factory=dict)
    garbage_bytes: int = 0
    #: packs repacked (their live content copied into new packs) by this run
    repacked: int = 0
    #: bytes of the packs repacked, and of the new packs written for them
    repacked_bytes: int = 0
    repack_written_bytes: int = 0
    #: packs worth repacking left for a later run (`--max-repack-size`, or unreadable)
    repack_left: int = 0
    repack_threshold: float = THRESHOLD_PERCENT
    marked: int = 0
    deleted: dict[str, int] = field(default_factory=dict)
    deleted_bytes: int = 0
    waiting: int = 0
    waiting_until: float | None = None
    #: each dead pack's bytes (not printed): what deleting it frees
    pack_bytes: dict[str, int] = field(default_factory=dict, repr=False)

    def as_json(self) -> dict[str, Any]:
        found = asdict(self)
        del found["pack_bytes"]
        return found


@dataclass
class Reach:
    """What the kept generations need: snapshots, trees, blobs, and the packs they name."""

    snapshots: set[str] = field(default_factory=set)
    trees: set[str] = field(default_factory=set)
    blobs: set[str] = field(default_factory=set)
    packs: set[str] = field(default_factory=set)
    #: pack → the blobs kept trees name there (a repacked pack's blobs are read elsewhere)
    named: dict[str, set[str]] = field(default_factory=dict)


def _kind(key: str) -> str:
    return key.partition("/")[0]


def reach(session: Session) -> Reach:
    """Everything the kept (not forgotten) generations from HEAD reach, trees read once each."""
    found = Reach()
    roots: list[str] = []
    for gen in generations(session):
        found.snapshots.add(gen.snapshot_id)
        roots.append(gen.snapshot.root)
    repo = session.repo

    def visit(_tree_id: str, entries: dict[str, Any]) -> list[str]:
        below: list[str] = []
        for node in entries.values():
            if node.get("t") == "d":
                below.append(str(node["tree"]))
            else:
                for ref in node.get("blobs", ()):
                    # one str per blob id, shared by the sets (the parsed tree goes)
                    blob, pack = str(ref[0]), str(ref[1])
                    found.blobs.add(blob)
                    found.packs.add(pack)
                    found.named.setdefault(pack, set()).add(blob)
        return below

    # a bounded batch of parsed trees at a time (`walk_trees`), not a whole level
    found.trees = walk_trees(repo, roots, visit)
    # format 2: the tree packs that hold a reached tree are needed as much as its blobs' packs
    places = repo.tree_places()
    found.packs.update(str(ref[1]) for tree_id in found.trees for ref in places.get(tree_id, ()))
    return found


def survey(repo: Repository, needed: Reach, threshold: float) -> PackSurvey:
    """The packs and indexes deletable now, and the packs worth repacking first."""
    places = repo.tree_places()
    tree_named = {str(ref[1]) for tree_id in needed.trees for ref in places.get(tree_id, ())}
    return survey_packs(repo, needed.blobs, needed.trees, needed.named, tree_named, threshold)


def garbage(repo: Repository, needed: Reach, pending: Iterable[str], packs: PackSurvey
            ) -> set[str]:
    """Every deletable key now: packs and indexes by `packs`, unreached trees, snapshots."""
    found = set(packs.deletable) | packs.indexes
    found |= {key for key in repo.backend.list("trees/")
              if key.rpartition("/")[2] not in needed.trees}
    found |= {key for key in repo.backend.list("snapshots/")
              if key.rpartition("/")[2] not in needed.snapshots}
    pending_marks = {mark_key(mark_id) for mark_id in pending}
    found |= {key for key in repo.backend.list("marks/") if key not in pending_marks}
    return found


def prune(session: Session, *, apply: bool, grace_minutes: float | None = None,
          max_repack_bytes: int | None = None, progress: ProgressSink | None = None,
          clock: Callable[[], float] = time.time) -> PruneResult:
    """Find the garbage; with `apply`, repack, mark, and delete what is due.

    Applying repacks mostly-garbage packs, marks what is deletable, and deletes what was
    marked a grace period ago.

    `max_repack_bytes` caps the bytes of the packs repacked in this run (None: no cap).
    """
    state = session.require_state()
    backend = session.backend
    if not backend.capabilities.deletes:
        raise UserError(f"the {session.core.backend} backend cannot delete objects, "
                        "so this store cannot be pruned (it keeps every generation)")
    if grace_minutes is None:
        grace_minutes = session.core.number("prune_grace_minutes")
    threshold = session.core.number("prune_repack_threshold")
    result = PruneResult(applied=apply, grace_minutes=grace_minutes,
                         repack_threshold=threshold)
    if remote_module.read_verified_head(session, state) is None:
        return result
    repo = session.repo
    if not apply:
        record = lease_module.read_lease(repo)
        _survey(session, result, record.marks, max_repack_bytes)
        marked = lease_module.marked_keys(repo, record)
        return _plan_only(result, marked)
    with lease_module.held(repo, state.id, state.device, "prune") as lease:
        kill_point("prune:lease")
        marks = [lease_module.load_mark(repo, mark_id) for mark_id in lease.record.marks]
        found, index_packs = _survey(session, result, lease.record.marks, max_repack_bytes,
                                     lease, progress)
        already = {key for mark in marks for key in mark.keys}
        fresh = sorted(found - already)
        if fresh:
            marks.append(lease_module.load_mark(
                repo, lease_module.write_mark(repo, state.device, fresh, clock())))
            lease.set_marks(mark.mark_id for mark in marks)
            result.marked = len(fresh)
        kill_point("prune:marked")
        now = clock()
        due = [mark for mark in marks if now - mark.time >= grace_minutes * 60]
        waiting = [mark for mark in marks if mark not in due]
        doomed = {key for mark in due for key in mark.keys} & found
        # an index written after its pack was marked (a push between the two, a repair's
        # second index) goes with the pack, not a grace period later: nothing can rely on
        # it once its pack is gone, and a reader meeting it would look for that pack first
        doomed |= {key for key, packs in index_packs.items()
                   if key in found and packs and packs <= doomed}
        _delete(session, lease, doomed, result, progress)
        if due:
            lease.set_marks(mark.mark_id for mark in waiting)
            kill_point("prune:swept")
            stale = [mark_key(mark.mark_id) for mark in due]
            backend.delete(stale)
            result.deleted["marks"] = result.deleted.get("marks", 0) + len(stale)
        pending = {key for mark in waiting for key in mark.keys} & found
        result.waiting = len(pending)
        if waiting:
            result.waiting_until = min(mark.time for mark in waiting) + grace_minutes * 60
    return result


def _survey(session: Session, result: PruneResult, pending: Iterable[str],
            max_repack_bytes: int | None, lease: lease_module.Lease | None = None,
            progress: ProgressSink | None = None) -> tuple[set[str], dict[str, set[str]]]:
    """What is deletable, and the packs each index lists.

    With a `lease` (apply), after repacking the chosen packs.
    """
    repo = session.repo
    needed = reach(session)
    result.kept_generations = len(needed.snapshots)
    packs = survey(repo, needed, result.repack_threshold)
    chosen = select(packs.pending, max_repack_bytes)
    result.repacked = len(chosen)
    result.repacked_bytes = sum(use.size for use in chosen)
    result.repack_left = len(packs.pending) - len(chosen)
    if lease is not None and chosen:
        if progress is not None:
            progress.begin(0, result.repacked_bytes)
        written, skipped = repack(repo, chosen, packs.covered, lease.renew,
                                  None if progress is None else
                                  lambda size: progress.advance(size))
        kill_point("prune:repacked")
        result.repack_written_bytes = written
        result.repacked -= len(skipped)
        result.repack_left += len(skipped)
        result.repacked_bytes -= sum(use.size for use in chosen if use.pack in skipped)
        packs = survey(repo, needed, result.repack_threshold)  # the copies now cover them
    found = garbage(repo, needed, pending, packs)
    result.garbage_bytes = sum(packs.deletable.values())
    result.pack_bytes = packs.deletable
    for key in found:
        result.garbage[_kind(key)] = result.garbage.get(_kind(key), 0) + 1
    return found, packs.index_packs


def _plan_only(result: PruneResult, marked: frozenset[str]) -> PruneResult:
    result.marked = 0
    result.waiting = len(marked)
    return result


def _delete(session: Session, lease: lease_module.Lease, doomed: set[str],
            result: PruneResult, progress: ProgressSink | None) -> None:
    """Delete `doomed` in the safe order, in bounded batches, renewing the lease between."""
    if progress is not None:
        progress.begin(len(doomed), 0)
    for prefix in ORDER:
        keys = sorted(key for key in doomed if key.startswith(prefix))
        for start in range(0, len(keys), BATCH):
            batch = keys[start:start + BATCH]
            session.backend.delete(batch)
            kill_point(f"prune:delete:{_kind(prefix)}")
            kind = _kind(prefix)
            result.deleted[kind] = result.deleted.get(kind, 0) + len(batch)
            result.deleted_bytes += sum(result.pack_bytes.get(key, 0) for key in batch)
            if progress is not None:
                progress.advance(0, files=len(batch))
            lease.renew()

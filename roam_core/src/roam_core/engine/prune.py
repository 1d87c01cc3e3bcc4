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
from roam_core.engine.session import Session
from roam_core.errors import UserError
from roam_core.store.objects import index_key, mark_key
from roam_core.store.parallel import ParallelReads, read_workers
from roam_core.store.repository import Repository

#: Keys per delete call: one S3 batch, and a bounded step between lease renewals.
BATCH = 1000
#: The default grace period: above the default push budget (operation_timeout_seconds, 1 h)
#: with room for clocks that disagree.
GRACE_MINUTES = 120
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
    level = sorted(set(roots))
    with ParallelReads(read_workers(repo.backend)) as reads:
        while level:
            below: set[str] = set()
            for entries in repo.load_trees(level, reads).values():
                for node in entries.values():
                    if node.get("t") == "d":
                        below.add(str(node["tree"]))
                    else:
                        for ref in node.get("blobs", ()):
                            found.blobs.add(str(ref[0]))
                            found.packs.add(str(ref[1]))
            found.trees.update(level)
            level = sorted(below - found.trees)
    # format 2: the tree packs that hold a reached tree are needed as much as its blobs' packs
    places = repo.tree_places()
    found.packs.update(str(ref[1]) for tree_id in found.trees for ref in places.get(tree_id, ()))
    return found


def garbage(repo: Repository, needed: Reach, pending: Iterable[str]
            ) -> tuple[set[str], dict[str, int]]:
    """Every deletable key now, and each dead pack's bytes (from the indexes' spans)."""
    packs = set(repo.backend.list("packs/"))
    holds: dict[str, set[str]] = {}
    spans: dict[str, int] = {}
    found: set[str] = set()
    for index_id, (blobs, trees) in repo.index_entries().items():
        refs = blobs + trees  # a tree pack's index lists trees (format 2), a data pack's blobs
        for ref in refs:
            blob_id, pack, length = str(ref[0]), str(ref[1]), int(ref[3])
            holds.setdefault(pack, set()).add(blob_id)
            spans[pack] = spans.get(pack, 0) + length
        named = {str(ref[1]) for ref in refs}
        if all(pack not in packs or _dead(pack, holds, needed) for pack in named):
            found.add(index_key(index_id))
    dead_packs = {pack for pack in packs if _dead(pack, holds, needed)}
    found |= dead_packs
    found |= {key for key in repo.backend.list("trees/")
              if key.rpartition("/")[2] not in needed.trees}
    found |= {key for key in repo.backend.list("snapshots/")
              if key.rpartition("/")[2] not in needed.snapshots}
    pending_marks = {mark_key(mark_id) for mark_id in pending}
    found |= {key for key in repo.backend.list("marks/") if key not in pending_marks}
    return found, {pack: spans.get(pack, 0) for pack in dead_packs}


def _dead(pack: str, holds: dict[str, set[str]], needed: Reach) -> bool:
    """A pack no kept generation names and none of whose indexed blobs one needs.

    Tree ids count as needed blobs too: a format that stores trees in packs keeps them.
    """
    held = holds.get(pack, set())
    return pack not in needed.packs and not (held & needed.blobs or held & needed.trees)


def prune(session: Session, *, apply: bool, grace_minutes: float | None = None,
          progress: ProgressSink | None = None,
          clock: Callable[[], float] = time.time) -> PruneResult:
    """Find the garbage; with `apply`, mark it and delete what was marked a grace period ago."""
    state = session.require_state()
    backend = session.backend
    if not backend.capabilities.deletes:
        raise UserError(f"the {session.settings.get('backend')} backend cannot delete objects, "
                        "so this store cannot be pruned (it keeps every generation)")
    if grace_minutes is None:
        grace_minutes = float(session.settings.get("prune_grace_minutes", GRACE_MINUTES))
    result = PruneResult(applied=apply, grace_minutes=grace_minutes)
    if remote_module.read_verified_head(session, state) is None:
        return result
    repo = session.repo
    if not apply:
        record = lease_module.read_lease(repo)
        _survey(session, result, record.marks)
        marked = lease_module.marked_keys(repo, record)
        return _plan_only(result, marked)
    with lease_module.held(repo, state.id, state.device, "prune") as lease:
        kill_point("prune:lease")
        marks = [lease_module.load_mark(repo, mark_id) for mark_id in lease.record.marks]
        found = _survey(session, result, lease.record.marks)
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


def _survey(session: Session, result: PruneResult, pending: Iterable[str]) -> set[str]:
    needed = reach(session)
    result.kept_generations = len(needed.snapshots)
    found, sizes = garbage(session.repo, needed, pending)
    result.garbage_bytes = sum(sizes.values())
    result.pack_bytes = sizes
    for key in found:
        result.garbage[_kind(key)] = result.garbage.get(_kind(key), 0) + 1
    return found


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

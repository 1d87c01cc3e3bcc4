"""Visiting every tree under some roots once, holding a bounded batch of parsed trees.

`roam stats` and `roam prune` need something from every tree of every kept generation;
reading a whole level at once held all its parsed entries together (a level of 100 folders
of 1,000 files was ~100 MB of dicts at 100,000 files, issue 23). Here a level is read a
batch at a time, each tree handed to the caller and dropped: what stays is the set of tree
ids seen and the ids queued for the next level.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from roam_core.store.parallel import ParallelReads, read_workers
from roam_core.store.repository import Repository

#: Trees read (and held parsed) at once, at least; on a remote store twice the read
#: workers, so a batch still keeps every worker busy.
MIN_BATCH = 16


def walk_trees(repo: Repository, roots: Iterable[str],
               visit: Callable[[str, dict[str, Any]], Iterable[str]], *,
               whole_packs: bool = False) -> set[str]:
    """Call `visit(tree_id, entries)` once per tree under `roots`; return the ids seen.

    `visit` returns the tree's subtree ids (the next level). Levels are read in order, each
    in batches sorted by where the trees are stored (a format-2 batch is a few ranged reads
    of its tree pack). `whole_packs`: see `Repository.load_trees`.
    """
    workers = read_workers(repo.backend)
    batch = max(MIN_BATCH, 2 * workers)
    seen: set[str] = set()
    level = set(roots)
    try:
        with repo.keeping_copies(), ParallelReads(workers) as reads:
            while level:
                seen |= level
                below: set[str] = set()
                ordered = _in_place_order(repo, level)
                for start in range(0, len(ordered), batch):
                    loaded = repo.load_trees(ordered[start:start + batch], reads,
                                             whole_packs=whole_packs)
                    for tree_id in ordered[start:start + batch]:
                        below.update(visit(tree_id, loaded.pop(tree_id)))
                    del loaded
                level = below - seen
    finally:
        repo.drop_held_trees()
    return seen


def _in_place_order(repo: Repository, level: set[str]) -> list[str]:
    """`level` sorted by (pack, offset) of a packed tree, then by id (loose trees)."""
    places = repo.tree_places() if repo.format >= 2 else {}

    def where(tree_id: str) -> tuple[str, int, str]:
        found = places.get(tree_id)
        return (found[0][1], found[0][2], tree_id) if found else ("", 0, tree_id)

    return sorted(level, key=where)

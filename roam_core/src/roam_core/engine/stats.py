"""`roam stats`: what the store holds, from its listings, indexes, snapshots and trees.

Nothing here reads a blob. Pack sizes come from the indexes' blob and tree spans (a pack is
its sealed blobs, or trees, back to back, so the spans add up to its size); trees stored on
their own (format 1), snapshots and indexes are small objects whose sizes only a read or a
per-object request would tell, so they are counted and their bytes reported as unknown.
Every blob size below is its sealed length in its pack: the bytes the store pays, after
compression.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from roam_core.engine.history import generations
from roam_core.engine.progress import ProgressSink
from roam_core.engine.session import Session
from roam_core.errors import IntegrityError
from roam_core.store.catalog import ID_SIZE
from roam_core.store.repository import Repository
from roam_core.store.tree_walk import walk_trees

#: Generations in the growth table unless `--last` says otherwise.
DEFAULT_LAST = 10


@dataclass
class KindStats:
    """Objects of one kind: how many, their bytes where known, how many have no known size."""

    count: int
    bytes: int | None
    unknown: int


@dataclass
class GenerationInfo:
    generation: int
    device: str
    date: str


@dataclass
class Growth:
    """One generation: its files and their bytes, and what it added to the store."""

    generation: int
    device: str
    date: str
    files: int
    file_bytes: int
    added_bytes: int


@dataclass
class StoreStats:
    """The store at a glance; `as_json` gives the same keys `roam stats --json` prints."""

    generations: int
    oldest: GenerationInfo | None
    newest: GenerationInfo | None
    per_device: dict[str, int]
    objects: dict[str, KindStats]
    #: distinct blob bytes any generation references
    referenced_bytes: int
    #: distinct blob bytes the newest generation references
    current_bytes: int
    #: distinct blob bytes only older generations reference (what forget + prune could free)
    older_only_bytes: int
    #: indexed blob bytes no generation references (interrupted pushes, repaired copies)
    unreferenced_bytes: int
    #: blob bytes counted once per file per generation ÷ the same blobs stored once
    dedup_ratio: float | None
    growth: list[Growth] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class _Tree:
    """What one tree holds, reduced to what the numbers need (no parsed entries kept)."""

    blobs: bytes  # the binary ids of the blobs of the files directly in the tree
    lengths: array  # each one's sealed length
    ref_bytes: int  # the files' blob bytes, counted once per reference
    children: list[str]


def store_stats(session: Session, last: int = DEFAULT_LAST,
                progress: ProgressSink | None = None) -> StoreStats:
    """Measure the store `session` is configured for (it must be initialised here).

    `progress` hears of each tree read (a count: how many the store holds is not known).
    """
    session.require_state()
    repo = session.repo
    chain = list(generations(session))  # newest first
    chain.reverse()
    if progress is not None:
        progress.begin(0, 0)
    trees = _load_trees(repo, [gen.snapshot.root for gen in chain], progress)
    totals: dict[str, int] = {}  # tree id → ref bytes under it, once per path
    sizes: dict[bytes, int] = {}  # binary blob id → sealed length
    first_seen: set[bytes] = set()
    growth: list[Growth] = []
    ref_bytes = 0
    current: set[bytes] = set()
    older: set[bytes] = set()
    for gen in chain:
        blobs = _reachable_blobs(trees, gen.snapshot.root, sizes)
        ref_bytes += _ref_bytes(trees, gen.snapshot.root, totals)
        added = blobs - first_seen
        first_seen |= added
        growth.append(Growth(gen.number, gen.snapshot.device, gen.snapshot.created,
                             gen.snapshot.files, gen.snapshot.bytes,
                             sum(sizes[blob] for blob in added)))
        older |= current
        current = blobs
    del first_seen
    referenced = sum(sizes.values())
    objects, unreferenced = _objects(repo, sizes)
    per_device: dict[str, int] = {}
    for gen in chain:
        per_device[gen.snapshot.device] = per_device.get(gen.snapshot.device, 0) + 1
    info = [GenerationInfo(gen.number, gen.snapshot.device, gen.snapshot.created)
            for gen in chain]
    return StoreStats(
        generations=len(chain), oldest=info[0] if info else None,
        newest=info[-1] if info else None, per_device=per_device, objects=objects,
        referenced_bytes=referenced, current_bytes=sum(sizes[blob] for blob in current),
        older_only_bytes=sum(sizes[blob] for blob in older - current),
        unreferenced_bytes=unreferenced,
        dedup_ratio=round(ref_bytes / referenced, 3) if referenced else None,
        growth=growth[-last:] if last > 0 else [])


def _load_trees(repo: Repository, roots: Iterable[str],
                progress: ProgressSink | None) -> dict[str, _Tree]:
    """Every tree under `roots`, each read once and reduced at once (`walk_trees`).

    Format 2: each tree pack is read whole at its first touch (`whole_packs`), not per level.
    """
    trees: dict[str, _Tree] = {}

    def reduce(tree_id: str, entries: dict[str, Any]) -> list[str]:
        tree = trees[tree_id] = _reduce(tree_id, entries)
        if progress is not None:
            progress.advance(0, files=1)
        return tree.children

    walk_trees(repo, roots, reduce, whole_packs=True)
    return trees


def _reduce(tree_id: str, entries: dict[str, Any]) -> _Tree:
    ids: list[bytes] = []
    lengths = array("Q")
    ref_bytes = 0
    children: list[str] = []
    try:
        for node in entries.values():
            if node["t"] == "d":
                children.append(str(node["tree"]))
                continue
            for ref in node["blobs"]:
                ids.append(bytes.fromhex(ref[0]))
                lengths.append(int(ref[3]))
                ref_bytes += int(ref[3])
    except (KeyError, TypeError, ValueError, IndexError, OverflowError):
        raise IntegrityError(f"integrity error: tree {tree_id} is malformed") from None
    blobs = b"".join(ids)
    if len(blobs) != ID_SIZE * len(ids):
        raise IntegrityError(f"integrity error: tree {tree_id} is malformed")
    return _Tree(blobs, lengths, ref_bytes, children)


def _reachable_blobs(trees: dict[str, _Tree], root: str, sizes: dict[bytes, int]
                     ) -> set[bytes]:
    """The distinct blobs of one generation (binary ids); notes each one's size in `sizes`."""
    found: set[bytes] = set()
    seen = {root}
    stack = [root]
    while stack:
        tree = trees[stack.pop()]
        for at, length in enumerate(tree.lengths):
            blob = tree.blobs[at * ID_SIZE:(at + 1) * ID_SIZE]
            found.add(blob)
            sizes[blob] = length
        for child in tree.children:
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return found


def _ref_bytes(trees: dict[str, _Tree], tree_id: str, totals: dict[str, int]) -> int:
    """Blob bytes under `tree_id`, once per file path (a folder held twice counts twice)."""
    if tree_id not in totals:
        tree = trees[tree_id]
        # trees nest at most MAX_FOLDERS deep (checked when a manifest is read): recursion is safe
        totals[tree_id] = tree.ref_bytes + sum(_ref_bytes(trees, child, totals)
                                               for child in tree.children)
    return totals[tree_id]


def _objects(repo: Repository, sizes: dict[bytes, int]
             ) -> tuple[dict[str, KindStats], int]:
    """Counts by kind from the listings; pack bytes from the indexes' spans.

    Also the bytes of indexed blobs no generation references (`sizes` holds the referenced
    ones): each such blob once, though its copies each count in their packs' bytes.
    """
    packs = {key.rpartition("/")[2] for key in repo.backend.list("packs/")}
    pack_bytes: dict[str, int] = {}
    unreferenced: dict[bytes, int] = {}
    lost = repo.voided()[0]
    for refs in repo.indexes().values():
        for blob_id, pack, _offset, length in refs:
            name = str(pack).rpartition("/")[2]
            if name in packs and pack not in lost:
                pack_bytes[name] = pack_bytes.get(name, 0) + int(length)
                binary = bytes.fromhex(str(blob_id))
                if binary not in sizes:
                    unreferenced[binary] = int(length)
    # format 2: trees live in tree packs, which count as packs; each tree as a tree
    places = repo.tree_places()
    for copies in places.values():
        for _tree_id, pack, _offset, length in copies:
            name = str(pack).rpartition("/")[2]
            if name in packs:
                pack_bytes[name] = pack_bytes.get(name, 0) + int(length)
    objects = {"packs": KindStats(len(packs), sum(pack_bytes.values()),
                                  len(packs - pack_bytes.keys()))}
    for kind, prefix in (("trees", "trees/"), ("snapshots", "snapshots/"),
                         ("indexes", "index/")):
        count = sum(1 for _key in repo.backend.list(prefix))
        objects[kind] = KindStats(count, None, count)
    if places:  # packed trees' sizes are known from their indexes, like blobs'
        loose = objects["trees"].count
        objects["trees"] = KindStats(loose + len(places), sum(
            int(copies[0][3]) for copies in places.values()), loose)
    return objects, sum(unreferenced.values())

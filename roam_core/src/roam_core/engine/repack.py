"""Which packs `roam prune` may delete, and repacking the mostly-garbage ones.

Every stored pack is sorted by what the kept generations need of it (its *live* entries: the
blobs, or in a format-2 tree pack the trees, that they reach):

- **dead**: nothing live (and no kept tree names it): deletable as it is;
- **candidate**: its unused share (bytes of entries nothing needs, over the bytes its index
  spans) is at least the `prune_repack_threshold` percentage;
- **kept**: the rest, and every pack a candidate cannot be judged by (a void record names
  it, or a kept tree names a blob there that its index does not list).

A candidate is **superseded**, hence deletable, once every live entry it holds is also held
by a kept pack. Otherwise its missing entries are copied (sealed bytes unchanged, each
checked first) into new packs with their own indexes, which are kept packs: the candidate is
superseded from then on. Deletable packs never count as copies of each other, so everything
deletable at one moment may go at once. Trees keep naming the old pack: readers find a blob
it held where the indexes place it now (the fallback of issue 19 for lost packs), and
`roam check` counts it as stored again. Repacking is safe beside concurrent pushes for the
reasons deletion is (docs/decisions.md, "Repacking").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from roam_core.engine.journal import kill_point
from roam_core.errors import IntegrityError, ObjectNotFound
from roam_core.store.manifest import BlobRef
from roam_core.store.objects import PACK_TARGET, index_key
from roam_core.store.repository import Repository
from roam_core.store.spans import plan_spans
from roam_core.store.treepacks import assemble_pack
from roam_core.store.uploads import put_once

#: The default `prune_repack_threshold`: a pack at least this many percent unused is
#: repacked. 10 keeps what a pruned store wastes in partly used packs near a tenth.
THRESHOLD_PERCENT = 10.0


@dataclass
class PackUse:
    """One pack, by its index entries: their bytes, and the live ones (id → entry)."""

    pack: str
    size: int = 0
    live_bytes: int = 0
    live: dict[str, BlobRef] = field(default_factory=dict)
    trees: bool = False
    offsets: set[int] = field(default_factory=set)

    @property
    def unused(self) -> int:
        return self.size - self.live_bytes

    def add(self, ref: BlobRef, needed: bool, tree: bool) -> None:
        offset, length = int(ref[2]), int(ref[3])
        if offset in self.offsets:
            return  # the same entry listed by a second index of this pack (a repair's)
        self.offsets.add(offset)
        self.size += length
        self.trees |= tree
        if needed and ref[0] not in self.live:
            self.live[str(ref[0])] = (str(ref[0]), str(ref[1]), offset, length)
            self.live_bytes += length


@dataclass
class PackSurvey:
    """What prune may delete among packs and indexes now, and what it would repack first."""

    #: deletable pack → the bytes its index spans (what deleting it frees)
    deletable: dict[str, int] = field(default_factory=dict)
    #: index keys every pack of which is deletable or already gone
    indexes: set[str] = field(default_factory=set)
    #: candidates a kept pack does not cover yet, the most unused share first
    pending: list[PackUse] = field(default_factory=list)
    #: ids of what kept packs hold (a candidate's entry among them needs no copy)
    covered: set[str] = field(default_factory=set)
    #: deletable packs that still hold live entries (repacked ones)
    superseded: int = 0
    #: each index key → the packs it lists
    index_packs: dict[str, set[str]] = field(default_factory=dict)


def survey_packs(repo: Repository, blobs: set[str], trees: set[str],
                 named: dict[str, set[str]], tree_named: set[str],
                 threshold: float) -> PackSurvey:
    """Sort the stored packs by their use; see the module docstring.

    `blobs` and `trees` are what the kept generations reach, `named` the blobs their trees
    name in each pack, `tree_named` the packs that hold a reached tree.
    """
    stored = set(repo.backend.list("packs/"))
    lost = repo.voided()[0]
    uses: dict[str, PackUse] = {}
    index_packs: dict[str, set[str]] = {}
    for index_id, (blob_refs, tree_refs) in repo.index_entries().items():
        packs: set[str] = set()
        for refs, wanted, tree in ((blob_refs, blobs, False), (tree_refs, trees, True)):
            for ref in refs:
                pack = str(ref[1])
                packs.add(pack)
                uses.setdefault(pack, PackUse(pack)).add(
                    (str(ref[0]), pack, int(ref[2]), int(ref[3])), ref[0] in wanted, tree)
        index_packs[index_id] = packs
    found = PackSurvey()
    candidates: list[PackUse] = []
    for pack in stored:
        use = uses.get(pack, PackUse(pack))
        held_named = named.get(pack, set())
        if not use.live and not held_named and pack not in tree_named:
            found.deletable[pack] = use.size
            continue
        if pack not in lost and use.live and use.unused > 0 and held_named <= use.live.keys() \
                and use.unused * 100 >= threshold * use.size:
            candidates.append(use)
        elif pack not in lost:
            found.covered.update(use.live)
    for use in candidates:
        if use.live.keys() <= found.covered:
            found.deletable[use.pack] = use.size
            found.superseded += 1
        else:
            found.pending.append(use)
    found.pending.sort(key=lambda use: (-use.unused / use.size, use.pack))
    found.index_packs = {index_key(index_id): packs for index_id, packs in index_packs.items()}
    found.indexes = {key for key, packs in found.index_packs.items()
                     if all(pack not in stored or pack in found.deletable for pack in packs)}
    return found


def select(pending: list[PackUse], max_bytes: int | None) -> list[PackUse]:
    """The candidates to repack now: in order, each whole pack's bytes within `max_bytes`.

    As restic's `--max-repack-size`: a pack that would take the total past the cap is left
    for a later run, and a smaller one after it may still fit. None: no cap.
    """
    chosen: list[PackUse] = []
    total = 0
    for use in pending:
        if max_bytes is not None and total + use.size > max_bytes:
            continue
        chosen.append(use)
        total += use.size
    return chosen


class Copier:
    """Writes checked sealed entries into new packs (trees and blobs never share one)."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        limit = repo.backend.capabilities.max_object_size
        self.target = min(PACK_TARGET, limit // 2) if limit else PACK_TARGET
        self._pending: dict[bool, list[tuple[str, bytes]]] = {False: [], True: []}
        self._size = {False: 0, True: 0}
        self.written_bytes = 0
        self.packs = 0

    def add(self, entry_id: str, sealed: bytes, tree: bool) -> None:
        self._pending[tree].append((entry_id, sealed))
        self._size[tree] += len(sealed)
        if self._size[tree] >= self.target:
            self._store(tree)

    def finish(self) -> None:
        for tree in (False, True):
            self._store(tree)

    def _store(self, tree: bool) -> None:
        entries = self._pending[tree]
        if not entries:
            return
        self._pending[tree], self._size[tree] = [], 0
        pack, data, refs = assemble_pack(entries)
        put_once(self.repo.backend, pack, data)
        # the index names the entries as present, so it goes only once the pack is stored
        self.repo.backend.flush()
        kill_point("prune:repack:pack")
        self.repo.write_pack_index(pack, [] if tree else refs, refs if tree else [])
        kill_point("prune:repack:index")
        self.written_bytes += len(data)
        self.packs += 1


def repack(repo: Repository, chosen: Iterable[PackUse], covered: set[str],
           renew: Callable[[], None], advance: Callable[[int], None] | None = None
           ) -> tuple[int, list[str]]:
    """Copy each chosen pack's live entries no kept pack holds into new packs.

    Returns (bytes written, packs skipped). A pack that cannot be read, or an entry that
    fails its checks, is skipped whole (kept as it is: `roam check` names the damage).
    `renew` is called after each pack (the lease), `advance` with its bytes.
    """
    copier = Copier(repo)
    copied = set(covered)
    skipped: list[str] = []
    for use in chosen:
        refs = sorted((ref for entry_id, ref in use.live.items() if entry_id not in copied),
                      key=lambda ref: ref[2])
        try:
            entries = list(_read_checked(repo, refs, use.trees))
        except (IntegrityError, ObjectNotFound):
            skipped.append(use.pack)
            continue
        for entry_id, sealed in entries:
            copier.add(entry_id, sealed, use.trees)
            copied.add(entry_id)
        renew()
        if advance is not None:
            advance(use.size)
    copier.finish()
    return copier.written_bytes, skipped


def _read_checked(repo: Repository, refs: list[BlobRef], tree: bool
                  ) -> Iterable[tuple[str, bytes]]:
    """Each entry's sealed bytes, read a span at a time and checked (auth, name)."""
    for span in plan_spans(refs):
        data = memoryview(repo.backend.get(span.pack, span.start, span.size))
        for ref in span.refs:
            sealed = bytes(data[ref[2] - span.start:ref[2] - span.start + ref[3]])
            repo.check_packed(ref, sealed, tree)
            yield ref[0], sealed

"""Reading trees of either format: one object each (format 1) or packed (format 2).

Format 2 trees are located through the indexes (`tree_places`) and read several at once:
one ranged read covers the trees of one level that sit near each other in a tree pack
(`roam_core.store.treepacks`). Every tree is authenticated under its id whichever way it
came; a tree whose place fails is read from any other copy the indexes name, then from the
format 1 key where `roam check --repair` puts back a tree it holds.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from roam_core import crypto
from roam_core.errors import IntegrityError, ObjectNotFound
from roam_core.store.cache_files import Entries
from roam_core.store.manifest import BlobRef, is_hex64
from roam_core.store.objects import tree_key
from roam_core.store.parallel import ParallelReads, read_workers
from roam_core.store.spans import Span
from roam_core.store.treepacks import plan_tree_spans

if TYPE_CHECKING:
    from roam_core.storage import Backend


#: Sealed trees a whole-generation load may hold for the levels below the one being read.
HELD_TREE_BYTES = 32 * 1024 * 1024


class HeldTrees:
    """Sealed trees read with a tree pack's others, kept for the levels still to be read.

    A pull loads every tree of a generation, level by level; reading all the trees of a
    tree pack at its first touch turns one ranged read per level into one per pack. What
    is held is bounded by bytes; a tree leaves when it is taken. Each is still opened and
    authenticated under its id when taken.
    """

    def __init__(self, budget: int | None = None) -> None:
        self.budget = HELD_TREE_BYTES if budget is None else budget
        self._trees: dict[str, tuple[BlobRef, bytes]] = {}
        self._size = 0
        self._lock = threading.Lock()

    def room(self, size: int) -> bool:
        """Whether `size` more bytes fit in the budget now."""
        with self._lock:
            return self._size + size <= self.budget

    def keep(self, ref: BlobRef, sealed: bytes) -> None:
        with self._lock:
            if ref[0] not in self._trees and self._size + len(sealed) <= self.budget:
                self._trees[ref[0]] = (ref, sealed)
                self._size += len(sealed)

    def take(self, tree_id: str) -> tuple[BlobRef, bytes] | None:
        with self._lock:
            found = self._trees.pop(tree_id, None)
            if found is not None:
                self._size -= len(found[1])
            return found

    def clear(self) -> None:
        with self._lock:
            self._trees.clear()
            self._size = 0


class TreeReads:
    """The tree-reading half of `Repository` (which provides what is declared here)."""

    backend: Backend
    format: int
    _tree_places: dict[str, list[BlobRef]] | None
    _places_lock: threading.Lock
    _held_trees: HeldTrees

    # provided by Repository
    def _read_json(self, kind: bytes, object_id: str, key: str,
                   label: str) -> dict[str, Any]:
        raise NotImplementedError

    def _read_json_from_store(self, kind: bytes, object_id: str, key: str,
                              label: str) -> dict[str, Any]:
        raise NotImplementedError

    def _open_json(self, kind: bytes, object_id: str, sealed: bytes, what: str,
                   keep_as: str | None) -> dict[str, Any]:
        raise NotImplementedError

    def _copies(self, kind: bytes, label: str, ids: Sequence[str]) -> dict[str, bytes]:
        raise NotImplementedError

    def keeping_copies(self) -> contextlib.AbstractContextManager[None]:
        raise NotImplementedError

    def _catalog(self, tolerant: bool = False) -> dict[str, Entries]:
        raise NotImplementedError

    def voided(self) -> tuple[frozenset[str], frozenset[str]]:
        raise NotImplementedError

    def load_tree(self, tree_id: str) -> dict[str, Any]:
        """One tree's entries, of either format (see `load_trees`)."""
        return self.load_trees([tree_id])[tree_id]

    def load_trees(self, tree_ids: Sequence[str], reads: ParallelReads | None = None, *,
                   whole_packs: bool = False) -> dict[str, dict[str, Any]]:
        """The entries of each tree, read with as few requests as the format allows.

        Format 2 trees are located through the indexes and read together: one ranged read
        per run of nearby trees in a tree pack. Format 1 trees (and trees a repair stored
        again as objects of their own) are one read each, in parallel on a remote store.
        Every tree is authenticated under its id, whichever way it came.

        `whole_packs` (a caller loading whole generations, level by level): on a remote
        store, a tree pack is read whole at its first touch and the trees not asked for yet
        are held for the next levels (`HeldTrees`), so a generation's trees cost one read per
        tree pack, not one per level.
        """
        ids = list(dict.fromkeys(tree_ids))
        for tree_id in ids:
            _check_tree_id(tree_id)
        found: dict[str, dict[str, Any]] = {}
        for tree_id, plain in self._copies(crypto.KIND_TREE, "trees", ids).items():
            try:  # the copy hashes to its name: it is the tree once read and checked
                found[tree_id] = entries_of(json.loads(plain), tree_id)
            except (ValueError, IntegrityError):
                pass
        wanted = [tree_id for tree_id in ids if tree_id not in found]
        if not wanted:
            return found
        with self.keeping_copies():  # one transaction for the trees read here
            self._read_trees(wanted, found, reads, whole_packs)
        return found

    def _read_trees(self, wanted: list[str], found: dict[str, dict[str, Any]],
                    reads: ParallelReads | None, whole_packs: bool) -> None:
        """Read `wanted` from the store into `found` (see `load_trees`)."""
        places = self.tree_places() if self.format >= 2 else {}
        packed = [places[tree_id][0] for tree_id in wanted if tree_id in places]
        loose = [tree_id for tree_id in wanted if tree_id not in places]
        whole = whole_packs and self.backend.capabilities.remote
        spans = self._whole_pack_spans(packed, found) if whole else plan_tree_spans(packed)
        asked = set(wanted)
        own = reads is None
        reads = reads if reads is not None else ParallelReads(read_workers(self.backend))
        try:
            for batch in reads.map(lambda span: self._read_tree_span(span, asked), spans):
                found.update(batch)
            found.update(zip(loose, reads.map(self._read_loose_tree, loose), strict=True))
        finally:
            if own:
                reads.close()

    def _read_loose_tree(self, tree_id: str) -> dict[str, Any]:
        """A tree stored as an object of its own (format 1, or a repair's copy).

        The object cache was asked for it with the others of its level (`load_trees`).
        """
        try:
            data = self._read_json_from_store(crypto.KIND_TREE, tree_id, tree_key(tree_id),
                                              "trees")
        except IntegrityError as error:
            if "missing from the store" not in str(error):
                raise
            # a HEAD of format 1 over trees in packs (one republished by an older roam), or
            # trees packed since this repository read the indexes: read them again
            places = self.tree_places().get(tree_id) or self.tree_places(fresh=True).get(tree_id)
            if not places:
                raise
            return self._read_tree_span(plan_tree_spans(places[:1])[0])[tree_id]
        return entries_of(data, tree_id)

    def drop_held_trees(self) -> None:
        """Let go of the trees a `whole_packs` load held for levels it did not reach."""
        self._held_trees.clear()

    def _whole_pack_spans(self, packed: list[BlobRef],
                          found: dict[str, dict[str, Any]]) -> list[Span]:
        """Spans reading every tree of each tree pack `packed` touches (held ones: none).

        Trees already held are opened into `found`. A pack whose trees do not fit in what
        may be held is read as before: only the trees asked for.
        """
        rest: list[BlobRef] = []
        for ref in packed:
            held = self._held_trees.take(ref[0])
            if held is None:
                rest.append(ref)
                continue
            try:
                found[ref[0]] = self._open_packed_tree(held[0], memoryview(held[1]), held[0][2])
            except IntegrityError as error:
                found[ref[0]] = self._tree_elsewhere(held[0], error)
        in_pack: dict[str, dict[str, BlobRef]] = {}
        for ref in rest:
            in_pack.setdefault(ref[1], {})[ref[0]] = ref
        spans: list[Span] = []
        for pack, asked in in_pack.items():
            every = dict(asked)
            for places in self.tree_places().values():
                for place in places:
                    if place[1] == pack:
                        every.setdefault(place[0], place)
            extra = sum(ref[3] for tree_id, ref in every.items() if tree_id not in asked)
            chosen = every if self._held_trees.room(extra) else asked
            spans.extend(plan_tree_spans(list(chosen.values())))
        return spans

    def _read_tree_span(self, span: Span,
                        asked: set[str] | None = None) -> dict[str, dict[str, Any]]:
        """The trees of `span` asked for (None: all), from one ranged read of their pack.

        The span's other trees are held for a later level (`HeldTrees`). A tree whose pack
        is lost or damaged is read from another copy: another tree pack the indexes name,
        or the object of its own a repair wrote.
        """
        try:
            data: memoryview | None = memoryview(
                self.backend.get(span.pack, span.start, span.size))
        except ObjectNotFound:
            data = None
        found: dict[str, dict[str, Any]] = {}
        for ref in span.refs:
            if asked is not None and ref[0] not in asked:
                if data is not None:
                    start = ref[2] - span.start
                    self._held_trees.keep(ref, bytes(data[start:start + ref[3]]))
                continue
            try:
                found[ref[0]] = self._open_packed_tree(ref, data, span.start)
            except IntegrityError as error:
                found[ref[0]] = self._tree_elsewhere(ref, error)
        return found

    def _open_packed_tree(self, ref: BlobRef, data: memoryview | None,
                          start: int) -> dict[str, Any]:
        """One tree out of the bytes read from its pack from `start` (None: pack missing)."""
        tree_id, pack, offset, length = ref
        if data is None:
            raise IntegrityError(f"integrity error: tree {tree_id} in {pack}: the pack is "
                                 "missing from the store")
        sealed = bytes(data[offset - start:offset - start + length])
        if len(sealed) != length:
            raise IntegrityError(f"integrity error: tree {tree_id} in {pack} is truncated")
        return entries_of(self._open_json(crypto.KIND_TREE, tree_id, sealed,
                                        f"tree {tree_id} in {pack}", "trees"), tree_id)

    def _tree_elsewhere(self, ref: BlobRef, error: IntegrityError) -> dict[str, Any]:
        """A packed tree that failed where `ref` says, from any other copy; else `error`.

        The places are read once per repository: a prune may have repacked the tree into a
        new pack and deleted the old one since (at once with `--grace-minutes 0`). When no
        place known here holds it, the indexes are read again and their new places tried.
        """
        tree_id = ref[0]
        tried: set[tuple[Any, ...]] = {tuple(ref)}
        found = self._tree_at(tree_id, self.tree_places().get(tree_id, []), tried)
        if found is not None:
            return found
        try:
            return entries_of(self._read_json(crypto.KIND_TREE, tree_id, tree_key(tree_id),
                                            "trees"), tree_id)
        except IntegrityError:
            pass
        found = self._tree_at(tree_id, self.tree_places(fresh=True).get(tree_id, []), tried)
        if found is not None:
            return found
        raise error  # what went wrong where the tree was expected: missing, or damaged

    def _tree_at(self, tree_id: str, places: list[BlobRef],
                 tried: set[tuple[Any, ...]]) -> dict[str, Any] | None:
        """The tree from the first of `places` not in `tried` that holds it intact."""
        for other in places:
            if tuple(other) in tried:
                continue
            tried.add(tuple(other))
            try:
                data = memoryview(self.backend.get(other[1], other[2], other[3]))
                return self._open_packed_tree(other, data, other[2])
            except (ObjectNotFound, IntegrityError):
                continue
        return None

    def tree_places(self, fresh: bool = False) -> dict[str, list[BlobRef]]:
        """Every packed tree and each place it is stored, from the indexes (less voided).

        Read once per repository; `fresh` reads the index listing again.
        """
        with self._places_lock:
            if self._tree_places is None or fresh:
                catalog = self._catalog(tolerant=True)
                self._tree_places = places_of(catalog, self.voided()[0])
            return self._tree_places


def places_of(catalog: Mapping[str, Entries],
              lost: frozenset[str]) -> dict[str, list[BlobRef]]:
    """Tree id → every place it is stored, from the indexes' tree refs (less lost packs)."""
    places: dict[str, list[BlobRef]] = {}
    for _blobs, trees in catalog.values():
        for ref in trees:
            if ref[1] not in lost:
                places.setdefault(str(ref[0]), []).append(
                    (str(ref[0]), str(ref[1]), int(ref[2]), int(ref[3])))
    return places


def _check_tree_id(tree_id: str) -> None:
    if not is_hex64(tree_id):
        raise IntegrityError(f"integrity error: malformed tree id {tree_id!r}")


def entries_of(data: dict[str, Any], tree_id: str) -> dict[str, Any]:
    """A tree's entries, checked to be a mapping."""
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, dict):
        raise IntegrityError(f"integrity error: tree {tree_id} is malformed")
    return entries

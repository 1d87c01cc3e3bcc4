"""The re-seal steps of a key rotation: blobs pack by pack, generations oldest first, forgets.

Each step ends with a journal record sealed under the new key (`roam_core.store.rotation`),
so a rerun skips what is done. Nothing here touches HEAD or deletes anything: until HEAD
moves, the store under the old key stays whole (see `roam_core.engine.rotate`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from roam_core import crypto
from roam_core.engine.journal import kill_point
from roam_core.engine.progress import ProgressSink
from roam_core.errors import IntegrityError, UserError
from roam_core.storage import Backend
from roam_core.store.manifest import MAX_FOLDERS, BlobRef, FileEntry
from roam_core.store.objects import PACK_TARGET, forget_key
from roam_core.store.packer import Packer
from roam_core.store.repository import Repository
from roam_core.store.rotation import write_record
from roam_core.store.rotation_journal import BlobMoves, Journal, Recording
from roam_core.store.tree_walk import MIN_BATCH
from roam_core.store.treepacks import TreePacker
from roam_core.store.uploads import Uploads

#: Old indexes re-sealed per journal record, at most.
BATCH_INDEXES = 256


class Paused(Exception):
    """The deadline is near: stop between steps; a rerun continues."""


@dataclass
class RotateResult:
    """What one `roam key rotate` did."""

    complete: bool = False
    generation: int | None = None
    indexes: int = 0
    blobs: int = 0
    bytes: int = 0
    snapshots: int = 0
    deleted: int = 0
    resumed: bool = False
    already: bool = False
    unreadable_blobs: int = 0
    fingerprint: str = ""
    notes: list[str] = field(default_factory=list)

    def as_json(self) -> dict[str, object]:
        return {"complete": self.complete, "generation": self.generation,
                "indexes_resealed": self.indexes, "blobs_resealed": self.blobs,
                "bytes_resealed": self.bytes, "snapshots_resealed": self.snapshots,
                "objects_deleted": self.deleted, "resumed": self.resumed,
                "already_rotated": self.already, "unreadable_blobs": self.unreadable_blobs,
                "new_key_fingerprint": self.fingerprint, "notes": self.notes}


class ResealSteps:
    """The steps; `Rotation` supplies the repositories, journal, result and clock."""

    backend: Backend
    old: Repository
    new: Repository
    new_keys: crypto.Keys
    recording: Recording
    journal: Journal
    result: RotateResult
    progress: ProgressSink | None

    def _check_time(self) -> None:
        raise NotImplementedError

    def _reseal_blobs(self) -> None:
        """Every blob of every live index, re-sealed into new packs, a batch per record."""
        journal = self.journal
        void_packs, void_indexes = self.old.voided()
        batch: list[str] = []
        refs: list[BlobRef] = []
        queued: set[str] = set()
        size = 0
        for key in sorted(self.backend.list("index/")):
            index_id = key.rpartition("/")[2]
            if index_id in journal.indexes or key in journal.wrote or index_id in void_indexes:
                continue
            try:
                found = self.old.load_index(index_id)
            except IntegrityError:
                if self._opens_new(index_id):
                    continue  # written by an interrupted run of this rotation, never recorded
                raise UserError(f"index {index_id} opens under neither key; run roam check "
                                "--repair first, then roam key rotate again") from None
            batch.append(index_id)
            for ref in found:
                if ref[1] not in void_packs and ref[0] not in journal.blobs \
                        and ref[0] not in queued:
                    queued.add(ref[0])
                    refs.append(ref)
                    size += ref[3]
            if size >= PACK_TARGET or len(batch) >= BATCH_INDEXES:
                self._reseal_batch(batch, refs)
                batch, refs, queued, size = [], [], set(), 0
        if batch:
            self._reseal_batch(batch, refs)

    def _opens_new(self, index_id: str) -> bool:
        try:
            self.new.load_index(index_id)
        except IntegrityError:
            return False
        return True

    def _reseal_batch(self, batch: list[str], refs: list[BlobRef]) -> None:
        self._check_time()
        packer = Packer(self.new, {})
        old_ids: list[str] = []
        new_ids: list[str] = []
        if self.progress is not None:
            self.progress.begin(len(batch), sum(ref[3] for ref in refs))
        for ref, item in zip(refs, self.old.read_blobs(refs, tolerant=True), strict=True):
            if isinstance(item, IntegrityError):
                # lost or damaged: a generation that needs it is refused below, by name
                self.result.unreadable_blobs += 1
                continue
            data, digest = item
            old_ids.append(ref[0])
            new_ids.append(packer.add_chunk(data, digest))
            self.result.bytes += len(data)
            if self.progress is not None:
                self.progress.advance(ref[3])
        packer.finish()
        kill_point("rotate:packs")
        moved = dict(zip(old_ids, packer.refs(tuple(new_ids)), strict=True))
        write_record(self.backend, self.new_keys, f"blobs-{batch[0]}",
                     {"indexes": batch, "map": {old: list(ref) for old, ref in moved.items()},
                      "wrote": self._wrote()})
        self.journal.indexes.update(batch)
        self.journal.blobs.update(moved)
        self.result.indexes += len(batch)
        self.result.blobs += len(moved)
        if self.progress is not None:
            self.progress.advance(0, files=len(batch))
        kill_point("rotate:blobs")

    def _reseal_snapshots(self) -> None:
        """Every generation's trees and snapshot, oldest first, one record each."""
        journal = self.journal
        todo: list[tuple[int, str]] = []
        for key in self.backend.list("snapshots/"):
            snapshot_id = key.rpartition("/")[2]
            if snapshot_id in journal.snapshots or key in journal.wrote:
                continue
            try:
                todo.append((self.old.load_snapshot(snapshot_id).generation, snapshot_id))
            except IntegrityError:
                try:
                    self.new.load_snapshot(snapshot_id)
                except IntegrityError:
                    raise UserError(f"snapshot {snapshot_id} opens under neither key; run "
                                    "roam check --repair first, then roam key rotate "
                                    "again") from None
        # old tree id → new, across generations: a folder unchanged since the generation
        # before is neither read nor written again
        trees: dict[str, str] = {}
        for _generation, snapshot_id in sorted(todo):
            self._check_time()
            snapshot = self.old.load_snapshot(snapshot_id)
            with self.new.tree_sink() as sink:
                root = TreeRewrite(self.old, self.new, sink, journal.blobs, trees,
                                   snapshot.generation).tree(snapshot.root, "", 0)
            parent = snapshot.parent
            rotated = dataclasses.replace(snapshot, root=root,
                                          parent=journal.snapshots.get(parent, parent)
                                          if parent else None)
            new_id = self.new.write_snapshot(rotated)
            kill_point("rotate:snapshot")
            write_record(self.backend, self.new_keys, f"snapshot-{snapshot_id}",
                         {"old": snapshot_id, "new": new_id, "wrote": self._wrote()})
            journal.snapshots[snapshot_id] = new_id
            self.result.snapshots += 1

    def _reseal_forgets(self) -> None:
        """Each forget record under the new key, its snapshot ids mapped to their new ones.

        A forgotten snapshot a prune already deleted has no new id: its old id stays, in the
        record and in its child's parent alike, so readers still step over it.
        """
        journal = self.journal
        done: list[str] = []
        for key in sorted(self.backend.list("forgets/")):
            record_id = key.rpartition("/")[2]
            if record_id in journal.forgets or key in journal.wrote:
                continue
            value = self.old.read_record(crypto.KIND_FORGET, record_id, key, "forgets")
            items = value.get("generations")
            if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
                raise UserError(f"forget record {record_id} is malformed; run roam check")
            mapped = journal.snapshots
            value["generations"] = [
                {**item, **{name: mapped.get(item[name], item[name])
                            for name in ("snapshot", "parent") if item.get(name)}}
                for item in items]
            self.new.write_record(crypto.KIND_FORGET, value, forget_key)
            done.append(record_id)
        if done:
            write_record(self.backend, self.new_keys, f"forgets-{done[0]}",
                         {"old": done, "wrote": self._wrote()})
            journal.forgets.update(done)

    def _wrote(self) -> list[str]:
        """The keys written since the last record: kept by the sweep, named in the record."""
        wrote = self.recording.take()
        self.journal.wrote.update(wrote)
        return wrote


class TreeRewrite:
    """One generation's trees written again under the new key, a tree at a time.

    Each old tree is read, its files' blob refs replaced by their re-sealed ones and its
    subtrees by their new ids, and written: children first, a bounded batch of them parsed
    at once. A whole generation's manifest was ~4 copies of every file entry at once (old,
    moved, the previous generation's as a base: 390 MiB at 100,000 files, issue 23).
    """

    def __init__(self, old: Repository, new: Repository, sink: Uploads | TreePacker,
                 blobs: BlobMoves, done: dict[str, str], generation: int) -> None:
        self.old, self.new, self.sink = old, new, sink
        self.blobs, self.done, self.generation = blobs, done, generation

    def tree(self, tree_id: str, prefix: str, depth: int,
             entries: dict[str, Any] | None = None) -> str:
        """The new id of old tree `tree_id` (at `prefix`), written once."""
        found = self.done.get(tree_id)
        if found is not None:
            return found
        if depth > MAX_FOLDERS:
            raise IntegrityError(f"integrity error: tree {tree_id} nests too deep")
        if entries is None:
            entries = self.old.load_tree(tree_id)
        subtrees: dict[str, str] = {}
        for name, node in entries.items():
            if isinstance(node, dict) and node.get("t") == "d":
                subtrees[name] = str(node.get("tree"))
        todo = [child for child in dict.fromkeys(subtrees.values()) if child not in self.done]
        for start in range(0, len(todo), MIN_BATCH):
            batch = todo[start:start + MIN_BATCH]
            loaded = self.old.load_trees(batch)
            for child in batch:
                name = next(name for name, sub in subtrees.items() if sub == child)
                self.tree(child, f"{prefix}{name}/", depth + 1, loaded.pop(child))
        written: dict[str, Any] = {}
        for name, node in entries.items():
            if name in subtrees:
                written[name] = {"t": "d", "tree": self.done[subtrees[name]]}
            elif isinstance(node, dict) and node.get("t") == "f":
                written[name] = {"t": "f", **self._moved(f"{prefix}{name}", node, tree_id)}
            else:
                raise IntegrityError(f"integrity error: tree {tree_id} is malformed")
        new_id = self.new.write_tree({"v": 1, "entries": written}, self.sink)
        self.done[tree_id] = new_id
        return new_id

    def _moved(self, path: str, node: dict[str, Any], tree_id: str) -> dict[str, Any]:
        """A file's entry with each blob ref replaced by the re-sealed blob's."""
        entry = FileEntry.from_json(path, {key: value for key, value in node.items()
                                           if key != "t"}, f"tree {tree_id}")
        moved = []
        for ref in entry.blobs:
            new = self.blobs.get(ref[0])
            if new is None:
                raise UserError(
                    f"generation {self.generation}: {path} needs a blob the store has lost "
                    f"({ref[0][:16]}); run roam check --repair first, then roam key "
                    "rotate again")
            moved.append(new)
        return FileEntry(path, entry.size, entry.mode, entry.sha256, entry.scope,
                         tuple(moved)).as_json()

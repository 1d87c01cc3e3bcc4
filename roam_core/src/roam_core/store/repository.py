"""Reading and writing the store: HEAD, snapshots, trees, packs and blobs.

Every object read is authenticated and its id re-derived from its plaintext, so a tampered,
truncated, swapped or foreign object is an `IntegrityError` naming the object before any of
its plaintext is used. Trees and snapshots are immutable, so verified copies are cached in
the device's state folder; blobs are never cached.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import hashlib
import json
import secrets
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from roam_core import crypto
from roam_core.errors import ArchiveKeyError, IntegrityError, ObjectNotFound, UserError
from roam_core.storage import Backend
from roam_core.store import codec, reached
from roam_core.store.cache_files import Entries, read_known, write_known
from roam_core.store.catalog import BlobTable, KnownBlobs, RefTable, compact
from roam_core.store.content import ContentSource, checked_content
from roam_core.store.manifest import (
    MAX_FOLDERS,
    BlobRef,
    FileEntry,
    Manifest,
    check_manifest,
    check_name,
    flattened_manifest,
    folder_text,
    is_hex64,
    node_text,
    tree_text,
)
from roam_core.store.object_cache import PENDING_BYTES, ObjectCache
from roam_core.store.objects import (
    HEAD_REF,
    STORE_FORMAT,
    STORE_FORMATS,
    Head,
    Snapshot,
    canonical,
    index_key,
    parse_json,
    snapshot_key,
    tree_key,
    void_key,
)
from roam_core.store.parallel import ParallelReads, read_workers
from roam_core.store.rotation import read_tombstone, rekeyed_store, rotated_message
from roam_core.store.spans import Span, SpanReader, plan_spans, span_policy
from roam_core.store.tree_reads import HeldTrees, TreeReads, places_of
from roam_core.store.tree_reuse import Reuse, changed_folders
from roam_core.store.treepacks import TreePacker
from roam_core.store.uploads import Uploads, put_once

#: Under the indexes cache: one JSON line per index already read.
KNOWN_FILE = "known.jsonl"
#: Trees of one level of a manifest loaded (and flattened) at a time.
LEVEL_BATCH = 1024
#: Under the trees cache: the trees of the generation this device last wrote or applied.
REACHED_FILE = "reached.json"
#: Tree uploads at once on a remote store (the S3 client's pool holds as many connections).
TREE_UPLOADS = 32
#: The kind each object cache folder of an earlier roam held (a file per object).
LEGACY_KINDS = {"trees": crypto.KIND_TREE, "snapshots": crypto.KIND_SNAPSHOT,
                "indexes": crypto.KIND_INDEX, "voids": crypto.KIND_VOID,
                "marks": crypto.KIND_MARK, "forgets": crypto.KIND_FORGET}


class Repository(TreeReads):
    """One store, opened with one archive key."""

    def __init__(self, backend: Backend, keys: crypto.Keys, cache_dir: Path | None = None,
                 max_file_size: int = 1 << 40) -> None:
        self.backend = backend
        self.keys = keys
        self.cache_dir = cache_dir
        self.max_file_size = max_file_size
        #: Trees known to be in the store (loaded or written), so they are never re-sent.
        self.seen_trees: set[str] = set()
        #: For each root tree loaded or written here: folder path ("" for the root) → tree id.
        self.folders: dict[str, dict[str, str]] = {}
        self._known_lock = threading.Lock()
        self._voids: tuple[frozenset[str], frozenset[str]] | None = None
        self._voids_lock = threading.Lock()
        #: Where each blob is stored now, by the indexes: for blobs whose pack was lost.
        self._located: dict[str, list[BlobRef]] | None = None
        #: Keys a prune marked (engine/lease.py): an object is never written as one of them.
        self.avoid: frozenset[str] = frozenset()
        #: The store format written here: HEAD's, once read (a store with no HEAD yet is
        #: founded at `STORE_FORMAT`). Readers take trees of either format whatever it says.
        self.format = 1
        #: Where each packed tree is stored, by the indexes (every copy), once asked.
        self._tree_places: dict[str, list[BlobRef]] | None = None
        self._places_lock = threading.Lock()
        #: Trees read with their tree pack's others, for the levels a load has still to read.
        self._held_trees = HeldTrees()
        #: The index cache as read (and appended to) by this process: parsed once, however
        #: many of the blob table, the tree places and the locations ask for it.
        self._known_cache: dict[str, Entries] | None = None
        #: The device's object cache (`_object_cache`), once asked for.
        self._objects: ObjectCache | None = None
        #: Copies kept by reads, written at `flush_copies`: (label, id, plaintext).
        self._pending_copies: list[tuple[str, str, bytes]] = []
        self._pending_size = 0
        self._copies_lock = threading.Lock()
        #: `keeping_copies` blocks running: copies wait for the outermost one's end.
        self._deferring = 0
        #: The thread writing a whole load's copies, if one runs (`flush_copies`).
        self._writer: threading.Thread | None = None
        #: Held while that thread is joined, or a write made or started (by any thread).
        self._writer_lock = threading.Lock()

    # -- HEAD ----------------------------------------------------------------------------

    def read_head(self) -> Head | None:
        """The authenticated HEAD, or None for an empty store. A foreign key is refused."""
        found = self.backend.read_ref(HEAD_REF)
        if found is None:
            self.format = STORE_FORMAT  # what a device founding the store writes
            return None
        raw, version = found
        if len(raw) > 2 and raw[:2] == crypto.MAGIC and raw[2] > max(STORE_FORMATS):
            raise UserError(
                f"this store is in format version {raw[2]}, newer than this roam reads (up to "
                f"{max(STORE_FORMATS)}): upgrade roam on this device (see docs/format.md)")
        try:
            plain = crypto.open_sealed(self.keys.head, crypto.KIND_HEAD, HEAD_REF, raw, "HEAD",
                                       STORE_FORMATS)
        except IntegrityError as error:
            if "failed authentication" in str(error):
                rotated = read_tombstone(self.backend, self.keys)
                if rotated is not None:
                    raise ArchiveKeyError(rotated_message(*rotated)) from None
                raise ArchiveKeyError(
                    "the archive key cannot open this store's HEAD (wrong ROAM_ARCHIVE_KEY, "
                    "or HEAD was damaged or tampered with: with the right key, roam check "
                    "--repair re-publishes it)"
                ) from None
            raise
        head = Head.from_json(parse_json(plain, "HEAD", STORE_FORMATS), version)
        if head.format != raw[2]:  # the sealed header and the plaintext must agree
            raise IntegrityError("integrity error: HEAD is malformed")
        self.format = head.format
        return head

    def detect_format(self) -> int:
        """The store's format by its contents (when HEAD cannot say): 2 once it packs trees."""
        return 2 if self.tree_places() else 1

    def write_head(self, head: Head, expected_version: str | None) -> str:
        """Compare-and-swap HEAD, in this repository's format; `RefConflict` when it moved."""
        head = dataclasses.replace(head, format=self.format)
        sealed = crypto.seal(self.keys.head, crypto.KIND_HEAD, HEAD_REF,
                             canonical(head.as_json()), version=self.format)
        return self.backend.swap_ref(HEAD_REF, sealed, expected_version)

    # -- sealed JSON objects -------------------------------------------------------------

    def _cache_path(self, kind: str, object_id: str) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / kind / object_id

    def _read_json(self, kind: bytes, object_id: str, key: str, label: str) -> dict[str, Any]:
        plain = self._copies(kind, label.rstrip("/"), [object_id]).get(object_id)
        if plain is not None:
            return json.loads(plain)  # parsed and checked when it was read from the store
        return self._read_json_from_store(kind, object_id, key, label)

    def _read_json_from_store(self, kind: bytes, object_id: str, key: str,
                              label: str) -> dict[str, Any]:
        """`_read_json` without asking the object cache (a caller that just did)."""
        what = f"{label[:-1]} {key}"
        label = label.rstrip("/")
        try:
            sealed = self.backend.get(key)
        except ObjectNotFound:
            raise IntegrityError(f"integrity error: {what} is missing from the store") from None
        value = self._open_json(kind, object_id, sealed, what, label)
        self.flush_copies()
        return value

    def _open_json(self, kind: bytes, object_id: str, sealed: bytes, what: str,
                   keep_as: str | None) -> dict[str, Any]:
        """Authenticate, decode and re-name one sealed JSON object.

        Its plaintext is kept as `keep_as` in the device's object cache (written at
        `flush_copies`).
        """
        plain = codec.decode(crypto.open_sealed(self.keys.encryption, kind, object_id, sealed,
                                                what), what)
        if self.keys.name(kind, hashlib.sha256(plain).digest()) != object_id:
            raise IntegrityError(f"integrity error: {what} does not match its name")
        value = parse_json(plain, what)
        if keep_as is not None:
            self._keep_copy(keep_as, object_id, plain)
        return value

    # -- the object cache (roam_core.store.object_cache) ---------------------------------

    def _object_cache(self) -> ObjectCache | None:
        """The device's object cache, on a remote store only.

        A copy pays only where a read leaves the machine: on a local store it would save a
        local read.
        """
        if self.cache_dir is None or not self.backend.capabilities.remote:
            return None
        with self._copies_lock:  # trees are read (and kept) by several threads at once
            if self._objects is None:
                self._objects = ObjectCache(self.cache_dir)
                self._take_in_legacy(self._objects)
            return self._objects

    def _copies(self, kind: bytes, label: str, ids: Sequence[str]) -> dict[str, bytes]:
        """The cached plaintexts of `ids` that still hash to their names (one query)."""
        cache = self._object_cache()
        if cache is None:
            return {}
        found = cache.get_many(label, ids)
        wrong = [object_id for object_id, plain in found.items()
                 if not self._named(kind, object_id, plain)]
        for object_id in wrong:  # damaged or swapped: read from the store, then replaced
            del found[object_id]
        return found

    def cached_copy(self, kind: bytes, label: str, object_id: str) -> bytes | None:
        """One cached plaintext that still hashes to its name (for `roam check --repair`)."""
        return self._copies(kind, label, [object_id]).get(object_id)

    def _named(self, kind: bytes, object_id: str, plain: bytes) -> bool:
        return self.keys.name(kind, hashlib.sha256(plain).digest()) == object_id

    def _keep_copy(self, label: str, object_id: str, plain: bytes) -> None:
        if self._object_cache() is None:
            return
        with self._copies_lock:
            self._pending_copies.append((label, object_id, plain))
            self._pending_size += len(plain)

    @contextlib.contextmanager
    def keeping_copies(self, then_write: bool = True) -> Iterator[None]:
        """Write the copies kept while this runs at its end, in one transaction.

        Not by each read: a file per tree was 3,026 file creations on the large home's pull
        (issue 22). Earlier only if `PENDING_BYTES` of them are waiting; later (at the next
        `flush_copies`) if not `then_write`.
        """
        with self._copies_lock:
            self._deferring += 1
        try:
            yield
        finally:
            with self._copies_lock:
                self._deferring -= 1
            if then_write:
                self.flush_copies(due=True)

    def flush_copies(self, due: bool = False, keep: set[str] | None = None) -> None:
        """Write the copies kept so far, unless a `keeping_copies` is running.

        `due`: also while one runs, once `PENDING_BYTES` of them are waiting; those are
        written in a thread of their own, as are (`keep`) the last of a whole generation's
        load, after which the cache is bounded to a few generations (`ObjectCache.keep_only`):
        off the pull's path, joined by the next write and by `close`.
        """
        cache = self._object_cache()
        with self._copies_lock:
            if cache is None or (self._deferring and (
                    not due or self._pending_size < PENDING_BYTES)):
                return
            rows, self._pending_copies, self._pending_size = self._pending_copies, [], 0
            aside = bool(self._deferring) or keep is not None
        if not rows and keep is None:
            return

        def write() -> None:
            if rows:
                cache.put_many(rows)
            if keep is not None:
                cache.keep_only("trees", keep)

        # two readers' loads may end at once: each joins the last writer, one at a time, so
        # no writer is ever left unjoined (`close` waits for all that were started)
        with self._writer_lock:
            self._join_writer()
            if not aside:
                write()
                return
            self._writer = threading.Thread(target=write, name="roam-object-cache")
            self._writer.start()

    def _join_writer(self) -> None:
        """Wait for the thread writing copies, if one runs (the caller holds `_writer_lock`)."""
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.join()

    def close(self) -> None:
        """Finish writing the object cache and close it (a later read opens it again)."""
        self.flush_copies()
        with self._writer_lock:
            self._join_writer()
        if self._objects is not None:
            self._objects.close()

    def _take_in_legacy(self, cache: ObjectCache) -> None:
        """Copies an earlier roam kept as a file each become rows, once; the files go.

        Each is checked against its name as it is taken in; a copy that fails is dropped.
        """
        rows: list[tuple[str, str, bytes]] = []
        files: list[Path] = []
        for label, object_id, path in cache.legacy(LEGACY_KINDS):
            files.append(path)
            try:
                plain = path.read_bytes()
            except OSError:
                continue
            if self._named(LEGACY_KINDS[label], object_id, plain):
                rows.append((label, object_id, plain))
        if not files or not cache.put_many(rows):
            return  # a cache that cannot be written leaves the files for the next command
        for path in files:
            try:
                path.unlink()
            except OSError:
                pass

    def _write_json(self, kind: bytes, value: dict[str, Any], key_of: Any,
                    uploads: Uploads | TreePacker | None = None,
                    cache_as: str | None = None) -> str:
        return self._write_plain(kind, canonical(value), key_of, uploads, cache_as)

    def _write_plain(self, kind: bytes, plain: bytes, key_of: Any,
                     uploads: Uploads | TreePacker | None = None,
                     cache_as: str | None = None) -> str:
        """Seal and store one JSON object given as its canonical text; its id."""
        object_id = self.keys.name(kind, hashlib.sha256(plain).digest())
        if kind == crypto.KIND_TREE and object_id in self.seen_trees:
            return object_id
        if key_of(object_id) in self.avoid:
            # a prune marked the object of this name for deletion: relying on the copy there
            # could lose it, so a twin goes under a new name (readers ignore "salt")
            plain = canonical({**json.loads(plain), "salt": secrets.token_hex(8)})
            object_id = self.keys.name(kind, hashlib.sha256(plain).digest())
        sealed = crypto.seal(self.keys.encryption, kind, object_id, codec.encode(plain))
        if isinstance(uploads, TreePacker):
            uploads.add(object_id, sealed)
        elif uploads is not None:
            uploads.put(key_of(object_id), sealed)
        else:
            put_once(self.backend, key_of(object_id), sealed)
        if cache_as is not None:
            # as if read back: the next push from here finds it without a round trip
            self._keep_copy(cache_as, object_id, plain)
            self.flush_copies()
        return object_id

    def read_record(self, kind: bytes, record_id: str, key: str, label: str) -> dict[str, Any]:
        """One sealed JSON record (forget records, prune marks), authenticated and re-named."""
        _check_id(record_id, label[:-1])
        return self._read_json(kind, record_id, key, label)

    def write_record(self, kind: bytes, value: dict[str, Any], key_of: Any) -> str:
        """Store one sealed JSON record once; return its id (content-addressed)."""
        return self._write_json(kind, value, key_of)

    # -- snapshots and trees -------------------------------------------------------------

    def load_snapshot(self, snapshot_id: str) -> Snapshot:
        _check_id(snapshot_id, "snapshot")
        data = self._read_json(crypto.KIND_SNAPSHOT, snapshot_id, snapshot_key(snapshot_id),
                               "snapshots")
        return Snapshot.from_json(data, f"snapshot {snapshot_id}")

    def write_snapshot(self, snapshot: Snapshot) -> str:
        return self._write_json(crypto.KIND_SNAPSHOT, snapshot.as_json(), snapshot_key,
                                cache_as="snapshots")

    def load_manifest(self, root_tree: str) -> Manifest:
        """Flatten the tree rooted at `root_tree` into a validated manifest.

        Trees are read level by level, each level's in parallel on a remote store: a home of
        3,000 folders costs its depth in waits, not 3,000 round trips one after another.
        """
        files: list[FileEntry] = []
        folders: dict[str, str] = {}
        level: list[tuple[str, str]] = [("", root_tree)]
        depth = 0
        try:
            with self.keeping_copies(then_write=False), \
                    ParallelReads(read_workers(self.backend)) as reads:
                while level:
                    if depth > MAX_FOLDERS:
                        raise IntegrityError(
                            f"integrity error: tree {level[0][1]} nests too deep")
                    below: list[tuple[str, str]] = []
                    # a level's trees are loaded and flattened a batch at a time: decoded
                    # whole, the widest level of 100,000 files held 40 MB of entry dicts
                    uses = collections.Counter(tree_id for _prefix, tree_id in level)
                    again: dict[str, dict[str, Any]] = {}  # trees the level names again
                    for start in range(0, len(level), LEVEL_BATCH):
                        batch = level[start:start + LEVEL_BATCH]
                        loaded = self.load_trees(sorted({tree_id for _prefix, tree_id in batch
                                                         if tree_id not in again}),
                                                 reads, whole_packs=True)
                        for prefix, tree_id in batch:
                            folders[prefix[:-1]] = tree_id
                            entries = again[tree_id] if tree_id in again else loaded[tree_id]
                            self._flatten(tree_id, prefix, entries, files, below)
                            uses[tree_id] -= 1
                            if uses[tree_id]:
                                again[tree_id] = entries
                            else:
                                again.pop(tree_id, None)
                    level = below
                    depth += 1
        finally:
            self.drop_held_trees()  # trees of other generations: not kept past the load
        manifest = flattened_manifest(files, self.max_file_size, f"snapshot tree {root_tree}")
        self.seen_trees.update(folders.values())
        self.folders[root_tree] = folders
        self.flush_copies(keep=set(folders.values()))
        return manifest

    def entry_at(self, root_tree: str, path: str) -> FileEntry | None:
        """The entry of one file in the tree rooted at `root_tree`, or None.

        Reads only the trees on the path (its depth in requests), not the whole manifest:
        a file's history or restore costs a few reads per generation, not every folder.
        """
        return self.entries_at([root_tree], path)[0]

    def entries_at(self, roots: list[str], path: str) -> list[FileEntry | None]:
        """`path`'s entry in the tree under each of `roots` (None where it is not a file).

        Reads only the trees on the path, level by level, every root's at once: a tree
        shared by several generations is read once, and trees of one tree pack come in one
        ranged read per level (see `load_trees`), not one round trip per tree.
        """
        parts = path.split("/")
        found: list[FileEntry | None] = [None] * len(roots)
        at = dict(enumerate(roots))  # which tree each root has reached
        with ParallelReads(read_workers(self.backend)) as reads:
            for depth, part in enumerate(parts):
                if not at:
                    break
                loaded = self.load_trees(sorted(set(at.values())), reads)
                last = depth == len(parts) - 1
                for index, tree_id in list(at.items()):
                    node = loaded[tree_id].get(part)
                    kind = node.get("t") if isinstance(node, dict) else None
                    if kind == "d" and not last:
                        at[index] = str(node.get("tree"))  # type: ignore[union-attr]
                        continue
                    del at[index]
                    if kind == "f" and last:
                        entry = {key: value for key, value in node.items() if key != "t"}  # type: ignore[union-attr]
                        file = FileEntry.from_json(path, entry, f"tree {tree_id}")
                        found[index] = check_manifest([file], self.max_file_size,
                                                      f"snapshot tree {roots[index]}")[path]
        return found

    @staticmethod
    def _flatten(tree_id: str, prefix: str, entries: dict[str, Any], files: list[FileEntry],
                 below: list[tuple[str, str]]) -> None:
        """One tree's files into `files`, its subtrees into `below` (the next level)."""
        what = f"tree {tree_id}"
        for name, node in entries.items():
            check_name(name, prefix, what)  # each name one safe segment: so are the paths
            path = f"{prefix}{name}"
            if not isinstance(node, dict):
                raise IntegrityError(f"integrity error: tree {tree_id} is malformed")
            kind = node.get("t")
            if kind == "d":
                below.append((path + "/", str(node.get("tree"))))
            elif kind == "f":
                # the node is its entry's JSON with a "t" beside it (read, never changed: one
                # tree may fill two folders); no copy without it (100,000 dicts on a pull)
                files.append(FileEntry.from_json(path, node, what))
            else:
                raise IntegrityError(f"integrity error: tree {tree_id} is malformed")

    def write_manifest(self, manifest: Mapping[str, FileEntry], base: Manifest | None = None,
                       base_folders: Mapping[str, str] | None = None,
                       note: str | None = None,
                       present: Callable[[str], bool] | None = None) -> str:
        """Write the trees of `manifest`; return the root id.

        A `note` goes into every tree, so each gets a new name: a repair that cannot replace
        a damaged tree (objects are create-once) writes fresh ones beside it.

        Trees already in `self.seen_trees` (loaded from the base generation) are not written
        again, so an unchanged directory costs nothing in a new generation. Given the base
        generation's manifest and its folder → tree map, a folder holding exactly the base's
        entries keeps its tree id without being serialised again. `present` confirms that a
        tree pack is still stored: a tree whose every copy was lost is written again.
        """
        if present is not None and self.format >= 2:
            base_folders = self._drop_lost_trees(present, base_folders)
        # a file is its path until its folder's tree is written: `manifest` may make each
        # entry afresh when read (a push's new rows), and every entry at once is too much
        root: dict[str, Any] = {}
        for path in manifest:
            node = root
            parts = path.split("/")
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = path
        reuse = None
        if base is not None and base_folders is not None:
            reuse = Reuse(base_folders, changed_folders(manifest, base))
        folders: dict[str, str] = {}
        with self.tree_sink() as sink:
            root_id = self._write_node(root, "", sink, folders, reuse, note, manifest)
        self.seen_trees.update(folders.values())
        self.folders[root_id] = folders
        return root_id

    @contextlib.contextmanager
    def tree_sink(self) -> Iterator[Uploads | TreePacker]:
        """Where trees go (`write_tree`) in this store's format; all stored when it ends.

        Format 1: one tree per folder, in parallel, each a small PUT whose cost is its
        round trip, so many go at once on a remote; format 2: a few tree packs.
        """
        uploads = Uploads(self.backend, TREE_UPLOADS if self.backend.capabilities.remote
                          and not self.backend.capabilities.batched_publish
                          and self.format < 2 else None)
        sink: Uploads | TreePacker = uploads
        if self.format >= 2:
            sink = TreePacker(uploads, self._write_index_of,
                              self.backend.capabilities.max_object_size)
        try:
            yield sink
            if isinstance(sink, TreePacker):
                sink.finish()
            uploads.wait()
        finally:
            uploads.close()

    def write_tree(self, value: dict[str, Any], sink: Uploads | TreePacker) -> str:
        """Seal one tree (`{"v": 1, "entries": ...}`) into `sink` (`tree_sink`); its id."""
        return self._write_json(crypto.KIND_TREE, value, tree_key, sink)

    def _drop_lost_trees(self, present: Callable[[str], bool],
                         base_folders: Mapping[str, str] | None) -> Mapping[str, str] | None:
        """Forget the known trees whose tree packs the store no longer holds."""
        places = self.tree_places()
        known = self.seen_trees | set(base_folders.values() if base_folders else ())
        lost = {tree_id for tree_id in known if tree_id in places
                and not any(present(ref[1]) for ref in places[tree_id])}
        if not lost:
            return base_folders
        self.seen_trees -= lost
        if base_folders is None:
            return None
        return {path: tree_id for path, tree_id in base_folders.items() if tree_id not in lost}

    def _write_node(self, node: dict[str, Any], path: str, uploads: Uploads | TreePacker,
                    folders: dict[str, str], reuse: Reuse | None,
                    note: str | None = None,
                    manifest: Mapping[str, FileEntry] | None = None) -> str:
        if reuse is not None and reuse.keep(node, path, folders):
            return folders[path]
        # each node straight to its canonical text: a dict per file through the encoder was
        # ~0.4 s of a 100,000-file push (and an entry made afresh per row of a new manifest)
        rows = getattr(manifest, "node_text", None)
        nodes: dict[str, str] = {}
        for name, child in node.items():
            if isinstance(child, FileEntry):
                nodes[name] = node_text(child)
            elif not isinstance(child, dict):  # a file's path in `manifest`
                assert manifest is not None
                nodes[name] = rows(child) if rows is not None else node_text(manifest[child])
            else:
                inner = f"{path}/{name}" if path else name
                nodes[name] = folder_text(self._write_node(child, inner, uploads, folders,
                                                           reuse, note, manifest))
        tree_id = self._write_plain(crypto.KIND_TREE, tree_text(nodes, note), tree_key, uploads)
        folders[path] = tree_id
        return tree_id

    def remember_trees(self, snapshot_id: str, root_tree: str) -> None:
        """Note, for this device's next push, the folder trees of the generation it is on.

        A push from that same generation then knows which trees the store already holds
        without reading them all back (the store is append-only: they stay there), and
        which folders it need not serialise again. The note grows by what changed
        (`roam_core.store.reached`).
        """
        cache = self._cache_path("trees", REACHED_FILE)
        folders = self.folders.get(root_tree)
        if cache is None or folders is None:
            return
        reached.remember(cache, snapshot_id, root_tree, folders)

    def recall_trees(self, snapshot_id: str) -> dict[str, str] | None:
        """The folder → tree map `remember_trees` noted for `snapshot_id`, if it did.

        Its trees are then known to be in the store (`seen_trees`).
        """
        cache = self._cache_path("trees", REACHED_FILE)
        found = None if cache is None else reached.recall(cache)
        if found is None or found[0] != snapshot_id:
            return None
        folders = found[2]
        self.seen_trees.update(folders.values())
        return folders

    # -- blobs ---------------------------------------------------------------------------

    def read_blob(self, ref: BlobRef) -> bytes:
        """One blob by reference: a ranged read, authenticated, decoded and re-named."""
        return self._read_blob(ref)[0]

    def _read_blob(self, ref: BlobRef) -> tuple[bytes, bytes]:
        """The blob's bytes and their SHA-256 (already computed to check its name).

        A blob whose pack is lost or damaged is read where a repair or a later push stored
        it again (the indexes say where); its name check makes any copy as good as the first.
        Every copy the indexes name is tried: several devices may each have stored it again,
        and the provider may have lost some of those copies too.
        """
        try:
            return self._read_blob_at(ref)
        except IntegrityError as error:
            failure = error
        tried = {tuple(ref)}
        for fresh in (False, True):
            if fresh:
                # the places were read before a prune repacked the blob elsewhere (and
                # deleted the pack they name): read the indexes again, try the new places
                self._located = None
            for moved in self.locations(ref[0]):
                if tuple(moved) in tried:
                    continue
                tried.add(tuple(moved))
                try:
                    return self._read_blob_at(moved)
                except IntegrityError:
                    continue
        raise failure

    def locations(self, blob_id: str) -> list[BlobRef]:
        """Every place the store's indexes (less voided ones) say `blob_id` is stored."""
        located = self._located  # one read: a failed read in another thread may reset it
        if located is None:
            located = {}
            lost_packs = self.voided()[0]
            for refs in self.indexes().values():
                for ref in refs:
                    if ref[1] not in lost_packs:
                        located.setdefault(ref[0], []).append(ref)
            self._located = located
        return located.get(blob_id, [])

    def _read_blob_at(self, ref: BlobRef) -> tuple[bytes, bytes]:
        _blob_id, pack, offset, length = ref
        try:
            sealed = self.backend.get(pack, offset, length)
        except ObjectNotFound:
            raise IntegrityError(f"integrity error: {pack} is missing from the store") from None
        return self._open_blob(ref, sealed)

    def _open_blob(self, ref: BlobRef, sealed: bytes | memoryview) -> tuple[bytes, bytes]:
        """Authenticate, decode and re-name one blob read from its pack."""
        blob_id, pack, _offset, length = ref
        what = f"blob {blob_id[:16]} in {pack}"
        if len(sealed) != length:
            raise IntegrityError(f"integrity error: {what} is truncated")
        data = codec.decode(crypto.open_sealed(self.keys.encryption, crypto.KIND_BLOB, blob_id,
                                               sealed, what), what)
        digest = hashlib.sha256(data).digest()
        if self.keys.name(crypto.KIND_BLOB, digest) != blob_id:
            raise IntegrityError(f"integrity error: {what} does not match its name")
        return data, digest

    def _read_span(self, span: Span, tolerant: bool = False) -> list[object]:
        """Every blob of `span`, from one ranged read of its pack.

        `tolerant`: a blob that fails its checks is its `IntegrityError`, not a raise.
        """
        try:
            data = memoryview(self.backend.get(span.pack, span.start, span.size))
            return [self._open_blob(ref, data[ref[2] - span.start:ref[2] - span.start + ref[3]])
                    for ref in span.refs]
        except (ObjectNotFound, IntegrityError):
            # a lost or damaged pack: each blob is read where it was stored again, if it was
            if not tolerant:
                return [self._read_blob(ref) for ref in span.refs]
        results: list[object] = []
        for ref in span.refs:
            try:
                results.append(self._read_blob(ref))
            except IntegrityError as error:
                results.append(error)
        return results

    def read_blobs(self, refs: list[BlobRef], *, tolerant: bool = False
                   ) -> Iterator[tuple[bytes, bytes]]:
        """Each blob's bytes and SHA-256, in order: one ranged read per pack span.

        Spans are read several at a time on a remote store, at most a window of bytes
        ahead of the caller (see `roam_core.store.spans`). `tolerant`: a blob that fails
        its checks comes back as its `IntegrityError` instead of ending the reading.
        """
        policy = span_policy(self.backend.capabilities.remote)
        reader = SpanReader(plan_spans(refs, policy.limit, policy.gap),
                            lambda span: self._read_span(span, tolerant), policy.workers,
                            policy.window)
        try:
            for _ref, result in reader:
                yield result  # type: ignore[misc]
        finally:
            reader.close()

    def content_source(self, entry: FileEntry) -> ContentSource:
        """A re-readable source of the file's bytes that checks them against `entry`."""
        return ContentSource(self, entry)

    def iter_content(self, entry: FileEntry) -> Iterator[bytes]:
        """The file's bytes, blob by blob; the whole-file digest is checked at the end."""
        return checked_content(entry, (self._read_blob(ref) for ref in entry.blobs))

    def read_content(self, entry: FileEntry) -> bytes:
        return b"".join(self.iter_content(entry))

    def known_blobs(self) -> KnownBlobs:
        """Every blob the store holds and where, from its index objects (cached per device).

        The cache (`indexes/known.jsonl`) holds one line per index already read: a push
        appends the new ones instead of rewriting them all. A mapping over the compact
        catalogue (`roam_core.store.catalog`), not a dict of every blob; what a caller sets
        or deletes stays in its own view.
        """
        catalog = self._catalog()
        lost_packs = self.voided()[0]
        with self._places_lock:
            if self._tree_places is None:
                # the trees' places come from the same listing: a push asks for both, and
                # would otherwise list (and parse the cache of) every index twice
                self._tree_places = places_of(catalog, lost_packs)
        # the cache holds only what load_index checked: no per-field conversion here
        return KnownBlobs(BlobTable([_live(blobs, lost_packs)
                                     for blobs, _trees in catalog.values()]))

    def forget_catalog(self) -> None:
        """Let go of the indexes' refs held in memory (read again, from the cache, if asked).

        A pull needs them only to find the trees; its files' entries say where each blob
        is. At 100,000 files they are megabytes held through the whole install (issue 22).
        """
        with self._known_lock:
            self._known_cache = None

    def indexes(self) -> dict[str, Sequence[BlobRef]]:
        """Each index the store lists (less voided ones) → its blob refs, read once per device.

        A tree pack's index has no blob refs (its trees: `tree_places`).
        """
        return {index_id: blobs for index_id, (blobs, _trees) in self._catalog().items()}

    def index_entries(self) -> dict[str, Entries]:
        """Each index the store lists (less voided ones) → (blob refs, tree refs)."""
        return self._catalog()

    def _catalog(self, tolerant: bool = False) -> dict[str, Entries]:
        """Each index the store lists (less voided ones) → (blob refs, tree refs).

        `tolerant`: an index that fails its checks is left out (and read again next time)
        instead of raised: one damaged index of a data pack must not hide every tree.
        """
        cache = self._cache_path("indexes", KNOWN_FILE)
        with self._known_lock:
            if self._known_cache is None:
                self._known_cache = read_known(cache) if cache is not None else {}
            known = dict(self._known_cache)
        # listed before the void records are read: a record written in between is seen, and
        # a push reading the void records in another thread meanwhile waits for neither
        listed = {key.rpartition("/")[2] for key in self.backend.list("index/")}
        load = self._tolerant_index if tolerant else self._index_or_foreign

        def compacted(index_id: str) -> Entries | Exception | None:
            # each index packed as it comes: the parsed tuples of every index at once were
            # ~700 bytes a blob at the peak of a first read (issue 23)
            try:
                found = load(index_id)
            except Exception as error:  # raised below unless the index is voided
                return error
            return None if found is None else (compact(found[0]), compact(found[1]))

        with self.keeping_copies(), ParallelReads(read_workers(self.backend)) as reads:
            if self._voids is None and reads.workers > 1 and listed - known.keys():
                # on a remote store the void records are read beside the indexes not known
                # yet, not one round trip before them: an index found voided is dropped
                # unread, whatever its read gave
                missing = sorted(listed - known.keys())
                results = reads.map(lambda item: compacted(item) if item else self.voided(),
                                    ["", *missing])[1:]
                loaded: dict[str, object] = dict(zip(missing, results, strict=True))
            else:
                loaded = {}
            listed -= self.voided()[1]
            # only what this store lists counts: a cache kept from another store (the same
            # home re-initialised elsewhere) must never make a push skip uploading a blob
            stale = not known.keys() <= listed
            known = {index_id: refs for index_id, refs in known.items() if index_id in listed}
            missing = sorted(listed - known.keys())
            rest = [index_id for index_id in missing if index_id not in loaded]
            loaded.update(zip(rest, reads.map(compacted, rest), strict=True))
        added: dict[str, Entries] = {}
        for index_id in missing:
            found = loaded[index_id]
            if isinstance(found, Exception):
                raise found
            if found is not None:
                added[index_id] = found  # type: ignore[assignment]
        known.update(added)
        with self._known_lock:
            if stale or self._known_cache is None:
                self._known_cache = dict(known)
            else:
                self._known_cache.update(added)
            if cache is not None and (stale or added):
                lines = (known if stale else added).items()
                write_known(cache, (_known_line(index_id, blobs, trees)
                                    for index_id, (blobs, trees) in lines), append=not stale)
        return known

    def _index_or_foreign(self, index_id: str
                          ) -> tuple[list[BlobRef], list[BlobRef]] | None:
        """An index's blobs; None for one sealed under the other key of a key rotation.

        While a rotation runs (and after one, for what an old-key push left behind) the
        store holds indexes of two keys: the other key's are not this device's to count on,
        nor an error. Outside a rotated store, failing authentication stays an error.
        """
        try:
            return self.load_index_entries(index_id)
        except IntegrityError as error:
            if "failed authentication" not in str(error) or not rekeyed_store(self.backend):
                raise
            return None
    def _tolerant_index(self, index_id: str) -> tuple[list[BlobRef], list[BlobRef]] | None:
        try:
            return self.load_index_entries(index_id)
        except IntegrityError:
            return None  # `roam check` names it; the trees of other packs stay readable

    def load_index(self, index_id: str) -> list[BlobRef]:
        """The blobs one pack holds, from the pack's sealed index object."""
        return self.load_index_entries(index_id)[0]

    def load_index_entries(self, index_id: str) -> tuple[list[BlobRef], list[BlobRef]]:
        """(blobs, trees) one pack holds, from its sealed index; a data pack holds no trees."""
        _check_id(index_id, "index")
        data = self._read_json(crypto.KIND_INDEX, index_id, index_key(index_id), "indexes")
        try:
            pack = str(data["pack"])
            found = ([(str(b[0]), pack, int(b[1]), int(b[2])) for b in data["blobs"]],
                     [(str(t[0]), pack, int(t[1]), int(t[2])) for t in data.get("trees", [])])
        except (KeyError, TypeError, ValueError, IndexError, OverflowError):  # int(inf)
            raise IntegrityError(f"integrity error: index {index_id} is malformed") from None
        # what the compact catalogue holds (`roam_core.store.catalog`): ids, whole numbers
        if not all(is_hex64(ref[0]) and 0 <= ref[2] < 1 << 63 and 0 <= ref[3] < 1 << 63
                   for refs in found for ref in refs):
            raise IntegrityError(f"integrity error: index {index_id} is malformed")
        return found

    def voided(self) -> tuple[frozenset[str], frozenset[str]]:
        """(packs, indexes) that void records say are lost or damaged: never counted on."""
        with self._voids_lock:  # read once, whichever thread asks first
            if self._voids is None:
                self._voids = self._read_voids()
            return self._voids

    def _read_voids(self) -> tuple[frozenset[str], frozenset[str]]:
        """Every void record, read and checked: (packs, indexes) named lost."""
        packs: set[str] = set()
        indexes: set[str] = set()
        for key in sorted(self.backend.list("voids/")):
            void_id = key.rpartition("/")[2]
            _check_id(void_id, "void record")
            data = self._read_json(crypto.KIND_VOID, void_id, key, "voids")
            found_packs, found_indexes = data.get("packs"), data.get("indexes")
            if not isinstance(found_packs, list) or not isinstance(found_indexes, list) \
                    or not all(isinstance(item, str) for item in found_packs + found_indexes):
                raise IntegrityError(f"integrity error: void record {void_id} is malformed")
            packs.update(found_packs)
            indexes.update(found_indexes)
        return (frozenset(packs), frozenset(indexes))

    def ignore_voids(self) -> None:
        """Count on every pack and index, whatever void records the store holds.

        For a repository that re-writes the store under a new key (a rotation): the void
        records there are the old key's, name only old packs, and this key cannot open them.
        """
        self._voids = (frozenset(), frozenset())

    def write_void(self, packs: set[str], indexes: set[str]) -> None:
        """Record that `packs` and `indexes` are lost or damaged (nothing is ever deleted)."""
        value = {"v": 1, "packs": sorted(packs), "indexes": sorted(indexes)}
        self._write_json(crypto.KIND_VOID, value, void_key)
        self._voids = None
        self._located = None
        self._tree_places = None

    def write_index(self, pack: str, refs: list[BlobRef], note: str | None = None) -> str:
        """Store the index of `pack` and note it as known: the next push reads it from here.

        A `note` makes a rewritten index's name a new one (see `roam check --repair`).
        """
        return self._write_index_of(pack, refs, [], note)

    def write_pack_index(self, pack: str, refs: list[BlobRef], trees: list[BlobRef]) -> str:
        """Store the index of a pack holding `refs` (blobs) or `trees` (a tree pack)."""
        return self._write_index_of(pack, refs, trees)

    def check_packed(self, ref: BlobRef, sealed: bytes, tree: bool) -> None:
        """Authenticate and re-name one entry read from its pack; `IntegrityError` if bad."""
        if tree:
            self._open_json(crypto.KIND_TREE, ref[0], sealed, f"tree {ref[0]} in {ref[1]}",
                            None)
        else:
            self._open_blob(ref, sealed)

    def _write_index_of(self, pack: str, refs: list[BlobRef], trees: list[BlobRef],
                        note: str | None = None) -> str:
        """Store the index of a data pack (`refs`) or of a tree pack (`trees`)."""
        value: dict[str, Any] = {"v": 1, "pack": pack,
                                 "blobs": [[ref[0], ref[2], ref[3]] for ref in refs]}
        if trees:
            value["trees"] = [[ref[0], ref[2], ref[3]] for ref in trees]
        if note is not None:
            value["note"] = note
        index_id = self._write_json(crypto.KIND_INDEX, value, index_key)
        cache = self._cache_path("indexes", KNOWN_FILE)
        if cache is not None:
            line = _known_line(index_id, refs, trees)
            with self._known_lock:  # packs are stored by two threads at once
                write_known(cache, [line], append=True)
        with self._known_lock:
            if self._known_cache is not None:
                self._known_cache[index_id] = (compact(refs), compact(trees))
        with self._places_lock:
            if self._tree_places is not None:
                for ref in trees:
                    self._tree_places.setdefault(ref[0], []).append(ref)
        return index_id


def _live(refs: Sequence[BlobRef], lost: frozenset[str]) -> Sequence[BlobRef]:
    """An index's refs less those in a lost (voided) pack: a table is one pack's, whole."""
    if isinstance(refs, RefTable):
        return () if refs.pack in lost else refs
    return [ref for ref in refs if ref[1] not in lost]


def _known_line(index_id: str, blobs: Sequence[Sequence[Any]],
                trees: Sequence[Sequence[Any]]) -> str:
    """One line of the index cache; a tree pack's line carries its trees third."""
    rows = [list(ref) for ref in blobs]
    return json.dumps([index_id, rows, [list(ref) for ref in trees]] if trees
                      else [index_id, rows])


def _check_id(object_id: str, what: str) -> None:
    if not is_hex64(object_id):
        raise IntegrityError(f"integrity error: malformed {what} id {object_id!r}")

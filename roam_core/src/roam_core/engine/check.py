"""`roam check`: verify the store the way `restic check` does, reading and writing nothing else.

HEAD must authenticate, belong to this fleet and not be below the device's rollback floor;
every snapshot reachable from HEAD (following parents down to generation 0) must decrypt and
be the generation it claims; every tree must decrypt, match its name and hold only valid
entries and safe paths; every index must decrypt; every blob a file references must sit in a
pack the store holds and be listed by an index. With `read_data`, every referenced blob is
read, authenticated, decoded and re-named, and every file's size and SHA-256 re-computed.

The store is opened without the device's object cache: a cached copy proves nothing about
what the backend holds now. Every problem is reported by the object it concerns; the check
goes on past it, so one run lists everything that is wrong.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from roam_core.engine.session import Session
from roam_core.engine.state import RECOVERY_DOC, read_floors
from roam_core.errors import ArchiveKeyError, IntegrityError, RoamError, UserError
from roam_core.store.forgets import forgotten
from roam_core.store.manifest import BlobRef, FileEntry, check_manifest, check_path
from roam_core.store.objects import snapshot_key, tree_key
from roam_core.store.repository import Repository

_T = TypeVar("_T")

#: Deeper trees are refused (the same bound the reader applies).
MAX_DEPTH = 64


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one object of the store."""

    object: str
    message: str

    def as_json(self) -> dict[str, str]:
        return {"object": self.object, "message": self.message}


@dataclass
class CheckReport:
    """What `check` looked at and what it found."""

    identity: str = ""
    head_generation: int | None = None
    floor: int = 0
    snapshots: int = 0
    trees: int = 0
    files: int = 0
    blobs: int = 0
    packs: int = 0
    indexes: int = 0
    unreferenced_packs: int = 0
    read_data: bool = False
    blobs_read: int = 0
    bytes_read: int = 0
    problems: list[Problem] = field(default_factory=list)
    #: Something `roam check --repair` may put back (from this device's files and caches).
    repairable: bool = False

    @property
    def ok(self) -> bool:
        return not self.problems

    def add(self, obj: str, message: str) -> None:
        self.problems.append(Problem(obj, message))

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "identity": self.identity,
                "head_generation": self.head_generation, "floor": self.floor,
                "snapshots": self.snapshots, "trees": self.trees, "files": self.files,
                "blobs": self.blobs, "packs": self.packs, "indexes": self.indexes,
                "unreferenced_packs": self.unreferenced_packs, "read_data": self.read_data,
                "blobs_read": self.blobs_read, "bytes_read": self.bytes_read,
                "repairable": self.repairable,
                "problems": [problem.as_json() for problem in self.problems]}


def _reason(error: Exception) -> str:
    """An integrity error's message without its generic prefix (the object is named apart)."""
    return str(error).removeprefix("integrity error: ")


@dataclass
class _Use:
    """Where a blob reference was first seen, for problem messages."""

    path: str
    generation: int


class Checker:
    """One run of `roam check` over one store."""

    def __init__(self, session: Session, *, read_data: bool = False) -> None:
        self.session = session
        # no cache_dir: verify the backend's bytes, never a local copy, and write nothing
        self.repo = Repository(session.backend, session.keys, None,
                               max_file_size=session.max_file_size)
        self.report = CheckReport(read_data=read_data)
        self._trees: dict[str, list[tuple[str, FileEntry | str]] | None] = {}
        self._incomplete: set[str] = set()
        #: Trees read ahead by level, not yet judged.
        self._loaded: dict[str, dict[str, Any]] = {}
        self._refs: dict[BlobRef, _Use] = {}
        self._contents: dict[tuple[str, int, tuple[BlobRef, ...]], _Use] = {}
        # what `repair` works from: refs no copy of can be read, and objects to put back
        self.broken: set[BlobRef] = set()
        self.lost_packs: set[str] = set()
        self.unlisted: dict[str, set[BlobRef]] = {}
        self.bad_indexes: set[str] = set()
        self.missing: set[str] = set()
        self.head_broken = False
        self.stale_packs: set[str] = set()
        #: HEAD's generation does not read back (a tree or its snapshot damaged or lost): a
        #: device that holds it publishes it again (`roam_core.engine.rewrite`)
        self.head_unreadable = False
        self._head_generation: int | None = None

    def run(self) -> CheckReport:
        report = self.report
        report.identity = self.session.backend.identity()
        head = self._head()
        if head is None:
            report.repairable = self.head_broken
            return report
        try:
            for generation, snapshot_id, snapshot in self._chain(head.generation,
                                                                 head.snapshot):
                self._snapshot(generation, snapshot_id, snapshot)
        finally:
            self.repo.drop_held_trees()
        report.trees = sum(1 for tree in self._trees.values() if tree is not None)
        self._packs_and_indexes()
        if report.read_data:
            self._read_data()
        report.repairable = bool(self.broken or self.unlisted or self.bad_indexes
                                 or self.missing or self.head_broken
                                 or self.head_unreadable)
        return report

    @property
    def contents(self) -> dict[tuple[str, int, tuple[BlobRef, ...]], _Use]:
        """Each distinct file content (SHA-256, size, blob refs) and where it was first seen."""
        return self._contents

    # -- HEAD and the chain of snapshots --------------------------------------------------

    def _head(self) -> Any:
        report = self.report
        # the state and the floors before HEAD: a push of this home landing meanwhile (the
        # service's check takes no lock) raises them past the HEAD read here (see `Floors`)
        # (a damaged file is said where it was before: once HEAD has been read)
        state, floors = _held(self.session.state), _held(
            lambda: read_floors(self.session.state_dir))
        try:
            head = self.repo.read_head()
        except (ArchiveKeyError, IntegrityError) as error:
            report.add("HEAD", _reason(error))
            self.head_broken = True
            return None
        state = _raised(state)
        if head is None:
            if state is None or not state.store:
                raise lost_head_error(self.session) or UserError(
                    "the store has no HEAD; run roam init --create-remote on one device")
            report.add("HEAD", "is missing from the store")
            self.head_broken = True
            return None
        report.head_generation = self._head_generation = head.generation
        if state is not None and state.store and head.store != state.store:
            report.add("HEAD", f"belongs to another fleet ({head.store[:12]}, this device "
                       f"joined {state.store[:12]})")
        report.floor = _raised(floors).of(head.store, report.identity, state)
        if head.generation < report.floor:
            report.add("HEAD", f"generation {head.generation} is below generation "
                       f"{report.floor} that this device already verified (rolled back)")
            self.head_broken = True
        return head

    def _chain(self, generation: int, snapshot_id: str | None
               ) -> Iterator[tuple[int, str, Any]]:
        seen: set[str] = set()
        expected = generation
        try:
            dropped = forgotten(self.repo)
        except IntegrityError as error:
            self.report.add("forget records", _reason(error))
            dropped = {}
        while snapshot_id is not None:
            what = f"snapshot {snapshot_id}"
            if snapshot_id in seen:
                self.report.add(what, "appears twice in the chain of parents (a cycle)")
                return
            seen.add(snapshot_id)
            gone = dropped.get(snapshot_id)
            if gone is not None:  # forgotten: its record carries the chain on
                if gone.generation != expected:
                    self.report.add(what, f"is recorded forgotten as generation "
                                    f"{gone.generation} where generation {expected} belongs")
                snapshot_id = gone.parent
                expected -= 1
                continue
            try:
                snapshot = self.repo.load_snapshot(snapshot_id)
            except IntegrityError as error:
                self.report.add(what, f"generation {expected}: {_reason(error)}; older "
                                "generations cannot be reached")
                self.head_unreadable |= expected == self._head_generation
                self._note_missing(error, snapshot_key(snapshot_id))
                return
            self.report.snapshots += 1
            if snapshot.generation != expected:
                self.report.add(what, f"claims generation {snapshot.generation} where "
                                f"generation {expected} belongs")
            yield expected, snapshot_id, snapshot
            snapshot_id = snapshot.parent
            expected -= 1
        if expected != -1:
            self.report.add("snapshot chain", f"ends at generation {expected + 1}, not 0")

    # -- trees and manifests ----------------------------------------------------------------

    def _parsed(self, tree_id: str) -> list[tuple[str, FileEntry | str]] | None:
        """A tree's entries, each a file entry or a subtree id; read and judged only once.

        None when the tree itself is unreadable; a bad entry is reported and left out.
        """
        if tree_id in self._trees:
            return self._trees[tree_id]
        what = f"tree {tree_id}"
        try:
            entries = self._loaded.pop(tree_id, None)
            if entries is None:
                entries = self.repo.load_tree(tree_id)
        except IntegrityError as error:
            self.report.add(what, _reason(error))
            self._note_missing(error, tree_key(tree_id))
            self._trees[tree_id] = None
            return None
        parsed: list[tuple[str, FileEntry | str]] = []
        for name, node in sorted(entries.items()):
            found = self._node(what, name, node)
            if found is not None:
                parsed.append((name, found))
        self._trees[tree_id] = parsed
        if len(parsed) < len(entries):
            self._incomplete.add(tree_id)
        return parsed

    def _prefetch(self, tree_ids: list[str]) -> None:
        """Read the trees of one level together; a failure leaves each to be read alone."""
        wanted = [tree_id for tree_id in dict.fromkeys(tree_ids)
                  if tree_id not in self._trees and tree_id not in self._loaded]
        if len(wanted) < 2:
            return
        try:
            # every generation is walked whole: a tree pack is read once, not per level
            self._loaded.update(self.repo.load_trees(wanted, whole_packs=True))
        except IntegrityError:
            pass  # read again one by one below, so each damaged tree is reported by name

    def _note_missing(self, error: IntegrityError, key: str) -> None:
        if "missing from the store" in str(error):
            self.missing.add(key)

    def _node(self, what: str, name: str, node: Any) -> FileEntry | str | None:
        """A file entry, a subtree id, or None after reporting what is wrong with it."""
        try:
            if "/" in name:  # roam writes one path segment per name
                raise IntegrityError(f"entry {name!r} is not a single path segment")
            check_path(name, what)
        except IntegrityError as error:
            self.report.add(what, _reason(error))
            return None
        if isinstance(node, dict) and node.get("t") == "d":
            sub = node.get("tree")
            if isinstance(sub, str):
                return sub
        elif isinstance(node, dict) and node.get("t") == "f":
            try:
                return FileEntry.from_json(name, node, what)
            except IntegrityError as error:
                self.report.add(what, _reason(error))
                return None
        self.report.add(what, f"entry {name!r} is malformed")
        return None

    def _snapshot(self, generation: int, snapshot_id: str, snapshot: Any) -> None:
        files: list[FileEntry] = []
        complete = True
        # level by level, each level's trees read together (a few requests, not one each)
        level: list[tuple[str, str, int]] = [("", str(snapshot.root), 0)]
        while level:
            self._prefetch([tree_id for _prefix, tree_id, depth in level
                            if depth <= MAX_DEPTH])
            below: list[tuple[str, str, int]] = []
            for prefix, tree_id, depth in level:
                if depth > MAX_DEPTH:
                    self.report.add(f"tree {tree_id}", f"nests deeper than {MAX_DEPTH} levels")
                    complete = False
                    continue
                parsed = self._parsed(tree_id)
                complete = complete and parsed is not None and tree_id not in self._incomplete
                if parsed is None:  # which generation loses which folder, for the repair
                    self.report.add(f"snapshot {snapshot_id}", f"generation {generation}: the "
                                    f"files below '{prefix or '/'}' cannot be read (tree "
                                    f"{tree_id[:16]})")
                    self.head_unreadable |= generation == self._head_generation
                for name, found in parsed or ():
                    if isinstance(found, FileEntry):
                        files.append(replace(found, path=prefix + name))
                    else:
                        below.append((f"{prefix}{name}/", found, depth + 1))
            level = below
        what = f"snapshot {snapshot_id}"
        try:
            manifest = check_manifest(files, self.repo.max_file_size,
                                      f"generation {generation}")
        except IntegrityError as error:
            self.report.add(what, _reason(error))
            return
        if complete and (snapshot.files != len(manifest)
                         or snapshot.bytes != sum(e.size for e in manifest.values())):
            self.report.add(what, f"counts {snapshot.files} files / {snapshot.bytes} bytes but "
                            f"its trees hold {len(manifest)} / "
                            f"{sum(e.size for e in manifest.values())}")
        for entry in manifest.values():
            self._file(entry, generation)

    def _file(self, entry: FileEntry, generation: int) -> None:
        self.report.files += 1
        use = _Use(entry.path, generation)
        if entry.size and not entry.blobs:
            self.report.add(f"file {entry.path!r} (generation {generation})",
                            f"has {entry.size} bytes but no blob references")
        for ref in entry.blobs:
            self._refs.setdefault(ref, use)
        self._contents.setdefault((entry.sha256, entry.size, entry.blobs), use)

    # -- packs and indexes ------------------------------------------------------------------

    def _packs_and_indexes(self) -> None:
        report = self.report
        backend = self.session.backend
        packs = set(backend.list("packs/"))
        try:
            lost_packs, void_indexes = self.repo.voided()
        except IntegrityError as error:
            report.add("void records", _reason(error))
            lost_packs, void_indexes = frozenset(), frozenset()
        indexed: dict[str, set[tuple[str, int, int]]] = {}
        named_by: dict[str, str] = {}  # pack -> an index that names it
        stored_again: set[str] = set()  # blobs an index places in a pack that is there
        for key in sorted(backend.list("index/")):
            index_id = key.rpartition("/")[2]
            if index_id in void_indexes:
                continue  # a repair replaced it: whatever it says no longer counts
            report.indexes += 1
            try:
                refs = self.repo.load_index(index_id)
            except IntegrityError as error:
                report.add(f"index {index_id}", _reason(error))
                self.bad_indexes.add(index_id)
                continue
            for blob_id, pack, offset, length in refs:
                if pack in lost_packs:
                    continue
                indexed.setdefault(pack, set()).add((blob_id, offset, length))
                named_by.setdefault(pack, index_id)
                if pack in packs:
                    stored_again.add(blob_id)
        referenced: set[str] = set()
        report.blobs = len({ref[0] for ref in self._refs})
        for ref, use in sorted(self._refs.items()):
            blob_id, pack, offset, length = ref
            referenced.add(pack)
            where = f"(file {use.path!r}, generation {use.generation})"
            if pack not in packs:
                if blob_id in stored_again:
                    continue  # readers find it where a push or a repair stored it again
                report.add(f"pack {pack}", f"is missing from the store {where}")
                self.broken.add(ref)
                self.lost_packs.add(pack)
            elif pack not in lost_packs and blob_id not in stored_again \
                    and (blob_id, offset, length) not in indexed.get(pack, set()):
                # (a blob indexed in another stored pack is found there: a repacked pack's
                # index goes a moment before the pack itself, or a crash in between)
                report.add(f"blob {blob_id[:16]}", f"in {pack} is not listed by any index "
                           f"{where}")
                self.unlisted.setdefault(pack, set()).add(ref)
        # A pack an index names that the store no longer holds, its blobs read from other
        # copies (or needed by no generation): not a problem of any generation, so not
        # reported (a prune deletes such an index a sweep after the pack), but the repair
        # voids it so no push or reader goes there first.
        self.stale_packs = set(indexed) - packs - self.lost_packs
        # format 2: the tree packs of the trees read are referenced too
        places = self.repo.tree_places()
        referenced.update(ref[1] for tree_id, parsed in self._trees.items()
                          if parsed is not None for ref in places.get(tree_id, ()))
        report.packs = len(referenced & packs)
        report.unreferenced_packs = len(packs - referenced)

    # -- --read-data ------------------------------------------------------------------------

    def _read_data(self) -> None:
        report = self.report
        bad: set[BlobRef] = set()
        read: set[BlobRef] = set()
        # in pack order, so neighbouring blobs come in one ranged read (a pack span)
        contents = sorted(self._contents.items(),
                          key=lambda item: ([(ref[1], ref[2]) for ref in item[0][2]], item[0]))
        self.session.deadline.size_to(sum(size for (_sha, size, _blobs) in self._contents),
                                      len(self._contents))
        results = self.repo.read_blobs([ref for (_sha, _size, blobs), _use in contents
                                        for ref in blobs], tolerant=True)
        try:
            for (sha, size, blobs), use in contents:
                digest = hashlib.sha256()
                total = 0
                failed = False
                for ref in blobs:  # each result is taken, so the next file's line up
                    result = next(results)
                    if failed:
                        continue
                    data = self._blob(ref, result, use, bad, read)
                    if data is None:
                        failed = True
                        continue
                    digest.update(data)
                    total += len(data)
                if not failed and (total != size or digest.hexdigest() != sha):
                    report.add(f"file {use.path!r} (generation {use.generation})",
                               f"content is {total} bytes with SHA-256 "
                               f"{digest.hexdigest()[:16]}, its entry says {size} bytes with "
                               f"{sha[:16]}")
        finally:
            results.close()  # type: ignore[attr-defined]

    def _blob(self, ref: BlobRef, result: object, use: _Use, bad: set[BlobRef],
              read: set[BlobRef]) -> bytes | None:
        if ref in bad:
            return None
        if isinstance(result, IntegrityError):
            self.report.add(f"blob {ref[0][:16]}", f"{_reason(result)} (file {use.path!r}, "
                            f"generation {use.generation})")
            bad.add(ref)
            self.broken.add(ref)
            self.lost_packs.add(ref[1])  # damaged: what it holds is never counted on again
            return None
        data: bytes = result[0]  # type: ignore[index]
        if ref not in read:
            read.add(ref)
            self.report.blobs_read += 1
            self.report.bytes_read += len(data)
        return data


def lost_head_error(session: Session) -> UserError | None:
    """For a store without HEAD that still holds snapshots: its HEAD was lost, not never made.

    Founding a fleet there would strand every device of the old one; the error names the
    repair instead. None when the store holds no snapshot (an empty store).
    """
    held = sum(1 for _key in session.backend.list("snapshots/"))
    if not held:
        return None
    return UserError(f"the store has no HEAD but holds {held} snapshot(s): its HEAD was "
                     "lost; run roam check --repair on a device that joined this fleet "
                     f"(see {RECOVERY_DOC})")


def _held(read: Callable[[], _T]) -> _T | RoamError:
    """What `read` returns, or the roam error it raised (to raise later: `_raised`)."""
    try:
        return read()
    except RoamError as error:
        return error


def _raised(held: _T | RoamError) -> _T:
    if isinstance(held, RoamError):
        raise held
    return held


def check(session: Session, *, read_data: bool = False) -> CheckReport:
    """Verify the store behind `session`; the report lists every problem found."""
    return Checker(session, read_data=read_data).run()

"""`roam check --repair`: put back what the store lost, from what this device still holds.

Nothing in the store is overwritten or deleted (objects are immutable): a repair only adds.

- HEAD, when it is missing, damaged or older than this device's floor, is published again
  at the newest authentic snapshot (`roam_core.engine.republish`).
- Trees and snapshots that are missing come back from this device's verified object cache,
  and the trees of the generation it last synced from its own record of that generation.
- Blobs that no copy of can be read (their pack lost, or damaged as `--read-data` found) are
  sealed again from this device's files, when a file's bytes still match the SHA-256 the
  manifest records, into new packs with their own indexes. Readers then find them there.
- A void record names the lost or damaged packs and the unreadable indexes, so no push and
  no reader ever counts on them again; an index lost while its pack survives is rewritten
  from the references the trees hold.

Then the store is checked again; whatever is still wrong is reported (which object, which
generation and path), since no device-side copy of it exists here.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import BinaryIO

from roam_core import crypto
from roam_core.engine.check import Checker, CheckReport
from roam_core.engine.republish import publish_staged, republish_head
from roam_core.engine.rewrite import republish_generation
from roam_core.engine.session import Session
from roam_core.engine.state import LocalState
from roam_core.errors import IntegrityError, ObjectExists
from roam_core.store import codec
from roam_core.store.manifest import BlobRef
from roam_core.store.packer import Packer
from roam_core.store.presence import PackPresence
from roam_core.store.repository import Repository

#: Cached plaintexts that may be sealed again, by the folder the cache keeps them in.
_CACHED = {"trees/": ("trees", crypto.KIND_TREE), "snapshots/": ("snapshots",
                                                                   crypto.KIND_SNAPSHOT)}


@dataclass
class RepairReport:
    """What a repair put back, and the check that followed it."""

    blobs: int = 0
    bytes: int = 0
    trees: int = 0
    snapshots: int = 0
    indexes: int = 0
    voided_packs: int = 0
    #: The generation HEAD was published at again (None: HEAD was sound).
    head: int | None = None
    #: The new generation this device's unreadable one was published again as (None: none).
    republished: int | None = None
    remaining: CheckReport = field(default_factory=CheckReport)

    @property
    def objects(self) -> bool:
        """Whether any object was added to the store (HEAD aside)."""
        return bool(self.blobs or self.trees or self.snapshots or self.indexes
                    or self.voided_packs)

    def as_json(self) -> dict[str, object]:
        return {"blobs": self.blobs, "bytes": self.bytes, "trees": self.trees,
                "snapshots": self.snapshots, "indexes": self.indexes,
                "voided_packs": self.voided_packs, "head": self.head,
                "republished": self.republished,
                "remaining": self.remaining.as_json()}


def repair(session: Session, *, read_data: bool = False) -> RepairReport:
    """Repair the store behind `session` as far as this device can; then check it again."""
    state = session.require_state()
    result = RepairReport()
    # HEAD first: every other object is found by following it
    result.head = republish_head(session, Repository(
        session.backend, session.keys, None, max_file_size=session.max_file_size), state)
    checker = Checker(session, read_data=read_data)
    checker.run()
    tried: set[str] = set()
    while checker.missing - tried:
        # a check stops at a missing tree: the trees below one put back are found by the
        # next, and put back from the cache in turn (each key tried once)
        _restore_objects(session, checker, state, result, checker.missing - tried,
                         from_base=not tried)
        tried |= checker.missing
        checker = Checker(session, read_data=read_data)  # blobs below restored trees too
        checker.run()
    _restore_blobs(session, checker, state, result)
    for pack, refs in sorted(checker.unlisted.items()):
        if pack not in checker.lost_packs:
            checker.repo.write_index(pack, sorted(refs), note="rewritten by roam check --repair")
            result.indexes += 1
    lost = checker.lost_packs | checker.stale_packs
    if lost or checker.bad_indexes:
        checker.repo.write_void(lost, checker.bad_indexes)
        result.voided_packs = len(lost)
    if result.objects:
        publish_staged(checker.repo, "repair")
    if checker.head_unreadable:
        result.republished = republish_generation(session, Repository(
            session.backend, session.keys, None, max_file_size=session.max_file_size), state)
    result.remaining = Checker(session, read_data=read_data).run()
    return result


def _restore_objects(session: Session, checker: Checker, state: LocalState,
                     result: RepairReport, missing: set[str], from_base: bool) -> None:
    """The `missing` trees and snapshots, from the object cache.

    Then (`from_base`, the first round) the missing trees of this device's base generation.
    """
    repo = checker.repo
    for key in sorted(missing):
        prefix = key[:key.index("/") + 1]
        folder, kind = _CACHED[prefix]
        plain = session.repo.cached_copy(kind, folder, key.rpartition("/")[2])
        if plain is not None and _put(repo, key, kind, plain):
            if kind == crypto.KIND_TREE:
                result.trees += 1
            else:
                result.snapshots += 1
    trees = {key for key in missing if key.startswith("trees/")}
    if not trees or not state.base or not from_base:
        return
    # the trees of the generation this device synced are made again from its own record of
    # it; those still in the store are skipped, so only missing ones are written
    present = {key.rpartition("/")[2] for key in session.backend.list("trees/")}
    repo.seen_trees = set(present)
    repo.write_manifest(state.base_manifest())
    result.trees += len(repo.seen_trees - present)


def _put(repo: Repository, key: str, kind: bytes, plain: bytes) -> bool:
    object_id = key.rpartition("/")[2]
    sealed = crypto.seal(repo.keys.encryption, kind, object_id, codec.encode(plain))
    try:
        repo.backend.put_new(key, sealed)
    except ObjectExists:
        return False  # there after all (damaged objects cannot be replaced in place)
    return True


def _restore_blobs(session: Session, checker: Checker, state: LocalState,
                   result: RepairReport) -> None:
    """Seal again, from this device's files, every blob no copy of can be read."""
    broken = {ref[0] for ref in checker.broken}
    if not broken:
        return
    wanted = {sha for (sha, _size, refs) in checker.contents
              if any(ref[0] in broken for ref in refs)}
    repo = checker.repo
    known: MutableMapping[str, BlobRef]
    try:
        known = repo.known_blobs()  # a view over the catalogue: no dict of every blob
    except IntegrityError:
        known = {}  # an unreadable index: upload every wanted blob rather than guess
    # blobs found broken are sealed again even where an index still names them
    for blob in broken:
        known.pop(blob, None)
    packer = Packer(repo, known, present=PackPresence(repo.backend))
    done: set[str] = set()
    for rel, entry in sorted(state.base_manifest().items()):
        if entry.sha256 not in wanted or entry.sha256 in done:
            continue
        handle = _matching(session, state, rel, entry.sha256)
        if handle is None:
            continue
        with handle:
            packer.add_file(handle)
        done.add(entry.sha256)
    packer.finish()
    result.blobs = len(packer.locations)
    result.bytes = packer.uploaded_bytes


def _matching(session: Session, state: LocalState, rel: str, sha256: str) -> BinaryIO | None:
    """This device's bytes of `rel`, opened, only when they hash to `sha256`."""
    projection = state.projections.get(rel)
    if projection is not None:  # a config file travels as its shared projection
        data = projection.encode()
        return io.BytesIO(data) if hashlib.sha256(data).hexdigest() == sha256 else None
    path = session.root / rel
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
        if digest.hexdigest() != sha256:
            return None
        return path.open("rb")
    except OSError:
        return None


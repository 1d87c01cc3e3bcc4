"""`roam key rotate`: move the whole store, history included, to a new archive key.

Every name in the store is a keyed hash, so a new key renames everything: blobs are read
pack by pack, re-sealed under the new key into new packs (a blob stored once stays stored
once), then every generation's trees and snapshot are written again pointing at the new
names, oldest first, keeping its number, device, time and roster. Then HEAD is published
under the new key at the same generation and store id (so every device's floor and merge
base stay valid), and everything the old key opened is deleted, but for one tombstone that
tells old-key devices what happened (see `roam_core.store.rotation`).

Each step is recorded in a journal sealed under the new key before the next starts, so a
kill at any point loses nothing and a rerun with the same two keys continues: until HEAD
moves, the old store is untouched and complete; after, the journal lists what is left to
delete. An invocation stops between steps when the operation's deadline comes near, and
says to run it again. HEAD is swapped by compare-and-swap: a device still pushing under
the old key meanwhile makes the swap fail, and the rotation re-seals what it added first.
"""

from __future__ import annotations

import contextlib
import dataclasses
import secrets as random_tokens
import time
from collections.abc import Iterable, Iterator

from roam_core import crypto
from roam_core import deadline as deadline_module
from roam_core.engine import lease as lease_module
from roam_core.engine import rekeyed
from roam_core.engine import remote as remote_module
from roam_core.engine.journal import kill_point
from roam_core.engine.progress import ProgressSink
from roam_core.engine.push import now_iso
from roam_core.engine.reseal import Paused, ResealSteps, RotateResult
from roam_core.engine.session import Session
from roam_core.engine.state import LocalState, save_state
from roam_core.errors import ArchiveKeyError, IntegrityError, RefConflict, UserError
from roam_core.store import rotation
from roam_core.store.objects import Head
from roam_core.store.repository import Repository
from roam_core.store.rotation import journal_prefix, read_record, write_record
from roam_core.store.rotation_journal import Journal, Recording

#: Object prefixes this roam knows how to rotate (or leave, for rotation's own records);
#: a store holding anything else is refused before any work, never half re-keyed.
KNOWN_PREFIXES = ("packs/", "index/", "trees/", "snapshots/", "voids/", "marks/", "forgets/",
                  rotation.ROTATION_PREFIX, rotation.TOMBSTONE_PREFIX)
#: Sealed JSON objects an interrupted old-key push or prune may leave behind.
LEFTOVER_RECORDS = (("snapshots/", crypto.KIND_SNAPSHOT), ("voids/", crypto.KIND_VOID),
                    ("marks/", crypto.KIND_MARK), ("forgets/", crypto.KIND_FORGET))
#: Keys per `doomed` record (and per delete call).
DOOMED_PER_RECORD = 2000
#: Attempts at publishing HEAD while old-key devices keep pushing.
PUBLISH_ATTEMPTS = 3


class Rotation(ResealSteps):
    """One invocation of a rotation from the session's key to `new_keys`."""

    def __init__(self, session: Session, new_keys: crypto.Keys,
                 progress: ProgressSink | None = None) -> None:
        self.session = session
        self.backend = session.backend
        self.old = session.repo
        self.new_keys = new_keys
        self.recording = Recording(session.backend)
        self.new = Repository(self.recording, new_keys, None,
                              max_file_size=session.max_file_size)
        self.new.ignore_voids()  # a format-2 write asks which packs are voided
        self.progress = progress
        self.result = RotateResult(fingerprint=new_keys.fingerprint)
        self.journal = Journal()
        self.lease: lease_module.Lease | None = None
        self._renewed = time.monotonic()
        budget = session.deadline.budget or 900.0
        #: stop between steps with this much of the budget left
        self.margin = min(120.0, budget / 4)

    # -- the whole rotation ----------------------------------------------------------------

    def run(self, state: LocalState) -> RotateResult:
        old_fp, new_fp = self.session.keys.fingerprint, self.new_keys.fingerprint
        if old_fp == new_fp:
            raise UserError("the new key is the key the store already uses; give another one")
        self._refuse_other_rotation()
        self.journal = Journal.load(self.backend, self.new_keys)
        self.result.resumed = bool(self.journal.records)
        try:
            published = self._published_head()
            if published is None:
                # one deleter at a time: a prune never runs beside a rotation
                self.lease = lease_module.acquire(self.old, state.id, state.device,
                                                  "key rotation")
                head = self._before_publish(state)
            else:
                lease_module.reseal(self.old, self.new)  # a run cut right after HEAD moved
                self.lease = lease_module.acquire(self.new, state.id, state.device,
                                                  "key rotation")
                head = published
            self.result.generation = head.generation
            self._sweep(head)
        except Paused:
            return self.result
        finally:
            if self.lease is not None:
                with contextlib.suppress(lease_module.LeaseHeld):
                    self.lease.release()
        self.result.complete = True
        return self.result

    def _refuse_other_rotation(self) -> None:
        mine = journal_prefix(self.new_keys)
        for key in self.backend.list(rotation.ROTATION_PREFIX):
            if not key.startswith(mine):
                other = key[len(rotation.ROTATION_PREFIX):].partition("/")[0]
                raise UserError(
                    f"a rotation to another key (fingerprint {other}) is in progress in this "
                    "store; run roam key rotate again with that key in ROAM_NEW_ARCHIVE_KEY "
                    "to finish it")

    def _published_head(self) -> Head | None:
        """HEAD when it already opens under the new key (this rotation got that far)."""
        try:
            head = self.new.read_head()
        except ArchiveKeyError:
            return None
        if head is None:
            raise UserError("the store has no HEAD; nothing to rotate")
        if not self.journal.records:
            self.result.already = True
        return head

    @staticmethod
    def _remaining() -> float | None:
        current = deadline_module.current()
        return None if current is None else current.remaining()

    def _check_time(self) -> None:
        if self.lease is not None \
                and time.monotonic() - self._renewed > lease_module.LEASE_SECONDS / 3:
            self.lease.renew()
            self._renewed = time.monotonic()
        remaining = self._remaining()
        if remaining is not None and remaining < self.margin:
            self.result.notes.append("paused before the operation's deadline; run roam key "
                                     "rotate again (same keys) to continue where it stopped")
            raise Paused

    # -- before HEAD moves: the old store stays whole ------------------------------------------

    def _before_publish(self, state: LocalState) -> Head:
        self._refuse_unknown_objects()
        head = remote_module.read_verified_head(self.session, state)
        if head is None:
            raise UserError("the store has no HEAD; nothing to rotate")
        # the new key cannot read HEAD yet, so it would write the founding default: the store
        # keeps its format (a format-1 fleet may hold devices that read no tree packs)
        self.new.format = head.format
        started = self.journal.started
        if started is None:
            write_record(self.backend, self.new_keys, rotation.STARTED,
                         {"from": self.session.keys.fingerprint, "device": state.device,
                          "started": now_iso(), "store": head.store})
        elif started.get("from") != self.session.keys.fingerprint:
            raise UserError("this rotation was started from another key than ROAM_ARCHIVE_KEY "
                            f"(fingerprint {started.get('from')}); set that one to continue")
        for _attempt in range(PUBLISH_ATTEMPTS):
            self._reseal_blobs()
            self._reseal_snapshots()
            self._reseal_forgets()
            published = self._publish(state, head)
            if published is not None:
                return published
            # an old-key device pushed meanwhile: re-seal what it added, then try again
            head = remote_module.read_verified_head(self.session, state)
            assert head is not None
        raise UserError("devices kept pushing under the old key while the rotation tried to "
                        "publish; run roam key rotate again (nothing was lost)")

    def _refuse_unknown_objects(self) -> None:
        for key in self.backend.list(""):
            if not key.startswith(KNOWN_PREFIXES):
                raise UserError(f"the store holds {key}, a kind of object this roam cannot "
                                "re-key; upgrade roam before rotating the key")

    def _publish(self, state: LocalState, head: Head) -> Head | None:
        """List what the old key opens, leave the tombstone, swap HEAD (None: it moved)."""
        new_snapshot = self.journal.snapshots.get(head.snapshot)
        if new_snapshot is None:
            return None
        self._check_time()
        keep = self.journal.wrote
        token = random_tokens.token_hex(8)
        doomed = (key for key in self.backend.list("")
                  if key not in keep and not key.startswith((rotation.ROTATION_PREFIX,
                                                             rotation.TOMBSTONE_PREFIX)))
        count = 0
        for number, chunk in enumerate(_chunks(doomed, DOOMED_PER_RECORD)):
            write_record(self.backend, self.new_keys, f"doomed-{token}-{number:06d}",
                         {"keys": chunk})
            count += len(chunk)
        when = now_iso()
        write_record(self.backend, self.new_keys, f"publish-{token}",
                     {"generation": head.generation, "snapshot": new_snapshot,
                      "doomed": count})
        self.journal.publishes[token] = {"generation": head.generation,
                                         "snapshot": new_snapshot}
        rotation.write_tombstone(self.backend, self.session.keys, when, state.device)
        kill_point("rotate:doomed")
        rotated = Head(head.generation, new_snapshot, head.store, state.device, when)
        version = self._swap_head(rotated, head)
        if version is None:
            return None
        kill_point("rotate:head")
        # LEASE is sealed under the HEAD sub-key too: new-key devices read it on every push
        lease_module.reseal(self.old, self.new)
        if self.lease is not None:
            self.lease.repo = self.new
            self.lease.record = lease_module.read_lease(self.new)
        return dataclasses.replace(rotated, version=version)

    def _swap_head(self, rotated: Head, seen: Head) -> str | None:
        """Swap HEAD from `seen`; None when another generation came first.

        A HEAD whose version moved without a new generation (a backend whose refs share
        one version) is swapped again from where it is.
        """
        expected = seen.version
        for _attempt in range(PUBLISH_ATTEMPTS):
            try:
                return self.new.write_head(rotated, expected)
            except RefConflict:
                now = self.old.read_head()
                if now is None or (now.generation, now.snapshot) != (seen.generation,
                                                                     seen.snapshot):
                    return None
                expected = now.version
        return None

    # -- after HEAD moved: delete what the old key opens ---------------------------------------

    def _sweep(self, head: Head) -> None:
        if self.result.already:
            self._adopt_here(head)
            self._delete_leftovers()
            return
        token = self._winning_publish(head)
        prefix = journal_prefix(self.new_keys)
        self._adopt_here(head)
        if token is not None:
            for key in sorted(self.backend.list(f"{prefix}doomed-{token}-")):
                self._check_time()
                keys = [str(item) for item in read_record(self.backend, self.new_keys,
                                                          key)["keys"]]
                self.backend.delete(keys)
                self.result.deleted += len(keys)
                kill_point("rotate:sweep")
                self.backend.delete([key])
        # the journal last, its start record very last: a rerun finds a finished rotation
        records = sorted(self.backend.list(prefix))
        start = prefix + rotation.STARTED
        self.backend.delete([key for key in records if key != start])
        self.backend.delete([start])

    def _delete_leftovers(self) -> None:
        """Delete what the old key opens that appeared after the rotation listed it.

        An old-key device that read HEAD before it moved may still upload its packs and
        records and then fail to swap HEAD: those objects are unreferenced and sealed under
        the old key. A rerun once the fleet has settled finds them: every index, snapshot
        and record that opens under the old key, and the pack each such index names.
        """
        doomed: list[str] = []
        for key in self.backend.list("index/"):
            try:
                refs = self.old.load_index(key.rpartition("/")[2])
            except IntegrityError:
                continue
            doomed.append(key)
            doomed.extend(sorted({ref[1] for ref in refs}))
        for prefix, kind in LEFTOVER_RECORDS:
            for key in self.backend.list(prefix):
                try:
                    self.old.read_record(kind, key.rpartition("/")[2], key, prefix)
                except IntegrityError:
                    continue
                doomed.append(key)
        if doomed:
            self.backend.delete(doomed)
            self.result.deleted += len(doomed)

    def _winning_publish(self, head: Head) -> str | None:
        """Which publish attempt's HEAD is on the store's chain (its doomed list is the one)."""
        publishes = self.journal.publishes
        if not publishes:
            return None
        lowest = min(int(str(record["generation"])) for record in publishes.values())
        snapshot_id, generation = head.snapshot, head.generation
        while True:
            for token, record in publishes.items():
                if record["snapshot"] == snapshot_id:
                    return token
            if generation <= lowest:
                return None
            snapshot = self.new.load_snapshot(snapshot_id)
            if not snapshot.parent:
                return None
            snapshot_id, generation = snapshot.parent, snapshot.generation - 1

    def _adopt_here(self, head: Head) -> None:
        """This device's own base, re-pointed at the new names (as other devices do later)."""
        state = self.session.require_state()
        new_snapshot = self.journal.snapshots.get(state.snapshot or "")
        if new_snapshot is not None and len(self.journal.blobs) \
                and state.generation is not None and state.base:
            # this run's map of re-sealed blobs re-points the base without reading the new
            # generation back (its manifest beside the base was a third copy, issue 23)
            state.set_base(rekeyed.remapped(state.take_base(), self.journal.blobs.get))
            state.snapshot = new_snapshot
        else:
            view = remote_module.RemoteView(head, self.new.load_snapshot(head.snapshot),
                                            self.new)
            rekeyed.rebase(state, self.new, view)
        save_state(self.session.state_dir, state)
        rekeyed.note_key(self.session.state_dir, state.store, self.new_keys)


def _chunks(items: Iterable[str], size: int) -> Iterator[list[str]]:
    chunk: list[str] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def rotate(session: Session, new_key: bytes, progress: ProgressSink | None = None
           ) -> RotateResult:
    """Rotate the store to `new_key` (resumable: rerun with the same keys to continue)."""
    state = session.require_state()
    if not session.backend.capabilities.deletes:
        raise UserError(f"the {session.core.backend} backend cannot "
                        "delete objects, so roam key rotate could not remove what the old "
                        "key opens; nothing was changed")
    return Rotation(session, crypto.Keys.derive(new_key), progress).run(state)

"""Push: publish the home's shared files as a new generation, uploading only what is new.

Write order is packs, then trees and the snapshot, then HEAD by compare-and-swap, so a
crash leaves only unreferenced objects. Entries of the base generation that this device's
rules cannot see are carried forward unchanged: a narrower device never deletes them.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from roam_core import __version__
from roam_core.engine import force_guard, inventory, rekeyed
from roam_core.engine import lease as lease_module
from roam_core.engine import remote as remote_module
from roam_core.engine import roster as roster_module
from roam_core.engine.filemodes import home_files
from roam_core.engine.journal import kill_point
from roam_core.engine.outgoing import NewManifest, Outgoing
from roam_core.engine.progress import ProgressSink
from roam_core.engine.push_reads import PushReads
from roam_core.engine.scan import (
    LocalFile,
    StatCache,
    fill_digests,
)
from roam_core.engine.session import Session, hermes_version
from roam_core.engine.state import LocalState, raise_floor, save_state
from roam_core.engine.status import collector_paused
from roam_core.errors import ConflictError, RefConflict, UserError
from roam_core.scope.never import allowed_credentials
from roam_core.scope.walk import hidden_by
from roam_core.secretscan.scan import Finding, Scanner, SecretsFound

if TYPE_CHECKING:
    from roam_core.secretscan.worker import Handover, WalkFeed, WorkerScan
from roam_core.store.gate import GateClosed, UploadGate
from roam_core.store.manifest import FileEntry, Manifest, over_limits, synced_mode
from roam_core.store.objects import Head, Snapshot, snapshot_key, tree_key
from roam_core.store.packer import Packer
from roam_core.store.presence import PackPresence
from roam_core.store.repository import Repository
from roam_core.tiers import sessions as sessions_tier
from roam_core.tiers.archive import is_archive
from roam_core.types import Scope


@dataclass
class PushResult:
    generation: int | None = None
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    carried: int = 0
    bytes_changed: int = 0
    uploaded_bytes: int = 0
    dry_run: bool = False
    nothing: bool = False
    archive: dict[str, object] | None = None
    notes: list[str] = field(default_factory=list)
    #: shared paths the walk left out, each {"path", "reason"} (a symlink, an odd name...)
    skipped: list[dict[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    scanned: int = 0
    scan_seconds: float = 0.0
    #: the scan's processor time (this thread's and its pool workers'): unlike its wall
    #: time, not stretched by other work on a busy machine
    scan_cpu_seconds: float = 0.0
    #: how long the push waited for the scan after its packing (the scan runs beside it)
    scan_wait_seconds: float = 0.0
    #: how long the packing stood still for the verdict (packs held at the gate filled its
    #: budget): the part of the scan's cost that is not the cores it shares
    scan_stall_seconds: float = 0.0
    #: files the scan worker process scanned, and why the push took the rest over (if it did)
    scan_worker_files: int = 0
    scan_handover: str | None = None

    def as_json(self) -> dict[str, object]:
        return {"secret_findings": [finding.as_json() for finding in self.findings],
                "secret_scan_files": self.scanned,
                "secret_scan_seconds": round(self.scan_seconds, 4),
                "secret_scan_cpu_seconds": round(self.scan_cpu_seconds, 4),
                "secret_scan_wait_seconds": round(self.scan_wait_seconds, 4),
                "secret_scan_stall_seconds": round(self.scan_stall_seconds, 4),
                "secret_scan_worker_files": self.scan_worker_files,
                "secret_scan_handover": self.scan_handover,
                "generation": self.generation, "added": self.added, "changed": self.changed,
                "removed": self.removed, "carried_forward": self.carried,
                "bytes_changed": self.bytes_changed, "uploaded_bytes": self.uploaded_bytes,
                "dry_run": self.dry_run, "nothing_to_push": self.nothing,
                "session_archive": self.archive, "notes": self.notes,
                "skipped": self.skipped}


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0).isoformat()


def _reference_rows(state: LocalState, remote: Manifest | None
                    ) -> Callable[[], Iterator[tuple[str, str, int]]]:
    """(path, sha256, mode) of each reference path in path order, read afresh at each call.

    The base straight from the state's rows; `remote` (a forced push behind the store)
    sorted from its manifest.
    """
    if remote is None:
        return state.iter_base_digests
    return lambda: ((rel, remote[rel].sha256, remote[rel].mode) for rel in sorted(remote))


def _merged(names: list[str], rows: Iterable[tuple[str, str, int]]
            ) -> Iterator[tuple[str, tuple[str, str, int] | None]]:
    """Every path of the sorted walk `names` and of `rows` once, in path order.

    Each comes with its reference row, None when the reference lacks it.
    """
    at = 0
    for row in rows:
        rel = row[0]
        while at < len(names) and names[at] < rel:
            yield names[at], None
            at += 1
        if at < len(names) and names[at] == rel:
            at += 1
        yield rel, row
    for rel in names[at:]:
        yield rel, None


def _kept(reference: Manifest, left_out: set[str], carried: Mapping[str, None]) -> Manifest:
    """The reference's entries that go into the new generation as they are.

    A kept file travels as shared under its own path. The entries carried forward unseen
    (`carried`) are left to the caller, which adds them after these, as they are.
    """
    manifest: Manifest = {}
    for rel, kept in reference.items():
        if rel in left_out or rel in carried:
            continue
        manifest[rel] = kept if kept.scope == "shared" and kept.path == rel else \
            FileEntry(rel, kept.size, kept.mode, kept.sha256, "shared", kept.blobs)
    return manifest


def _displaced(rel: str, files: dict[str, LocalFile], folders: set[str]) -> bool:
    """Whether a file published from here sits at a folder of `rel`, or below `rel`."""
    parts = rel.split("/")
    return rel in folders or any("/".join(parts[:depth]) in files
                                 for depth in range(1, len(parts)))


def check_limits(files: Iterable[str]) -> None:
    """Refuse, before anything is uploaded, a path no reader of the format could open."""
    problems = over_limits(files)
    if problems:
        raise UserError(problems[0][1])


def push(session: Session, *, force: bool = False, dry_run: bool = False,
         progress: ProgressSink | None = None,
         confirm: force_guard.Confirm | None = None) -> PushResult:
    """Publish a new generation; `ConflictError` (exit 2) when the remote moved ahead.

    A forced push that removes much of the remote asks `confirm` first (`force_guard`).
    """
    started = time.monotonic()
    state = session.require_state()
    # the reads that do not need HEAD travel beside it (a dry run uploads nothing: it
    # reads them only if it gets that far, as before)
    reads = PushReads(session.repo, eager=not dry_run)
    from roam_core.secretscan.worker import early_workers

    try:
        # a scan worker started early and never used ends here; the cycle collector waits
        # until the end (the records a push makes per file hold no cycles: docs/decisions.md)
        with early_workers(), collector_paused():
            return _push(session, state, reads, started, force=force, dry_run=dry_run,
                         progress=progress, confirm=confirm)
    finally:
        reads.close()


def _push(session: Session, state: LocalState, reads: PushReads, started: float, *,
          force: bool, dry_run: bool, progress: ProgressSink | None,
          confirm: force_guard.Confirm | None) -> PushResult:
    view = remote_module.require_remote(session, state)
    rekeyed.adopt(session, state, view)  # after a key rotation: the base's new blob names
    behind = view.head.generation != state.generation
    if behind and not force:
        raise remote_module.behind_error()
    # Not behind: the remote generation is the base. Its trees are known from the cache
    # when this device wrote or applied it, so none has to be read back to skip it.
    base_folders = None
    if not behind:
        if state.snapshot == view.head.snapshot:
            base_folders = session.repo.recall_trees(view.head.snapshot)
        if base_folders is None:
            view.read_trees()
    present = PackPresence(session.backend)
    reads.probe_trees(base_folders, present)
    scope = session.scope
    host_keys = scope.host_keys
    inventory.refresh(session.root)  # roam's own file, so a dry run previews it too
    # archive/sessions/ in the store is the session archive's; a home file there never travels
    feed = _scan_feed(session, state, dry_run or force)
    files = {rel: item for rel, item in home_files(session, state,
                                                   feed.found if feed else None).items()
             if not is_archive(rel)}
    if feed is not None:
        feed.walked()
    skipped = list(scope.skipped)
    hidden = hidden_by(skipped)
    check_limits(files)
    limit = session.max_file_size
    for item in files.values():
        if item.size > limit:
            raise UserError(f"{item.rel} is {item.size // (1 << 20)} MiB, over max_file_mb "
                            f"({limit // (1 << 20)}); raise it or add a local: rule for it")
    # The session archive is exported before the scan compares anything: its transcripts
    # join the files under this device's namespace (archive/sessions/<device>/...).
    archive = sessions_tier.stage(session)
    files.update({rel: LocalFile(rel, item.location, item.size, item.mode, item.signature)
                  for rel, item in archive.files.items()})
    names = sorted(files)
    # The reference (the base, or the remote when a forced push is behind) is compared as
    # (path, digest, mode) rows in path order, merged with the walk: its entries are read
    # only once the walk's records are gone (issue 22: holding both was most of a push).
    rows = _reference_rows(state, view.manifest if behind else None)
    cache = StatCache(session.state_dir / "cache")
    cache.prime(files)  # every file, not only those compared below: the rest look theirs up
    # A path the reference lacks is new whatever its bytes: it is read once, while packing,
    # instead of once to digest it and again to pack it (a first push reads every byte once).
    compare = {rel: files[rel] for rel, row in _merged(names, rows())
               if rel in files and (dry_run or files[rel].is_config or row is not None)}
    fill_digests(compare, cache, host_keys)
    for rel, item in files.items():
        if rel not in compare:
            item.sha256 = cache.lookup(item)

    result = PushResult(dry_run=dry_run, notes=list(archive.notes),
                        skipped=[{"path": rel, "reason": why} for rel, why in sorted(skipped)])
    result.notes += [f"warning: sharing the credential file {rel} on purpose "
                     "(never_list_exceptions)"
                     for rel in allowed_credentials(session.core.never_list_exceptions)
                     if rel in files]
    if session.core.sync_sessions:
        result.archive = archive.as_json()
    to_send: list[LocalFile] = []
    unseen = set(state.unseen)
    folders = {rel.rpartition("/")[0] for rel in files}
    for folder in list(folders):
        while folder:
            folders.add(folder)
            folder = folder.rpartition("/")[0]
    # what of the reference does not go into the new generation as it is: paths sent anew,
    # removed, or vanished while we looked; and the paths carried forward unseen
    left_out: set[str] = set()
    carried: dict[str, None] = {}  # in path order
    for rel, row in _merged(names, rows()):
        found = files.get(rel)
        if found is not None:
            item = found
            if item.sha256 is None and rel in compare:
                if row is not None:
                    left_out.add(rel)
                continue  # vanished while we looked
            if row is not None and item.sha256 == row[1] \
                    and synced_mode(item.mode) == synced_mode(row[2]):
                continue  # kept: its entry is the reference's
            to_send.append(item)
            (result.changed if row is not None else result.added).append(rel)
            result.bytes_changed += item.size
            if row is not None:
                left_out.add(rel)
            continue
        # Only this device's own archive namespace is ever rewritten; every other device's
        # is carried forward below, whatever this device's rules say.
        # A path this device never received because its rules hid it is not a deletion
        # when the rules later widen: it was never here to be deleted.
        # So is a path this device cannot see right now (a symlink, an unreadable folder).
        # Unless a file here has taken its place (a type change): the local shape wins.
        if archive.replaces(rel) or (not is_archive(rel) and rel not in unseen
                                     and scope.classify(rel) is Scope.SHARED
                                     and not hidden(rel)) or _displaced(rel, files, folders):
            result.removed.append(rel)
            left_out.add(rel)
        else:
            carried[rel] = None
            result.carried += 1
    projections = {item.rel: item.projection(host_keys).decode()
                   for item in files.values() if item.is_config}
    # From here on only the files being sent are needed: the walk's record of every other
    # file goes now, before the reference's entries, the store's blob table and the trees
    # are read or built, so the push never holds them all at once (issue 22). The stat
    # cache's stale rows are those the primed files lacked: its save needs no list of files.
    del files, compare, names, folders
    base = state.base_manifest()
    reference = view.manifest if behind else base
    manifest = _kept(reference, left_out, carried)
    for rel in carried:  # exactly as the reference has it
        entry = reference[rel]
        manifest[rel] = entry
    # the plugin inventory alone is not worth a generation: it travels with real changes
    only_inventory = [item.rel for item in to_send] == [inventory.INVENTORY]
    if (not to_send or only_inventory) and not result.removed \
            and all(rel in manifest or rel == inventory.INVENTORY for rel in reference):
        if only_inventory:
            result.added = [rel for rel in result.added if rel != inventory.INVENTORY]
            result.changed = [rel for rel in result.changed if rel != inventory.INVENTORY]
            result.bytes_changed = 0
        result.nothing = True
        cache.save(())
        return result
    # Before anything is uploaded: a finding stops the push (the dry run lists it). A plain
    # push scans beside the packing, its sealed packs held behind a gate until the scan
    # passed; a dry run, a forced push (its confirmation) and redacted memory copies (they
    # change what is packed) decide on the scan first (docs/decisions.md).
    beside = not dry_run and not force and not session.core.redact_memories
    gate = UploadGate() if beside else None
    # the files sent, as compact columns from here on (each record made afresh when read):
    # on a first push, one record per file of the home held to the end of the packing was
    # most of the push's peak (issue 22); a scan first may still redact the records
    sending: Sequence[LocalFile] = to_send
    if beside:
        sending, to_send = Outgoing(to_send), []
    verdict = _scan_beside(session, sending, host_keys, result, gate) if gate else None
    if gate is None:
        result.findings = scan_outgoing(session, to_send, host_keys, result)
        if _settle_redacted(to_send, reference, manifest, result) and not result.findings:
            cache.save(())  # only redacted copies the store already holds: nothing new
            return result
    if dry_run:
        return result
    if result.findings:
        raise SecretsFound(result.findings)
    if force:
        total = len(view.manifest) if behind else len(reference)
        force_guard.check(state, result.removed, total, session.settings, confirm)

    outgoing = sending if isinstance(sending, Outgoing) else Outgoing(sending)
    del sending, to_send
    session.deadline.size_to(result.bytes_changed, len(outgoing))
    known = reads.known_blobs()
    # never a base ref into a pack found lost (voided): this device would upload the blob
    # once more beside the copy a repair or another push stored
    voided = session.repo.voided()[0]
    for entry in base.values():
        # the indexes say where a blob is now (a prune may have repacked it elsewhere)
        for ref in entry.blobs:
            if ref[1] and ref[1] not in voided:
                known.setdefault(ref[0], ref)
    # a pack a prune marked may be deleted once its grace period has passed: never rely on it
    # (docs/decisions.md, "Prune and concurrent pushes")
    marked = reads.marked()
    if marked:
        known = {blob: ref for blob, ref in known.items() if ref[1] not in marked}
        # a repacked blob is indexed in its new pack too: that copy is safe to rely on
        for refs in session.repo.indexes().values():
            for ref in refs:
                if ref[1] not in marked and ref[1] not in voided:
                    known.setdefault(ref[0], ref)
        session.repo.avoid = marked  # nor on a marked tree of the same content
    packer = Packer(session.repo, known, present=present, gate=gate)
    # a known tree counts only while its tree pack is stored and not marked, as a blob
    tree_present = (lambda pack: pack not in marked and present(pack)) if marked else present
    if progress is not None:
        progress.begin(len(outgoing), result.bytes_changed)
    try:
        for index, item in enumerate(outgoing):
            if gate is not None and gate.closed:
                break  # a finding: read no further
            try:
                if item.travels_as_is:  # what `open_content` opens, read by descriptor
                    sha, size, blob_ids = packer.add_path(item.location, item.size)
                else:
                    with item.open_content(host_keys) as handle:
                        sha, size, blob_ids = packer.add_file(handle)
            except FileNotFoundError:
                _vanished(result, item.rel)  # deleted between the walk and the read
                continue
            outgoing.packed(index, sha, size, blob_ids)
            if item.travels_as_is:  # the cache holds its digest
                cache.remember(item, sha)
            if progress is not None:
                progress.advance(size, files=1)
        if verdict is not None:
            waited = time.perf_counter()
            result.findings = verdict()
            result.scan_wait_seconds = time.perf_counter() - waited
    except GateClosed:
        result.findings = verdict() if verdict is not None else []
    finally:
        if gate is not None and not gate.decided:
            gate.close()  # the push failed before the scan passed: store nothing
        if gate is not None:
            result.scan_stall_seconds = gate.stall_seconds
    if result.findings:
        packer.abandon()  # the held packs are dropped, unstored
        raise SecretsFound(result.findings)
    # every new blob's place is known once its pack is sealed: the trees go up beside the
    # packs still travelling (after the verdict), and only the snapshot waits for both
    packer.seal_all()
    if packer.lost_packs:
        # the next push must not count on the lost packs' blobs either
        session.repo.write_void(packer.lost_packs, set())
    # the files sent go in as compact rows (each entry made afresh when read): on a first
    # push an entry per file held while the trees are written was the push's peak (issue 22)
    new = NewManifest(manifest)
    for rel, sha, size, blob_ids, mode in outgoing.results():
        new.add(FileEntry(rel, size, synced_mode(mode), sha, "shared", packer.refs(blob_ids)))
    # every file's refs are taken: what was kept to find them is let go before the trees
    # are built (on a first push, one record per file of each)
    outgoing.clear()
    packer.forget_names()
    cache.save(())  # its rows of the files just read, written and let go too
    reads.settle()
    _publish(session, state, view, new, result, projections, base, base_folders, started,
             tree_present, packer)
    return result


def scan_outgoing(session: Session, to_send: Sequence[LocalFile], host_keys: tuple[str, ...],
                  result: PushResult, handover: Handover | None = None,
                  early: WorkerScan | None = None) -> list[Finding]:
    """Secret findings in the files about to be uploaded (only changed ones reach here).

    With `handover` (the scan beside the packing), a large push's plain files are scanned by
    a worker process, this thread taking over when the push waits for the verdict; `early`
    is that scan when the walk's feed started it (`_scan_feed`), with its scanner. A file
    it was not fed is scanned here.
    """
    import time

    from roam_core.secretscan.scan import scanner_for

    started = time.perf_counter()
    cpu = time.thread_time() + _children_cpu()
    scanner = early.scanner if early is not None else \
        scanner_for(session.root, session.state_dir, session.settings)
    findings: list[Finding] = []
    redact = session.core.redact_memories
    pooled = _scan_pooled(scanner, to_send, handover, result, early)
    # by path first: an `Outgoing` makes a file's record only when it is read, and the
    # pooled files (all but the configs, beside the packing) need none
    rels = to_send.rels if isinstance(to_send, Outgoing) else [item.rel for item in to_send]
    for index, rel in enumerate(rels):
        item: LocalFile | None = None
        if rel in pooled:
            found = pooled[rel]
            if found is None:
                continue  # vanished: the upload loop notices too
        else:
            item = to_send[index]
            try:
                if item.travels_as_is:  # the file itself: by descriptor, in bounded chunks
                    found = scanner.scan_file(item.rel, item.location)
                else:
                    with item.open_content(host_keys) as handle:
                        found = scanner.scan_stream(item.rel, handle)  # in bounded chunks
            except FileNotFoundError:
                continue
        result.scanned += 1
        if found and redact and not (item := item or to_send[index]).is_config:
            from roam_core.secretscan.memories import redact_memory

            try:
                copy = redact_memory(scanner, item.rel, item.path.read_bytes(), found)
            except OSError:
                copy = None
            if copy is not None:  # a memory file: its redacted copy travels instead
                item.redacted = copy.content
                result.notes += copy.notes
                found = []
        findings.extend(found)
    result.scan_seconds = time.perf_counter() - started
    result.scan_cpu_seconds = time.thread_time() + _children_cpu() - cpu
    return findings


def _scan_feed(session: Session, state: LocalState, scan_first: bool) -> WalkFeed | None:
    """On a first push scanning beside its packing, a feed of the walk's files to the scan.

    Only a first push (from generation 0, init's empty one, or none): every file is new, so
    what the walk finds is what the scan will read (a later push knows what changed only
    after comparing, and most later pushes are small). The feed starts the scan's worker
    once the walk has found `WORKER_MIN_BYTES` of plain files (secretscan/worker.py).
    """
    from roam_core.secretscan import worker

    if state.generation or scan_first or session.core.redact_memories:
        return None  # not a first push, or the scan runs first, in the push's own thread
    from roam_core.secretscan.scan import scanner_for

    return worker.feed_walk(lambda: scanner_for(session.root, session.state_dir,
                                                session.settings))


def _scan_beside(session: Session, to_send: Sequence[LocalFile], host_keys: tuple[str, ...],
                 result: PushResult, gate: UploadGate) -> Callable[[], list[Finding]]:
    """Start `scan_outgoing` in a thread that opens `gate` when it passes, else closes it.

    Returns the verdict: it waits for the scan and gives its findings (or raises its error).
    The scan's thread runs in a copy of this context, so the push's deadline applies to it.
    A large scan's worker process is helped when the push waits for the verdict: when the
    packs held at the gate spend the packer's budget, or when the verdict is asked for;
    the gate's closing without a verdict (the push failed) stops it.
    """
    import contextvars
    import threading

    from roam_core.secretscan import worker
    from roam_core.secretscan.worker import Handover

    outcome: dict[str, object] = {}
    early = worker.take_fed()  # a first push's scan, already under way
    handover = early.handover if early is not None else Handover()
    gate.on_stall = lambda: handover.hurry("stalled")
    gate.on_close = handover.cancel

    def scan() -> None:
        try:
            outcome["findings"] = found = scan_outgoing(session, to_send, host_keys, result,
                                                        handover, early)
        except BaseException as error:  # re-raised by the verdict, in the push's thread
            outcome["error"] = error
            gate.close()
            return
        (gate.close if found else gate.open)()

    thread = threading.Thread(target=contextvars.copy_context().run, args=(scan,),
                              name="roam-secret-scan", daemon=True)
    thread.start()

    def verdict() -> list[Finding]:
        handover.hurry("packed")
        thread.join()
        if "error" in outcome:
            raise outcome["error"]  # type: ignore[misc]
        return outcome["findings"]  # type: ignore[return-value]

    return verdict


def _children_cpu() -> float:
    """Processor seconds of the waited-for child processes (the scan's pool workers)."""
    try:
        import resource
    except ImportError:  # not on every platform
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _scan_pooled(scanner: Scanner, to_send: Sequence[LocalFile], handover: Handover | None,
                 result: PushResult, early: WorkerScan | None = None
                 ) -> dict[str, list[Finding] | None]:
    """Findings of the plain files of a large push, scanned in other processes.

    Beside the packing (`handover`), by one worker process and this thread at the end
    (roam_core/secretscan/worker.py); before it, by a process pool. Empty when the push is
    too small (or the machine has one core) or a pool worker failed: then every file is
    scanned here. Config files (their projection) and redacted copies are always scanned
    here.
    """
    from roam_core.secretscan.pool import scan_in_pool, worth_a_pool

    # an `Outgoing`'s view makes each tuple when read (no string per file held meanwhile)
    plain = to_send.plain() if isinstance(to_send, Outgoing) else \
        [(item.rel, item.location, item.size) for item in to_send if item.travels_as_is]
    total = sum(size for _, _, size in plain)
    if handover is not None:
        from roam_core.secretscan import worker

        if early is not None:  # fed the walk's files (the ones sent, on a first push)
            scan = early
        elif total < worker.WORKER_MIN_BYTES:
            return {}
        else:
            scan = worker.WorkerScan(scanner, plain, handover)
        found = scan.run()
        result.scan_worker_files, result.scan_handover = len(scan.reported), handover.reason
        return found
    workers = worth_a_pool(total)
    return (scan_in_pool(scanner, plain, workers) if workers else None) or {}


def _settle_redacted(to_send: list[LocalFile], reference: Manifest, manifest: Manifest,
                     result: PushResult) -> bool:
    """Keep the store's entry for a redacted copy it already holds; True when nothing is left.

    The local original differs from what was pushed for as long as it holds the secret, so
    without this every push would upload the same redacted copy again as a new generation.
    """
    import hashlib

    for item in list(to_send):
        if item.redacted is None:
            continue
        kept = reference.get(item.rel)
        if kept is not None and kept.sha256 == hashlib.sha256(item.redacted).hexdigest() \
                and synced_mode(item.mode) == synced_mode(kept.mode):
            manifest[item.rel] = kept
            to_send.remove(item)
            _vanished(result, item.rel)
            result.bytes_changed -= item.size
    left = [item.rel for item in to_send]
    if left not in ([], [inventory.INVENTORY]) or result.removed \
            or not set(manifest) | {inventory.INVENTORY} >= set(reference):
        return False
    result.added = [rel for rel in result.added if rel != inventory.INVENTORY]
    result.changed = [rel for rel in result.changed if rel != inventory.INVENTORY]
    result.bytes_changed = 0
    result.nothing = True
    return True


def _vanished(result: PushResult, rel: str) -> None:
    for names in (result.added, result.changed):
        if rel in names:
            names.remove(rel)


def _swap_head(repo: Repository, head: Head, seen: Head) -> None:
    """Compare-and-swap HEAD from `seen`; `ConflictError` when another generation came first.

    A ref that moved without a new generation (a backend whose refs share one version;
    git's refs have their own since deletion came) is swapped again from where it is.
    """
    expected = seen.version
    for _attempt in range(3):
        try:
            repo.write_head(head, expected)
            return
        except RefConflict:
            now = repo.read_head()
            if now is None or (now.generation, now.snapshot) != (seen.generation, seen.snapshot):
                break
            expected = now.version
    raise ConflictError("the remote head moved ahead — run roam pull first")


def _needs(repo: Repository, manifest: Mapping[str, FileEntry], root: str, snapshot_id: str
           ) -> list[set[str]]:
    """What a generation relies on, each as the keys of its copies (any one will do).

    Read from the indexes afresh: a prune may have repacked a blob or a tree meanwhile.
    """
    lost = repo.voided()[0]
    copies: dict[str, set[str]] = {}
    for refs in repo.indexes().values():
        for ref in refs:
            if ref[1] not in lost:
                copies.setdefault(str(ref[0]), set()).add(str(ref[1]))
    needs = [{ref[1]} | copies.get(ref[0], set())
             for entry in manifest.values() for ref in entry.blobs]
    places = repo.tree_places(fresh=True) if repo.format >= 2 else {}
    for tree in repo.folders.get(root, {}).values():
        needs.append({tree_key(tree)} | {ref[1] for ref in places.get(tree, ())})
    needs.append({snapshot_key(snapshot_id)})
    return needs


def _total_size(manifest: Mapping[str, FileEntry]) -> int:
    """The bytes of a generation's files (a push's new rows summed without making entries)."""
    if isinstance(manifest, NewManifest):
        return manifest.total_size()
    return sum(entry.size for entry in manifest.values())


def _publish(session: Session, state: LocalState, view: remote_module.RemoteView,
             manifest: Mapping[str, FileEntry], result: PushResult,
             projections: dict[str, str],
             base: Manifest, base_folders: dict[str, str] | None, started: float,
             present: Callable[[str], bool], packer: Packer) -> None:
    repo = session.repo
    try:
        # like a blob, a known tree counts only while its tree pack is still stored
        root = repo.write_manifest(manifest, base, base_folders, present=present)
    finally:
        packer.finish()  # the data packs and their indexes, stored beside the trees
    result.uploaded_bytes = packer.uploaded_bytes
    kill_point("push:packs")
    kill_point("push:trees")
    generation = view.head.generation + 1
    roster = roster_module.with_row(view.snapshot.roster, state.id, state.device, {
        "last_push": generation, "last_pull": state.last_pull, "roam_version": __version__,
        "hermes_version": hermes_version(), "time": now_iso()})
    snapshot = Snapshot(generation, view.head.snapshot, state.device, now_iso(), root,
                        __version__, hermes_version(), roster, len(manifest),
                        _total_size(manifest), device_id=state.id)
    snapshot_id = repo.write_snapshot(snapshot)
    kill_point("push:snapshot")
    head = Head(generation, snapshot_id, view.head.store, state.device, snapshot.created)
    if time.monotonic() - started > lease_module.RECHECK_AFTER:
        # a prune may have marked this push's own early objects as unreferenced meanwhile
        lease_module.refuse_if_marked(repo, _needs(repo, manifest, root, snapshot_id))
    _swap_head(repo, head, view.head)
    kill_point("push:head")
    raise_floor(session.state_dir, head.store, session.backend.identity(), generation)
    kill_point("push:state")
    state.generation = generation
    state.snapshot = snapshot_id
    state.last_push = generation
    # read-only rows: written by this save, then let go (read again from state.db if asked)
    state.set_base(manifest)  # type: ignore[arg-type]
    state.conflicts.clear()  # pushing the local version is the explicit resolution
    state.entry_conflicts.clear()
    state.projections = {rel: text for rel, text in projections.items() if rel in manifest}
    save_state(session.state_dir, state)
    state.take_base()
    repo.remember_trees(snapshot_id, root)
    result.generation = generation

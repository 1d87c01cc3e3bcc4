"""Writing new content: chunk, name, compress, seal, and group blobs into packs.

A push streams each changed file through `Packer.add_file` in fixed-size chunks, so memory
stays bounded by a few packs whatever the file's size. Chunks are named (hashed) in the
caller's thread; a full pack's chunks are compressed and sealed by a sealing thread, then
stored (the pack, then its index) by a store thread (`pipeline.PackStages`). Blobs the store
already holds are referenced, not uploaded again. Packs are written before the snapshot that
needs them.
"""

from __future__ import annotations

import hashlib
import os
import threading
from array import array
from collections.abc import Callable, Iterator, Mapping
from typing import BinaryIO

from roam_core import crypto
from roam_core.store import codec
from roam_core.store.catalog import KnownBlobs, found_ref
from roam_core.store.gate import UploadGate
from roam_core.store.malloc import map_large_buffers, release_free_memory
from roam_core.store.manifest import BlobRef
from roam_core.store.objects import CHUNK_SIZE, PACK_TARGET, pack_key
from roam_core.store.pipeline import PackStages
from roam_core.store.repository import Repository
from roam_core.store.uploads import put_once

#: What sealing adds to a blob, at most (codec byte, header, tag): counted towards a pack's
#: size so that a pack of many small blobs still fits a backend's object size limit.
BLOB_OVERHEAD = 64
#: Threads sealing packs: compressing and encrypting is processor work, two use two cores.
PACK_WORKERS = 2
#: Packs stored at once on a remote store: each costs two round trips (the pack, then its
#: index), spent waiting, so at 100 ms RTT two sealers outrun two uploads (measurements in
#: docs/benchmarks.md). Elsewhere a store is disk work (or git's staging: processor work).
REMOTE_STORERS = 6
LOCAL_STORERS = 2
#: Bytes the sealing and store stages hold at once (raw until sealed, sealed until stored).
#: On a remote store: five packs of incompressible data, more of text. Elsewhere three packs,
#: as before the stages were split. (32 MiB took a 100,000-file first push's peak from 214
#: to 187 MiB, the packs held at the scan's gate being its largest part, but stalled the
#: packing: first pushes of 20,000 files took 27-79 s against 22-45; docs/benchmarks.md.)
REMOTE_PACK_BYTES = 80 * 1024 * 1024
LOCAL_PACK_BYTES = 48 * 1024 * 1024
#: Bytes the stages hold while the push's scan has no verdict yet (its gate holds every
#: sealed pack): the walk's records are still fresh in the heap then, and the packs held at
#: the gate beside them were a 100,000-file first push's peak (201-212 MiB); with 24 MiB
#: held (one pack handed over and one filling, instead of three and one) and the sealer's
#: trim, 184-204 MiB, at the same processor time (docs/decisions.md). A remote store
#: keeps its whole budget: the packs sealed ahead are its uploads in flight the moment the
#: gate opens.
HELD_PACK_BYTES = 24 * 1024 * 1024
#: A read of a small file that returns short of a multiple of this reached the file's end.
EOF_ALIGN = 4096
#: Chunks shorter than this are copied into a buffer of their own size before they wait.
SMALL_CHUNK = 1024 * 1024


class Packer:
    """Collects new blobs into packs and uploads them; one per push."""

    def __init__(self, repo: Repository, known: Mapping[str, BlobRef], *,
                 workers: int | None = None,
                 present: Callable[[str], bool] | None = None,
                 gate: UploadGate | None = None) -> None:
        # glibc's mmap threshold is fixed at 256 KiB again (store/malloc.py): left to move,
        # it rose to a pack's size and the freed pack buffers stayed resident (~25 MiB at a
        # 100,000-file first push's peak). It once cost the large home's first push a
        # quarter more processor time, when every small file was read into a 4 MiB buffer
        # (a fresh mapping each); read to size by `add_path`, no longer (docs/decisions.md)
        map_large_buffers()
        self.repo = repo
        #: Sealed packs wait here before anything is stored (None: stored at once).
        self._gate = gate
        # a view over the catalogue's blob table, not a dict of every blob (issue 23)
        self.known = known.copy() if isinstance(known, KnownBlobs) else dict(known)
        #: Confirms a known blob's pack is still stored before it is referenced (None: trusted).
        self._present = present
        #: Packs a known blob named that the store no longer holds: their blobs went again.
        self.lost_packs: set[str] = set()
        #: The blobs this push queued, and where each sits once its pack is sealed.
        self.locations = NewBlobs()
        limit = repo.backend.capabilities.max_object_size
        self.pack_target = min(PACK_TARGET, limit // 2) if limit else PACK_TARGET
        self._raw: list[tuple[str, bytes]] = []  # chunks waiting for the current pack
        self._raw_bytes = 0
        self._stages = _stages(repo, workers)
        if gate is not None:
            # when the caller waits for room while packs are held at the gate, it waits for
            # the verdict: the scan then gets the push's help (store/gate.py)
            self._stages.on_full = gate.full
            # until the verdict every sealed pack stays here (`HELD_PACK_BYTES`)
            self._stages.holding = lambda: not gate.decided
            if not self._stages.sealers:
                gate.holders = 1  # packs are stored in the caller's own thread
        self._lock = threading.Lock()
        #: Packs handed to a worker and not yet sealed (their names unknown until then).
        self._sealing = 0
        self._sealed = threading.Condition(self._lock)
        self._seal_failed = False
        self.uploaded_bytes = 0
        self.new_blobs = 0

    def add_file(self, handle: BinaryIO, first: bytes | None = None
                 ) -> tuple[str, int, tuple[str, ...]]:
        """Stream a file into blobs; returns (sha256 hex, size, blob ids) — see `refs`.

        Each byte is read once. A file of one chunk (most files) is hashed once too: its
        SHA-256 is both the file's digest and the input of its blob's keyed name.
        """
        chunk = first if first is not None else handle.read(CHUNK_SIZE)
        following = handle.read(CHUNK_SIZE) if len(chunk) == CHUNK_SIZE else b""
        if not following:
            digest = hashlib.sha256(chunk).digest()
            return digest.hex(), len(chunk), (self.add_chunk(chunk, digest),)
        whole = hashlib.sha256()
        refs: list[str] = []
        size = 0
        while chunk:
            whole.update(chunk)
            size += len(chunk)
            refs.append(self.add_chunk(chunk))
            chunk, following = following, (handle.read(CHUNK_SIZE) if following else b"")
        return whole.hexdigest(), size, tuple(refs)

    def add_path(self, location: str, size: int) -> tuple[str, int, tuple[str, ...]]:
        """`add_file` for a file on disk the walk saw at `size` bytes (a push's plain files).

        A file smaller than a chunk is read into a buffer of its own size by descriptor:
        through a buffered file object each small file cost seven system calls (each one
        gives up the interpreter lock, then waits to take it back from the sealing threads)
        and a chunk-sized buffer shrunk to fit. A file that grew since the walk is read
        again from its start, as `add_file` reads any other.
        """
        fd = os.open(location, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            if size < CHUNK_SIZE:
                # one byte more than the walk saw: a file that grew comes back too long
                data = os.read(fd, size + 1)
                # A read that ends off a page boundary ended at the file's end; one cut at
                # a boundary may be a file system's transfer limit (FUSE, network): a read
                # at the end confirms it. Most small files end off a boundary: one read.
                if len(data) <= size and (len(data) % EOF_ALIGN or not data
                                          or not os.read(fd, 1)):
                    digest = hashlib.sha256(data).digest()
                    return digest.hex(), len(data), (self.add_chunk(data, digest),)
                os.lseek(fd, 0, os.SEEK_SET)
            with open(fd, "rb", closefd=False) as handle:
                return self.add_file(handle)
        finally:
            os.close(fd)

    def add_chunk(self, data: bytes, digest: bytes | None = None) -> str:
        """Queue one chunk unless the store or this push already has it; returns its blob id."""
        if digest is None:
            digest = hashlib.sha256(data).digest()
        blob_id = self.repo.keys.name(crypto.KIND_BLOB, digest)
        if blob_id in self.locations.queued:
            return blob_id
        known = self.known.get(blob_id)
        if known is not None:
            # an index is no proof the pack is still there: a provider may have lost it
            if self._present is None or self._present(known[1]):
                return blob_id
            self.lost_packs.add(known[1])
            del self.known[blob_id]
        self.locations.queue(blob_id)
        if len(data) < SMALL_CHUNK:
            # A short read comes back in a buffer sized for a whole chunk and shrunk: kept
            # until its pack is sealed, each would pin a chunk-sized hole in the heap, so a
            # push of many small files would hold a chunk per file. A snug copy lets it go.
            data = bytes(memoryview(data))
        self._raw.append((blob_id, data))
        self._raw_bytes += len(data) + BLOB_OVERHEAD
        self.new_blobs += 1
        if self._raw_bytes >= self.pack_target:
            self._flush()
        return blob_id

    def _flush(self) -> None:
        if not self._raw:
            return
        blobs, size = self._raw, self._raw_bytes
        self._raw, self._raw_bytes = [], 0
        with self._lock:
            self._sealing += 1
        # compressing and sealing run in the sealing threads, beside the main thread's
        # reading and hashing (a first push uses both cores); storing in the store threads
        self._stages.submit(lambda: self._pack(blobs), size)

    def _pack(self, blobs: list[tuple[str, bytes]]) -> tuple[Callable[[], None], int]:
        """Seal `blobs` into one pack; returns the job that stores it, and its size."""
        try:
            data, refs = self._seal(blobs)
        except BaseException:
            with self._lock:
                self._seal_failed = True
            raise
        finally:
            with self._lock:
                self._sealing -= 1
                self._sealed.notify_all()
        # the pack's raw chunks and sealed pieces are free now, in this thread's arena and
        # the packer's: handed back at once, not after the store (the steady packing's peaks)
        release_free_memory()
        return lambda: self._store(data, refs), len(data)

    def _store(self, data: bytes, refs: list[BlobRef]) -> None:
        """Store a sealed pack, then its index (never the other way)."""
        pack = refs[0][1]
        if self._gate is not None:
            self._gate.wait()  # GateClosed: the sealed pack is dropped, never stored
        put_once(self.repo.backend, pack, data)
        # the index names blobs as present, so it is written only once its pack is stored
        # for good
        self.repo.backend.flush()
        self.repo.write_index(pack, refs)
        with self._lock:
            self.uploaded_bytes += len(data)
        del data
        release_free_memory()

    def _seal(self, blobs: list[tuple[str, bytes]]) -> tuple[bytes, list[BlobRef]]:
        """The pack's bytes and where each blob sits in it; the places are noted at once."""
        pieces: list[bytes] = []
        offsets: list[tuple[str, int, int]] = []
        offset = 0
        blobs.reverse()
        while blobs:  # each raw chunk is let go as soon as it is sealed
            blob_id, data = blobs.pop()
            sealed = crypto.seal(self.repo.keys.encryption, crypto.KIND_BLOB, blob_id,
                                 codec.encode(data))
            del data
            offsets.append((blob_id, offset, len(sealed)))
            offset += len(sealed)
            pieces.append(sealed)
        data = b"".join(pieces)
        pieces.clear()
        pack = pack_key(hashlib.sha256(data).hexdigest())
        refs = [(blob_id, pack, offset, length) for blob_id, offset, length in offsets]
        with self._lock:
            self.locations.place(refs)
        return data, refs

    def seal_all(self) -> None:
        """Seal what is buffered and wait until every new blob's place is known.

        A pack is named by its sealed bytes, so `refs` answers once it is sealed, while it
        may still be on its way to the store: the trees that name it can go up beside it.
        Only what references the trees (the snapshot) waits for `finish`.
        """
        self._flush()
        with self._sealed:
            while self._sealing:
                self._sealed.wait()
            failed = self._seal_failed
        if failed:
            self.finish()  # raises the worker's error

    def refs(self, blob_ids: tuple[str, ...]) -> tuple[BlobRef, ...]:
        """Where each blob lives, once `seal_all` (or `finish`) has returned."""
        # a blob is either new (its place noted when sealed) or known, never both: the new
        # ones are asked first, the known table's search being the dearer
        return tuple(self.locations.get(b) or self.known[b] for b in blob_ids)

    def forget_names(self) -> None:
        """Let go of the blob tables once every file's refs are taken (`refs` answers no more).

        The packs still travelling need none of them: each worker holds its own pack's refs.
        """
        self.known = {}
        self.locations = NewBlobs()

    def abandon(self) -> None:
        """Stop the upload workers without storing what is buffered (the gate is closed)."""
        self._raw, self._raw_bytes = [], 0
        self._stages.close()

    def finish(self) -> Mapping[str, BlobRef]:
        """Upload what is buffered, wait for every upload; return where each new blob lives."""
        try:
            self._flush()
            self._stages.wait()
        finally:
            self._stages.close()
        return self.locations


class NewBlobs(Mapping[str, BlobRef]):
    """Where each sealed blob of this push sits: blob id → (blob id, pack, offset, length).

    One slot number per queued blob id and machine integers per slot, not a ref tuple and
    its integers per blob: at 100,000 new blobs the tables were ~250 bytes a blob at the
    packing's peak (issue 22). A blob queued and not yet sealed is in `queued` only.
    """

    def __init__(self) -> None:
        #: blob id → its slot, from the moment it is queued
        self.queued: dict[str, int] = {}
        self._packs: list[str] = []
        self._numbers = array("q")  # pack number (-1 until sealed), offset, length a slot
        self._sealed = 0

    def queue(self, blob_id: str) -> None:
        """Note a blob that goes into a pack (its place is known once that is sealed)."""
        self.queued[blob_id] = len(self._numbers) // 3
        self._numbers.extend((-1, 0, 0))

    def place(self, refs: list[BlobRef]) -> None:
        """Note where the blobs of one sealed pack sit (they are all in `refs[0]`'s pack)."""
        number = len(self._packs)
        self._packs.append(refs[0][1])
        numbers = self._numbers
        for blob_id, _pack, offset, length in refs:
            at = 3 * self.queued[blob_id]
            numbers[at] = number
            numbers[at + 1] = offset
            numbers[at + 2] = length
        self._sealed += len(refs)

    def get(self, blob_id: str, default: BlobRef | None = None  # type: ignore[override]
            ) -> BlobRef | None:
        slot = self.queued.get(blob_id)
        if slot is None or self._numbers[3 * slot] < 0:
            return default
        number, offset, length = self._numbers[3 * slot:3 * slot + 3]
        return blob_id, self._packs[number], offset, length

    def __getitem__(self, blob_id: str) -> BlobRef:
        return found_ref(self.get(blob_id), blob_id)

    def __iter__(self) -> Iterator[str]:
        return (blob_id for blob_id, slot in list(self.queued.items())
                if self._numbers[3 * slot] >= 0)

    def __len__(self) -> int:
        return self._sealed


def _stages(repo: Repository, workers: int | None) -> PackStages:
    """The sealing and store stages for `repo`'s backend.

    `workers` is the number of store threads; 1 runs everything in the caller's thread.
    """
    capabilities = repo.backend.capabilities
    # a batched backend (git) stages each pack on local disk and publishes once at the end:
    # its stores are disk and processor work, not round trips
    remote = capabilities.remote and not capabilities.batched_publish
    if workers is None:
        workers = REMOTE_STORERS if remote else LOCAL_STORERS
    # More sealers would each keep pack-sized buffers in their own allocator arena
    # (resident memory, never used again).
    sealers = min(PACK_WORKERS, workers) if workers > 1 else 0
    stages = PackStages(sealers, workers, REMOTE_PACK_BYTES if remote else LOCAL_PACK_BYTES)
    if not remote:
        stages.held_budget = min(stages.budget, HELD_PACK_BYTES)
    return stages

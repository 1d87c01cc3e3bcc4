"""Writing new content: chunk, name, compress, seal, and group blobs into packs.

A push streams each changed file through `Packer.add_file` in fixed-size chunks, so memory
stays bounded by one pack whatever the file's size. Blobs the store already holds are
referenced, not uploaded again. Packs are written before the snapshot that needs them.
"""

from __future__ import annotations

import hashlib
import threading
from typing import BinaryIO

from roam_core import crypto
from roam_core.store import codec
from roam_core.store.manifest import BlobRef
from roam_core.store.objects import CHUNK_SIZE, PACK_TARGET, pack_key
from roam_core.store.repository import Repository
from roam_core.store.uploads import Uploads


class Packer:
    """Collects new blobs into packs and uploads them; one per push."""

    def __init__(self, repo: Repository, known: dict[str, BlobRef], *,
                 workers: int | None = None) -> None:
        self.repo = repo
        self.known = dict(known)
        self.locations: dict[str, BlobRef] = {}
        limit = repo.backend.capabilities.max_object_size
        self.pack_target = min(PACK_TARGET, limit // 2) if limit else PACK_TARGET
        self._buffer = bytearray()
        self._pending: list[tuple[str, int, int]] = []
        self._queued: set[str] = set()
        self._uploads = Uploads(repo.backend, workers)
        self._lock = threading.Lock()
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

    def add_chunk(self, data: bytes, digest: bytes | None = None) -> str:
        """Queue one chunk unless the store or this push already has it; returns its blob id."""
        if digest is None:
            digest = hashlib.sha256(data).digest()
        blob_id = self.repo.keys.name(crypto.KIND_BLOB, digest)
        if blob_id in self.known or blob_id in self._queued:
            return blob_id
        self._queued.add(blob_id)
        sealed = crypto.seal(self.repo.keys.encryption, crypto.KIND_BLOB, blob_id,
                             codec.encode(data))
        offset = len(self._buffer)
        self._buffer += sealed
        self._pending.append((blob_id, offset, len(sealed)))
        self.new_blobs += 1
        if len(self._buffer) >= self.pack_target:
            self._flush()
        return blob_id

    def _flush(self) -> None:
        if not self._pending:
            return
        data = bytes(self._buffer)
        pack = pack_key(hashlib.sha256(data).hexdigest())
        refs = [(blob_id, pack, offset, length) for blob_id, offset, length in self._pending]
        self.locations.update({ref[0]: ref for ref in refs})
        self._buffer = bytearray()
        self._pending = []
        # the index names blobs as present, so it is written only once its pack is stored
        self._uploads.put(pack, data, lambda: self._indexed(pack, refs, len(data)))

    def _indexed(self, pack: str, refs: list[BlobRef], size: int) -> None:
        self.repo.write_index(pack, refs)
        with self._lock:
            self.uploaded_bytes += size

    def refs(self, blob_ids: tuple[str, ...]) -> tuple[BlobRef, ...]:
        """Where each blob lives, once `finish` has returned."""
        return tuple(self.known.get(b) or self.locations[b] for b in blob_ids)

    def finish(self) -> dict[str, BlobRef]:
        """Upload what is buffered, wait for every upload; return where each new blob lives."""
        try:
            self._flush()
            self._uploads.wait()
        finally:
            self._uploads.close()
        return self.locations

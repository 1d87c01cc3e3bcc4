"""Format v2: trees sealed into tree packs, so a generation's trees cost a few ranged reads.

In format 1 every tree is an object of its own: a first push of a home with 3,000 folders
makes 3,000 PUTs and a pull 3,000 GETs, each a round trip on a real network. In format 2 a
push seals its new trees exactly as before (kind `T`, authenticated under the tree's id) and
appends them to a tree pack, which is stored like a data pack (`packs/<2 hex>/<SHA-256>`)
with an index that lists them under `"trees"`. Trees never share a pack with file data, so
reading a generation's trees never pulls file bytes. Readers locate a tree through the
indexes and read many at once: one ranged read covers the trees of one level that sit close
together in a pack.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable

from roam_core.store.manifest import BlobRef
from roam_core.store.objects import PACK_TARGET, pack_key
from roam_core.store.spans import Span, plan_spans
from roam_core.store.uploads import Uploads, put_once

#: Bytes of trees one ranged read may read through between two wanted ones: trees are small
#: and a round trip costs more than a megabyte on most links.
TREE_GAP = 1024 * 1024

#: Stores a written pack's index: (pack key, blob refs, tree refs) → index id.
WriteIndex = Callable[[str, list[BlobRef], list[BlobRef]], str]


class TreePacker:
    """Collects sealed trees into tree packs; each full pack is stored, then its index."""

    def __init__(self, uploads: Uploads, write_index: WriteIndex, limit: int | None) -> None:
        self._uploads = uploads
        self._write_index = write_index
        self.target = min(PACK_TARGET, limit // 2) if limit else PACK_TARGET
        self._pending: list[tuple[str, bytes]] = []
        self._size = 0
        self._added: set[str] = set()
        self._lock = threading.Lock()
        #: Where each tree this packer stored lives, once `finish` has returned.
        self.locations: dict[str, BlobRef] = {}

    def add(self, tree_id: str, sealed: bytes) -> None:
        """Queue one sealed tree (a tree already queued in this push is not added twice)."""
        if tree_id in self._added:
            return
        self._added.add(tree_id)
        self._pending.append((tree_id, sealed))
        self._size += len(sealed)
        if self._size >= self.target:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        trees, size = self._pending, self._size
        self._pending, self._size = [], 0
        self._uploads.run(lambda: self._store(trees), size)

    def _store(self, trees: list[tuple[str, bytes]]) -> None:
        pack, data, refs = assemble_pack(trees)
        put_once(self._uploads.backend, pack, data)
        # the index names the trees as present, so it goes only once the pack is stored
        self._uploads.backend.flush()
        self._write_index(pack, [], refs)
        with self._lock:
            self.locations.update({ref[0]: ref for ref in refs})

    def finish(self) -> None:
        """Queue what is buffered; the caller waits for the uploads."""
        self._flush()


def assemble_pack(entries: list[tuple[str, bytes]]) -> tuple[str, bytes, list[BlobRef]]:
    """Sealed entries back to back as one pack: its key, its bytes and each entry's ref."""
    data = b"".join(sealed for _entry_id, sealed in entries)
    pack = pack_key(hashlib.sha256(data).hexdigest())
    refs: list[BlobRef] = []
    offset = 0
    for entry_id, sealed in entries:
        refs.append((entry_id, pack, offset, len(sealed)))
        offset += len(sealed)
    return pack, data, refs


def plan_tree_spans(refs: list[BlobRef]) -> list[Span]:
    """Ranged reads covering `refs`: grouped by pack, in pack order, gaps read through."""
    return plan_spans(sorted(refs, key=lambda ref: (ref[1], ref[2])), gap=TREE_GAP)

"""Reading an install's new contents ahead, in a thread, while the caller writes them.

Contents from the store come through one `ContentStream`: blobs read per pack span, several
spans in flight, not one request per file.

The store's reads, decryption and decompression release the GIL, so they overlap the
kernel's file creation in the install's thread. A bounded amount is held ahead, and each
side is woken per batch, not per chunk: every wake-up is a pair of context switches, 40,000
of them on a pull of 20,000 files when they were per chunk.
"""

from __future__ import annotations

import collections
import contextvars
import hashlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from roam_core.errors import RoamError
from roam_core.store.content import ContentSource, ContentStream

if TYPE_CHECKING:
    from roam_core.engine.journal import Op

#: How far the prefetch thread may read ahead of the file writing (bytes held).
PREFETCH_BYTES = 8 * 1024 * 1024
#: How long closing waits for the prefetch thread (it may be inside one store read).
PREFETCH_JOIN = 30.0
#: A waiting writer is woken when this many items or bytes are ready (or the reader ends).
WAKE_ITEMS = 256
WAKE_BYTES = 4 * 1024 * 1024


def _stream(ops: list[Op]) -> ContentStream | None:
    """One stream for the ops' store contents, read per pack span (None: there are none)."""
    sources = [op.source for op in ops if isinstance(op.source, ContentSource)]
    if not sources:
        return None
    repo = sources[0].repo
    if any(source.repo is not repo for source in sources):
        return None  # contents of two stores: each file is read on its own
    return ContentStream(repo, [source.entry for source in sources])


class Content:
    """One op's bytes as the prefetch thread delivers them, and their SHA-256 at the end."""

    def __init__(self, prefetch: Prefetch) -> None:
        self._prefetch = prefetch
        self.digest: str | None = None

    def chunks(self) -> Iterator[bytes]:
        while True:
            item = self._prefetch.take()
            if isinstance(item, str):
                self.digest = item
                return
            yield item


class Prefetch:
    """The write ops' new contents, read ahead in a thread, in op order, with their digests.

    A bounded amount is held ahead while the caller creates and writes the temp files.
    Contents from the store are checked by the store as they are read; any other source is
    hashed here. Only this thread reads the store during staging.
    """

    def __init__(self, ops: list[Op]) -> None:
        self._ops = ops
        self._items: collections.deque[bytes | str | BaseException] = collections.deque()
        #: what the caller took over from `_items` in one go, taken item by item without a lock
        self._mine: collections.deque[bytes | str | BaseException] = collections.deque()
        # bytes held = put - taken; each counter is written by one side only
        self._put_bytes = 0
        self._taken_bytes = 0
        self._closed = False
        self._done = False
        self._consumer_waits = False
        self._producer_waits = False
        self._ready = threading.Condition()
        context = contextvars.copy_context()  # the operation's deadline applies here too
        self._thread = threading.Thread(target=context.run, args=(self._run,),
                                        name="roam-prefetch", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        stream = _stream(self._ops)
        try:
            for op in self._ops:
                assert op.source is not None
                # a store source checks the bytes against this digest itself as it reads
                checked = op.sha256 is not None and getattr(op.source, "sha256", None) == op.sha256
                digest = None if checked else hashlib.sha256()
                chunks = stream.content(op.source.entry) if stream is not None and \
                    isinstance(op.source, ContentSource) else op.source()
                for chunk in chunks:
                    if digest is not None:
                        digest.update(chunk)
                    if not self._put(chunk, len(chunk)):
                        return
                if not self._put(digest.hexdigest() if digest is not None else str(op.sha256), 0):
                    return
        except BaseException as failure:  # handed to the caller, raised there
            self._put(failure, 0)
        finally:
            if stream is not None:
                stream.close()
            self._finish()

    def _held(self) -> int:
        return self._put_bytes - self._taken_bytes

    def _put(self, item: bytes | str | BaseException, size: int) -> bool:
        with self._ready:
            held = self._held()
            if held and held + size > PREFETCH_BYTES:
                # full: sleep until the writer has taken half, not until its next take
                self._producer_waits = True
                while self._held() > PREFETCH_BYTES // 2 and not self._closed:
                    self._ready.wait()
                self._producer_waits = False
            if self._closed:
                return False
            self._items.append(item)
            self._put_bytes += size
            if self._consumer_waits and (len(self._items) >= WAKE_ITEMS
                                         or self._held() >= WAKE_BYTES
                                         or isinstance(item, BaseException)):
                self._ready.notify_all()
            return True

    def _finish(self) -> None:
        with self._ready:
            self._done = True
            self._ready.notify_all()

    def take(self) -> bytes | str:
        """The next item: a chunk of the current content, or its digest at its end.

        Items are taken over in batches under the lock and then one by one without it (two
        lock round trips per file were a second of the install's thread at 100,000 files).
        """
        if not self._mine:
            self._take_over()
        item = self._mine.popleft()
        if isinstance(item, bytes):
            self._taken_bytes += len(item)
            if self._producer_waits and self._held() <= PREFETCH_BYTES // 2:
                with self._ready:
                    self._ready.notify_all()
        elif isinstance(item, BaseException):
            raise item
        return item

    def _take_over(self) -> None:
        """Move every ready item to `_mine`, sleeping until a batch is ready when none is."""
        with self._ready:
            if self._producer_waits:
                self._ready.notify_all()  # whatever it waits for, nothing of it is held here
            if not self._items:
                # empty: sleep until a batch is ready, not until the next chunk (every
                # wake-up is a pair of context switches, 40,000 of them on a large pull)
                self._consumer_waits = True
                while not self._done and (not self._items or (
                        len(self._items) < WAKE_ITEMS and self._held() < WAKE_BYTES
                        and not isinstance(self._items[-1], BaseException))):
                    self._ready.wait()
                self._consumer_waits = False
                if not self._items:
                    raise RoamError("the store reader stopped early")
            self._mine, self._items = self._items, self._mine

    def next_content(self) -> Content:
        """The next write op's content (ops are taken in the order they were given)."""
        return Content(self)

    def close(self) -> None:
        """Stop reading ahead (an error or the end) and wait for the thread, bounded."""
        with self._ready:
            self._closed = True
            self._items.clear()
            self._mine.clear()
            self._ready.notify_all()
        self._thread.join(PREFETCH_JOIN)

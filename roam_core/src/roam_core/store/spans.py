"""Reading many blobs with few requests: one ranged read per pack span, several in flight.

A push packs blobs in file order, so the blobs a pull, a restore or `check --read-data` wants
next usually sit side by side in one pack. Consecutive wanted blobs of one pack become one
span (one ranged GET); spans are read in worker threads, several at once, and handed back in
the order they were asked for. What is held, read and not yet taken, is bounded by a window of
bytes, not of requests, so memory stays flat whatever the home's size.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from roam_core.store.malloc import map_large_buffers, release_free_memory
from roam_core.store.manifest import BlobRef
from roam_core.store.objects import CHUNK_SIZE, PACK_TARGET

#: One span reads at most this many bytes from a local store, where a read costs no round
#: trip and smaller spans keep less in memory.
SPAN_BYTES = 4 * 1024 * 1024
#: Bytes of unwanted blobs a span may read through to join two wanted ones.
SPAN_GAP = 256 * 1024
#: Bytes read ahead and not yet taken, at most (one span more when a single one is larger).
WINDOW_BYTES = 32 * 1024 * 1024
#: Spans read at once on a remote store: enough to fill a long fat pipe.
SPAN_WORKERS = 8
#: On a remote store a span may cover a whole pack: a pack is filled to PACK_TARGET and its
#: last blob (one chunk, sealed) may overshoot it. With 8 MiB spans two sealed 4 MiB chunks
#: never joined, so a pack of big-file chunks was a GET per blob (docs/benchmarks.md).
REMOTE_SPAN_BYTES = PACK_TARGET + CHUNK_SIZE + 1024 * 1024
#: On a remote store a round trip costs more than reading a megabyte through.
REMOTE_SPAN_GAP = 1024 * 1024
#: On a remote store: two whole packs ahead, so one is read while another is decoded.
REMOTE_WINDOW_BYTES = 2 * REMOTE_SPAN_BYTES


@dataclass(frozen=True)
class SpanPolicy:
    """How spans are cut and read ahead for one store: limit, gap, window and workers."""

    limit: int
    gap: int
    window: int
    workers: int


#: A local store: small spans, one reader (a read costs no round trip).
LOCAL_SPANS = SpanPolicy(SPAN_BYTES, SPAN_GAP, WINDOW_BYTES, 1)
#: A remote store: whole packs per request, several in flight, a window of bytes held.
REMOTE_SPANS = SpanPolicy(REMOTE_SPAN_BYTES, REMOTE_SPAN_GAP, REMOTE_WINDOW_BYTES,
                          SPAN_WORKERS)


def span_policy(remote: bool) -> SpanPolicy:
    """The span policy for a store that is (or is not) remote."""
    return REMOTE_SPANS if remote else LOCAL_SPANS


@dataclass
class Span:
    """A byte range of one pack covering `refs`, read with one request."""

    pack: str
    start: int
    end: int
    refs: list[BlobRef] = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.end - self.start


def plan_spans(refs: Iterable[BlobRef], limit: int = SPAN_BYTES,
               gap: int = SPAN_GAP) -> list[Span]:
    """Group `refs`, kept in their order, into spans of consecutive blobs of one pack."""
    spans: list[Span] = []
    current: Span | None = None
    for ref in refs:
        _blob, pack, offset, length = ref
        end = offset + length
        if (current is not None and pack == current.pack and current.start <= offset
                and offset <= current.end + gap and max(end, current.end) - current.start
                <= limit):
            current.end = max(end, current.end)
            current.refs.append(ref)
            continue
        current = Span(pack, offset, end, [ref])
        spans.append(current)
    return spans


#: Reads one span and returns one result per ref, in order (sealed bytes, or decoded ones).
SpanRead = Callable[[Span], list[object]]


class SpanReader:
    """The results of `read(span)` for every span, in order, read ahead in parallel.

    `workers` spans are read at once, and no more than `window` bytes of spans are read ahead
    of the one being taken. Each read runs in a copy of the caller's context (the operation's
    deadline applies there too). Closing cancels what has not started.
    """

    def __init__(self, spans: list[Span], read: SpanRead, workers: int = SPAN_WORKERS,
                 window: int = WINDOW_BYTES) -> None:
        self._spans = deque(spans)
        self._read = read
        self._window = window
        self._workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None
        self._ahead: deque[tuple[Span, Future[list[object]]]] = deque()
        self._held = 0

    def _fill(self) -> None:
        while self._spans and len(self._ahead) < 2 * self._workers and (
                not self._ahead or self._held + self._spans[0].size <= self._window):
            span = self._spans.popleft()
            if self._workers == 1:
                future: Future[list[object]] = Future()
                future.set_result(self._read(span))
            else:
                if self._pool is None:
                    map_large_buffers()  # else each reader's arena keeps freed spans
                    self._pool = ThreadPoolExecutor(self._workers, "roam-spans")
                future = self._pool.submit(contextvars.copy_context().run, self._read, span)
            self._ahead.append((span, future))
            self._held += span.size

    def __iter__(self) -> Iterator[tuple[BlobRef, object]]:
        try:
            while True:
                self._fill()
                if not self._ahead:
                    return
                span, future = self._ahead.popleft()
                results = future.result()
                self._held -= span.size
                if self._pool is not None:
                    # the spans taken before were decoded in the readers' arenas, which keep
                    # the pages of their small blobs once freed: eight readers, eight spans
                    release_free_memory()
                self._fill()  # the next reads start before this span's blobs are used
                yield from zip(span.refs, results, strict=True)
        finally:
            self.close()

    def close(self) -> None:
        """Stop reading ahead; wait for reads already running."""
        for _span, future in self._ahead:
            future.cancel()
        self._ahead.clear()
        self._spans.clear()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

"""Bounded parallel `put_new` (and packing jobs): several in flight, never an unbounded queue.

Each upload runs in a copy of the caller's context, so the operation's deadline applies
inside the worker threads too. At most `2 × workers` objects and `BYTES_IN_FLIGHT` bytes
wait or travel at once, which bounds memory whatever the number of packs or trees a push
writes.
"""

from __future__ import annotations

import contextvars
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

from roam_core.errors import ObjectExists
from roam_core.storage import Backend

#: Bytes handed to worker threads and not yet stored: two packs, so two workers compress and
#: seal while the caller reads and hashes the next one.
BYTES_IN_FLIGHT = 48 * 1024 * 1024


def put_once(backend: Backend, key: str, data: bytes) -> None:
    """Create an immutable object; one already there under its key is the same bytes."""
    try:
        backend.put_new(key, data)
    except ObjectExists:
        pass  # content-addressed: the same bytes are already stored


def workers_for(backend: Backend) -> int:
    """How many uploads pay off at once on `backend`.

    Remote calls wait on the network; local ones on `fsync`, which the file system batches
    when several run together (a first push writes thousands of small trees: 8 workers beat
    4 on a 2-core machine). A batched backend publishes in one transfer anyway, but staging
    is CPU work (git hashes each object into its mirror), and a pack is sealed in the worker
    that stores it: two at once use both cores.
    """
    if backend.capabilities.batched_publish:
        return 2
    return 8


class Uploads:
    """Create-once writes of immutable objects, in parallel where it pays."""

    def __init__(self, backend: Backend, workers: int | None = None) -> None:
        self.backend = backend
        self.workers = workers_for(backend) if workers is None else max(workers, 1)
        self._pool = ThreadPoolExecutor(self.workers) if self.workers > 1 else None
        self._inflight: deque[tuple[Future[None], int]] = deque()
        self._bytes = 0

    def put(self, key: str, data: bytes) -> None:
        """Write `data` under `key` (an existing identical object is fine)."""
        self.run(lambda: put_once(self.backend, key, data), len(data))

    def run(self, job: Callable[[], None], size: int) -> None:
        """Run `job` (which holds about `size` bytes until it ends) in a worker thread."""
        if self._pool is None:
            job()
            return
        while self._inflight and (len(self._inflight) >= 2 * self.workers
                                  or self._bytes + size > BYTES_IN_FLIGHT):
            self._settle()
        context = contextvars.copy_context()
        future = self._pool.submit(context.run, job)
        self._inflight.append((future, size))
        self._bytes += size

    def _settle(self) -> None:
        future, size = self._inflight.popleft()
        self._bytes -= size
        future.result()

    def wait(self) -> None:
        """Block until every write so far is done; the first failure is raised."""
        while self._inflight:
            self._settle()

    def close(self) -> None:
        """Wait for what is in flight (errors are left to `wait`) and stop the threads."""
        if self._pool is not None:
            for future, _size in self._inflight:
                future.cancel()
            self._pool.shutdown(wait=True)
            self._pool = None
        self._inflight.clear()
        self._bytes = 0

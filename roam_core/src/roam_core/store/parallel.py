"""Many small reads at once: on a remote store each one is a round trip, paid in parallel.

Trees are read level by level and missing indexes all together, each batch through a bounded
pool; the results come back in the order asked, and every read runs in a copy of the
caller's context, so the operation's deadline applies inside the worker threads too.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from roam_core.storage import Backend
from roam_core.store.malloc import map_large_buffers

#: Small objects read at once from a remote store (trees, indexes); the S3 client pools as
#: many connections. Each read is a round trip spent waiting, not working, so the time to
#: load a large home's trees falls with every thread added until the pool is full
#: (measurements in docs/benchmarks.md).
READ_WORKERS = 32

Item = TypeVar("Item")
Value = TypeVar("Value")


def read_workers(backend: Backend) -> int:
    """How many small reads pay off at once: many on a remote store, one on a local one."""
    return READ_WORKERS if backend.capabilities.remote else 1


class ParallelReads:
    """A bounded pool for batches of reads; reused across batches, closed once."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self._pool: ThreadPoolExecutor | None = None

    def map(self, read: Callable[[Item], Value], items: Sequence[Item]) -> list[Value]:
        """`read(item)` for each item, in order; the first failure is raised."""
        if self.workers == 1 or len(items) < 2:
            return [read(item) for item in items]
        if self._pool is None:
            map_large_buffers()  # a tree pack read whole must not stay in a thread's arena
            self._pool = ThreadPoolExecutor(self.workers, "roam-reads")
        futures = [self._pool.submit(contextvars.copy_context().run, read, item)
                   for item in items]
        try:
            return [future.result() for future in futures]
        finally:
            for future in futures:
                future.cancel()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def __enter__(self) -> ParallelReads:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

"""Creating an install's small temp files on writer threads, in batches.

Creating a file is kernel work (a directory entry, an inode, the page-cache copy) that
releases the interpreter lock. On a pull of 20,000 files it was most of the install's
thread; restic spreads the same work over goroutines on every core. Here the install's
thread checks each file's content against its digest and makes its folders, then hands
small files, whole, to writer threads in batches (one hand-over per batch, not per file).

Nothing changes in what is durable: every temp file is written before `wait` returns, and
the install syncs the file system after that, before anything is renamed into place.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterable

from roam_core.fs import set_mode, start_writeback

#: Files at least this big have their writeback started as soon as they are written.
WRITEBACK_MIN = 256 * 1024
#: Files up to this size go to the writer threads whole; larger ones are streamed in place.
SMALL_FILE = 256 * 1024
#: Threads creating files beside the install's thread (and the store reader's).
WRITER_THREADS = 2
#: A batch is handed over when it holds this many files or bytes.
BATCH_FILES = 64
BATCH_BYTES = 1024 * 1024
#: Batches waiting for a writer at most (bounds the bytes held: about 4 MiB).
QUEUED_BATCHES = 4

#: One file to create: its path, the mode to create it with, the mode to set after
#: writing (None: created with its final mode), and its bytes.
Job = tuple[str, int, int | None, list[bytes]]


def write_file(path: str, create_mode: int, final_mode: int | None,
               chunks: Iterable[bytes]) -> int:
    """Create `path` (never over anything) and write `chunks` to it; returns bytes written.

    Plain descriptor calls: a buffered file object adds an fstat, an lseek and an ioctl
    per file, and a chmod by path a lookup (60,000+ calls on a large pull).
    """
    written = 0
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, create_mode)
    try:
        for chunk in chunks:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view):]
            written += len(chunk)
        if final_mode is not None:
            set_mode(fd, final_mode)
        if written >= WRITEBACK_MIN:
            start_writeback(fd)
    finally:
        os.close(fd)
    return written


class TempWriters:
    """Writer threads creating whole small files handed over in batches.

    `add` queues a file (blocking while `QUEUED_BATCHES` batches wait); `wait` returns once
    every file added is written, raising the first failure; `close` stops the threads. A
    failure is raised by the next `add` or `wait`; the files after it are not written.
    """

    def __init__(self, threads: int = WRITER_THREADS) -> None:
        self._queue: queue.Queue[list[Job] | None] = queue.Queue(QUEUED_BATCHES)
        self._batch: list[Job] = []
        self._batch_bytes = 0
        self._failure: BaseException | None = None
        self._threads = [threading.Thread(target=self._work, name=f"roam-writer-{number}",
                                          daemon=True) for number in range(threads)]
        for thread in self._threads:
            thread.start()

    def _work(self) -> None:
        while True:
            batch = self._queue.get()
            try:
                if batch is None:
                    return
                for job in batch:
                    if self._failure is not None:
                        break  # the install is failing: it is rolled back, nothing to add
                    write_file(*job)
            except BaseException as failure:  # raised in the install's thread
                if self._failure is None:
                    self._failure = failure
            finally:
                self._queue.task_done()

    def add(self, path: str, create_mode: int, final_mode: int | None,
            chunks: list[bytes]) -> None:
        """Queue one whole file to be created at `path`."""
        self._raise()
        self._batch.append((path, create_mode, final_mode, chunks))
        self._batch_bytes += sum(len(chunk) for chunk in chunks)
        if len(self._batch) >= BATCH_FILES or self._batch_bytes >= BATCH_BYTES:
            self._hand_over()

    def _hand_over(self) -> None:
        if self._batch:
            self._queue.put(self._batch)
            self._batch = []
            self._batch_bytes = 0

    def wait(self) -> None:
        """Write what is still batched and wait for every file; raise the first failure."""
        self._hand_over()
        self._queue.join()
        self._raise()

    def _raise(self) -> None:
        if self._failure is not None:
            raise self._failure

    def close(self) -> None:
        """Let the files queued be written (a rollback must find them), then stop."""
        self._batch = []
        for _thread in self._threads:
            self._queue.put(None)
        for thread in self._threads:
            thread.join()

"""Creating an install's folders and temp files in a writer process, sent in batches.

Creating a file is kernel work (a directory entry, an inode, the page-cache copy). On a pull
of 20,000 files it was most of the install's thread; restic spreads the same work over
goroutines on every core. Here the install's thread checks each file's content against its
digest and names its folders, then sends both, in order, to a child process
(`write_child.py`) in batches (one `writev` per batch, not a call per file).

Nothing changes in what is durable: every temp file is written before `wait` returns, and
the install syncs the file system after that, before anything is renamed into place.
`write_file` is the same work done in the caller's thread (crash tests with kill points).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from roam_core.engine.write_child import FRAME, KEEP_MODE, WRITEBACK_MIN
from roam_core.fs import set_mode, start_writeback

#: Files up to this size are sent to the writer whole; larger ones as their bytes arrive.
SMALL_FILE = 256 * 1024


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


#: Bytes (and frame parts) gathered before they are sent to the writer process in one call.
SEND_BYTES = 256 * 1024
SEND_PARTS = 900  # below IOV_MAX (1024) for one `writev`
#: The pipe to the writer process holds this much (Linux's default ceiling for a user).
PIPE_BYTES = 1024 * 1024
_F_SETPIPE_SZ = 1031
#: How long closing waits for the writer process to finish what it was sent.
CLOSE_WAIT = 60.0


class WriterProcess:
    """A child process creating an install's folders and temp files, in the order sent.

    Creating a file is kernel work, but each call made in a thread takes the interpreter
    lock back when it returns, and waits for it while the install's thread, the store's
    readers and the decryption hold it: the writers were starved and the pull ran on one
    core (issue 22). The process (`write_child.py`) has its own interpreter; this side only
    frames the bytes and sends them down a pipe, a batch per `writev`.

    `mkdir`, `add` and `stream` queue work; `wait` returns once all of it is done and raises
    the first failure as the `OSError` the child met; `close` lets the child finish what it
    was sent (a rollback must find every temp file) and waits for it to end.
    """

    def __init__(self) -> None:
        self._child = subprocess.Popen(
            [sys.executable, "-I", "-S", str(Path(__file__).with_name("write_child.py")),
             str(os.getpid())], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env={})  # it needs no variable: no key travels
        assert self._child.stdin is not None and self._child.stdout is not None
        self._pipe = self._child.stdin.fileno()
        try:
            import fcntl

            fcntl.fcntl(self._pipe, _F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:
            pass  # a smaller pipe only means more calls
        self._parts: list[bytes] = []
        self._bytes = 0
        self._failure: OSError | None = None

    def _frame(self, kind: bytes, mode: int, final: int | None, path: str | None,
               chunks: Iterable[bytes] = ()) -> None:
        encoded = os.fsencode(path) if path is not None else b""
        data = list(chunks)
        size = sum(len(chunk) for chunk in data)
        self._parts += (FRAME.pack(kind, mode, KEEP_MODE if final is None else final,
                                   len(encoded), size), encoded, *data)
        self._bytes += size
        if self._bytes >= SEND_BYTES or len(self._parts) >= SEND_PARTS:
            self._send()

    def mkdir(self, path: str, mode: int = 0o755) -> None:
        """Queue the making of folder `path` (its parent made before, or queued before)."""
        self._frame(b"D", mode, None, path)

    def add(self, path: str, create_mode: int, final_mode: int | None,
            chunks: list[bytes]) -> None:
        """Queue one whole file to be created at `path`."""
        self._frame(b"F", create_mode, final_mode, path, chunks)

    def stream(self, path: str, create_mode: int, final_mode: int | None,
               chunks: Iterable[bytes]) -> int:
        """Queue a file whose bytes are still arriving, as they arrive; returns its size."""
        written = 0
        kind = b"O"
        for chunk in chunks:
            self._frame(kind, create_mode, None, path if kind == b"O" else None, (chunk,))
            written += len(chunk)
            kind = b"A"
        if kind == b"O":
            self._frame(b"F", create_mode, final_mode, path)
        else:
            self._frame(b"C", 0, final_mode, None)
        return written

    def _send(self) -> None:
        parts, self._parts, self._bytes = self._parts, [], 0
        if not parts or self._failure is not None:
            self._raise()
            return
        try:
            sent = os.writev(self._pipe, parts)
            total = sum(len(part) for part in parts)
            if sent < total:  # a signal cut the call short: the rest, in order
                rest = memoryview(b"".join(parts))[sent:]
                while rest:
                    rest = rest[os.write(self._pipe, rest):]
        except BrokenPipeError:
            self._failure = self._report()
            self._raise()

    def _report(self, answer: bytes | None = None) -> OSError:
        """The child's failure, from its `answer` (read here when not given), once it ended."""
        assert self._child.stdout is not None
        if answer is None:
            answer = self._child.stdout.readline()
        line = answer.decode(errors="replace").rstrip("\n")
        self._child.wait()
        number, _, rest = line.partition("\t")
        text, _, name = rest.partition("\t")
        if number.isdigit() and text:
            return OSError(int(number), text, name or None)
        return OSError(errno.EIO, "the install's writer process ended unexpectedly (exit "
                                  f"{self._child.returncode})")

    def _raise(self) -> None:
        if self._failure is not None:
            raise self._failure

    def wait(self) -> None:
        """Send what is gathered and wait until the child has done it all; raise its failure."""
        self._frame(b"W", 0, None, None)
        self._send()
        assert self._child.stdout is not None
        line = self._child.stdout.readline()
        if line != b"ok\n":
            self._failure = self._report(line)
            self._raise()

    def close(self) -> None:
        """Let the child finish what it was sent (a rollback must find it), then reap it."""
        self._parts, self._bytes = [], 0
        assert self._child.stdin is not None
        try:
            self._child.stdin.close()
        except BrokenPipeError:
            pass
        try:
            self._child.wait(CLOSE_WAIT)
        except subprocess.TimeoutExpired:
            self._child.kill()
            self._child.wait()
        if self._child.stdout is not None:
            self._child.stdout.close()

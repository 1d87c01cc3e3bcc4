"""The install's writer process: creates the folders and temp files it is sent, in order.

Started by `roam_core.engine.writers.WriterProcess` as `python -I -S write_child.py PID`:
standard library only and nothing of roam imported, so it starts in milliseconds and its
file creation never waits for the installing process's interpreter lock.

It reads frames from stdin, each a header (`FRAME`: kind, mode, final mode, path length,
data length), the path and the data. Kinds: `D` make a folder; `F` create a file, write the
data, close it; `O` create a file and write the data, kept open; `A` write the data to the
open file; `C` close it; `W` answer `ok` on stdout once everything before it is done. The
first failure is answered as `errno<TAB>strerror<TAB>path` and ends the process; so does the
end of stdin (after everything sent before it is done) and the death of its parent.
"""

from __future__ import annotations

import os
import signal
import struct
import sys
from collections.abc import Callable

#: kind (1 byte), mode, final mode (`KEEP_MODE`: none), path length, data length
FRAME = struct.Struct("<cHHIQ")
#: A final mode of this value: the file keeps the mode it was created with.
KEEP_MODE = 0xFFFF
#: Files at least this big have their writeback started when closed (`writers` too).
WRITEBACK_MIN = 256 * 1024
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
_PR_SET_PDEATHSIG = 1
_SYNC_FILE_RANGE_WRITE = 2


def _libc() -> object:
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _function(name: str, *argtypes: str) -> Callable[..., int] | None:
    """The C library's `name` taking `argtypes` (ctypes type names), or None where it lacks it.

    `roam_core.libc.function`'s twin: this process imports nothing of roam (`-I -S`).
    """
    import ctypes

    try:
        found = getattr(_libc(), name)
    except (OSError, AttributeError):
        return None
    found.argtypes = [getattr(ctypes, kind) for kind in argtypes]
    found.restype = ctypes.c_int
    return found


def _die_with(parent: int) -> None:
    """Be killed when the parent dies: nothing may appear in a home its recovery cleaned."""
    prctl = _function("prctl", "c_int", "c_ulong")
    if prctl is not None:  # elsewhere than Linux: the end of stdin still stops it
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        os._exit(1)  # the parent died before the call above


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _close(fd: int, final: int, size: int, writeback: Callable[..., int] | None) -> None:
    """Set the file's final mode, start its writeback when large (`writeback`: none), close."""
    try:
        if final != KEEP_MODE:
            os.fchmod(fd, final)
        if size >= WRITEBACK_MIN and writeback is not None:
            writeback(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)
    finally:
        os.close(fd)


def serve(source: object, answer: int) -> None:
    """Carry out the frames read from `source` until its end; OSError on the first failure."""
    read = source.read  # type: ignore[attr-defined]
    # looked up once, not per file; a refinement where the C library has it (Linux's)
    writeback = _function("sync_file_range", "c_int", "c_int64", "c_int64", "c_uint")
    fd = -1
    size = 0
    while True:
        header = read(FRAME.size)
        if len(header) < FRAME.size:
            return
        kind, mode, final, path_length, data_length = FRAME.unpack(header)
        path = read(path_length)
        data = read(data_length) if data_length else b""
        if len(path) < path_length or len(data) < data_length:
            return  # cut short: the parent is gone
        if kind in (b"F", b"O"):
            fd = os.open(path, _CREATE, mode)
            size = 0
        if data:
            _write_all(fd, data)
            size += len(data)
        if kind in (b"F", b"C"):
            _close(fd, final, size, writeback)
            fd = -1
        elif kind == b"D":
            os.mkdir(path, mode)
        elif kind == b"W":
            _write_all(answer, b"ok\n")


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the parent's to handle
    _die_with(int(sys.argv[1]))
    try:
        with open(0, "rb", buffering=1 << 20) as source:
            serve(source, 1)
    except OSError as error:
        name = os.fsdecode(error.filename) if error.filename is not None else ""
        line = f"{error.errno or 0}\t{error.strerror or error}\t{name}"
        _write_all(1, line.replace("\n", " ").encode(errors="replace") + b"\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

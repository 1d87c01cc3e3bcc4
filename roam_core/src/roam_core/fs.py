"""Durable file writes: temp file in the same directory, fsync, rename, fsync the directory."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path

from roam_core import libc

TEMP_PREFIX = ".roam-tmp-"
_AT_FDCWD = -100
_RENAME_NOREPLACE = 1
_SYNC_FILE_RANGE_WRITE = 2


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_path(target: Path) -> Path:
    return target.with_name(f"{TEMP_PREFIX}{secrets.token_hex(6)}-{target.name}"[:255])


#: what a file system without Unix modes (FAT, exFAT, some network shares) answers a chmod
_NO_MODES = (errno.ENOSYS, errno.EPERM, errno.EOPNOTSUPP)


def set_mode(target: str | Path | int, mode: int) -> None:
    """Chmod (or fchmod, given a descriptor); a file system that keeps no modes is let be."""
    try:
        if isinstance(target, int):
            os.fchmod(target, mode)
        else:
            os.chmod(target, mode)
    except OSError as error:
        if error.errno not in _NO_MODES:
            raise


def write_atomic(path: Path, data: bytes | Iterable[bytes], mode: int = 0o600) -> None:
    """Replace `path` with `data` so a crash leaves either the old or the new bytes.

    `data` may come in pieces (a large journal is never held whole).
    """
    temp = temp_path(path)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        with os.fdopen(fd, "wb") as handle:
            for piece in (data,) if isinstance(data, bytes) else data:
                handle.write(piece)
            handle.flush()
            os.fsync(handle.fileno())
        set_mode(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    fsync_dir(path.parent)


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700 for the last component."""
    path.mkdir(parents=True, exist_ok=True)
    if os.stat(path).st_mode & 0o777 != 0o700:  # a chmod would change the folder's ctime
        set_mode(path, 0o700)
    return path


def _renameat2() -> Callable[..., int] | None:
    return libc.function("renameat2", "c_int", "c_char_p", "c_int", "c_char_p", "c_uint")


def rename_noreplace(source: str, target: str) -> None:
    """Rename `source` to `target`; `FileExistsError` if anything is at `target`.

    One `renameat2(RENAME_NOREPLACE)` call: no check-then-rename window, and no `lstat`.
    Where the C library or the file system lacks it, a hard link (which never replaces)
    and an unlink do the same in two steps; a folder is looked for, then renamed.
    """
    renameat2 = _renameat2()
    if renameat2 is not None:
        if renameat2(_AT_FDCWD, os.fsencode(source), _AT_FDCWD, os.fsencode(target),
                     _RENAME_NOREPLACE) == 0:
            return
        code = libc.errno()
        if code not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise OSError(code, os.strerror(code), target)
    if not os.path.isdir(source):
        try:
            os.link(source, target)
        except OSError as error:
            # FAT and some FUSE file systems have no hard links: look, then rename
            if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
        else:
            os.unlink(source)
            return
    # a folder cannot be hard-linked: look, then rename
    if os.path.lexists(target):
        raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), target)
    os.rename(source, target)


def start_writeback(fd: int) -> None:
    """Ask the kernel to start writing `fd`'s dirty pages now, without waiting.

    An install syncs the file system before it renames anything; pages whose writeback
    already began while later files were being written make that sync short.
    Best effort: where the call is missing it does nothing.
    """
    sync_file_range = libc.function("sync_file_range", "c_int", "c_int64", "c_int64",
                                    "c_uint")
    if sync_file_range is not None:
        sync_file_range(fd, 0, 0, _SYNC_FILE_RANGE_WRITE)

"""One writer per root home: an advisory `flock` on `<root>/roam/lock`."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from roam_core.errors import LockedError
from roam_core.fs import ensure_private_dir


class HomeLock:
    """The home's lock. Taken non-blocking: a second roam command fails fast instead of waiting."""

    def __init__(self, state_dir: Path) -> None:
        self.path = state_dir / "lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        ensure_private_dir(self.path.parent)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LockedError(
                "another roam command is running on this home; try again when it finishes"
            ) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


@contextlib.contextmanager
def locked(state_dir: Path) -> Iterator[HomeLock]:
    """Hold the home's lock for the block."""
    lock = HomeLock(state_dir)
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()


def is_locked(state_dir: Path) -> bool:
    """Whether another process holds the home's lock right now (for hooks that must skip)."""
    lock = HomeLock(state_dir)
    try:
        lock.acquire()
    except LockedError:
        return True
    lock.release()
    return False

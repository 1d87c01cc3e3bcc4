"""Hermes's own cron lock (`cron/.jobs.lock`), held while roam installs a jobs file.

Hermes takes an fcntl `flock` on `<home>/cron/.jobs.lock` around every load→modify→save of
`jobs.json`, waiting at most 30 s. roam takes the same lock, with the same bound, for the whole
journaled install and its rollback, so a scheduler tick or a `hermes cron` command never
interleaves with it. A lock another process keeps fails the install closed, before anything
is written.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from roam_core import deadline
from roam_core.errors import LockedError
from roam_core.tiers.cron import is_jobs_file

LOCK_NAME = ".jobs.lock"
#: Hermes's own bound on waiting for this lock (`_JOBS_LOCK_TIMEOUT_SECONDS`).
WAIT_SECONDS = 30.0
POLL_SECONDS = 0.05


def lock_paths(root: Path, rels: Iterable[str]) -> list[Path]:
    """The lock file of every cron folder among `rels`, sorted (one order: no deadlock)."""
    return sorted({root / Path(rel).parent / LOCK_NAME for rel in rels if is_jobs_file(rel)})


def _acquire(path: Path, wait: float) -> int:
    # Hermes creates the folder 0700 and the lock file with open(..., "a+"); do the same
    # when this home has no cron folder yet (nobody can be holding a lock that is not there).
    if not path.parent.exists():
        path.parent.mkdir(parents=True, mode=0o700)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    current = deadline.current()
    if current is not None:
        wait = min(wait, max(0.0, current.remaining()))
    give_up = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= give_up:
                os.close(fd)
                raise LockedError(
                    f"Hermes's cron lock {path} is held by another process (waited "
                    f"{wait:.0f} s); nothing was written — try again when Hermes's cron is "
                    "idle") from None
            time.sleep(POLL_SECONDS)


@contextlib.contextmanager
def holding(root: Path, rels: Iterable[str], wait: float | None = None) -> Iterator[None]:
    """Hold the cron lock of every jobs file among `rels` for the block (no-op for none)."""
    held: list[int] = []
    try:
        for path in lock_paths(root, rels):
            held.append(_acquire(path, WAIT_SECONDS if wait is None else wait))
        yield
    finally:
        for fd in reversed(held):
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

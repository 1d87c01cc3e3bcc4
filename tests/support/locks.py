"""A file lock held by another process, the way Hermes (or another roam) would hold it."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

_HOLDER = ("import fcntl, sys, time\n"
           "f = open(sys.argv[1], 'a+'); fcntl.flock(f, fcntl.LOCK_EX)\n"
           "print('held', flush=True); time.sleep(120)")


@contextlib.contextmanager
def flock_held(lock: Path) -> Iterator[None]:
    """`lock` flocked (exclusive) by a child process until the block ends."""
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(lock)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        yield
    finally:
        holder.kill()
        holder.wait()

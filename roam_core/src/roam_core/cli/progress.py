"""A progress line for long pushes and pulls, on a terminal only."""

from __future__ import annotations

import sys
import time


class Progress:
    """Bytes done and rate on stderr, redrawn at most a few times a second; silent off a TTY."""

    def __init__(self, what: str, *, quiet: bool = False, total: int | None = None) -> None:
        self.what = what
        self.enabled = not quiet and sys.stderr.isatty()
        self.total = total
        self.done = 0
        self.started = time.monotonic()
        self._drawn = 0.0

    def advance(self, count: int) -> None:
        self.done += count
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._drawn < 0.2:
            return
        self._drawn = now
        elapsed = max(now - self.started, 1e-6)
        rate = self.done / elapsed
        line = f"{self.what}: {self.done / 1048576:.1f} MiB at {rate / 1048576:.1f} MiB/s"
        if self.total:
            left = max(self.total - self.done, 0) / rate if rate else 0
            line += f", {100 * self.done / self.total:.0f}%, ETA {left:.0f} s"
        sys.stderr.write("\r" + line[:120].ljust(60))
        sys.stderr.flush()

    def close(self) -> None:
        if self.enabled and self._drawn:
            sys.stderr.write("\r" + " " * 60 + "\r")
            sys.stderr.flush()

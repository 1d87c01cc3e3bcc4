"""A progress line for long operations (push, pull, stats, forget, prune, key rotate).

It shows files (or trees, generations) and bytes done, the rate and the time left, redrawn
at most five times a second on stderr; a count alone when there are no bytes to count. Off
a terminal, with `--quiet` or with `--json` it prints nothing at all,
so piped and machine-read output never carries it.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

#: Redraw at most this often (seconds): a line per chunk would cost more than the work.
REDRAW = 0.2
WIDTH = 79


def _mib(count: int) -> str:
    return f"{count / 1048576:.1f}"


class Progress:
    """Implements `roam_core.engine.progress.ProgressSink` as one redrawn stderr line."""

    def __init__(self, what: str, *, quiet: bool = False, stream: TextIO | None = None,
                 clock: object = time.monotonic, unit: str = "files") -> None:
        self.what = what
        #: what `files` counts (trees for stats, generations for forget)
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = not quiet and _is_tty(self.stream)
        self.clock = clock
        self.files_total = 0
        self.bytes_total = 0
        self.files = 0
        self.done = 0
        self.started = self._now()
        self._drawn = 0.0
        self._width = 0

    def _now(self) -> float:
        return float(self.clock())  # type: ignore[operator]

    def begin(self, files: int, total_bytes: int) -> None:
        self.files_total = files
        self.bytes_total = total_bytes
        self.started = self._now()

    def advance(self, done_bytes: int, files: int = 0) -> None:
        self.done += done_bytes
        self.files += files
        if not self.enabled:
            return
        now = self._now()
        last = bool(self.files_total) and self.files >= self.files_total
        if now - self._drawn < REDRAW and not last:  # the last one is always drawn
            return
        self._drawn = now
        self._draw(self.line(now))

    def line(self, now: float) -> str:
        """The text of the progress line at time `now`."""
        elapsed = max(now - self.started, 1e-6)
        rate = self.done / elapsed
        files = f"{self.files}/{self.files_total}" if self.files_total else str(self.files)
        if not self.bytes_total and not self.done:  # counting things, not bytes
            return f"{self.what}: {files} {self.unit}"[:WIDTH]
        size = (f"{_mib(self.done)}/{_mib(self.bytes_total)} MiB" if self.bytes_total
                else f"{_mib(self.done)} MiB")
        line = f"{self.what}: {files} {self.unit}, {size}, {rate / 1048576:.1f} MiB/s"
        if self.bytes_total and rate > 0:
            left = max(self.bytes_total - self.done, 0) / rate
            line += f", ETA {_eta(left)}"
        return line[:WIDTH]

    def _draw(self, line: str) -> None:
        self.stream.write("\r" + line.ljust(self._width))
        self.stream.flush()
        self._width = len(line)

    def close(self) -> None:
        """Erase the line, leaving the terminal as it was."""
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


def _eta(seconds: float) -> str:
    seconds = int(seconds + 0.5)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def _is_tty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False

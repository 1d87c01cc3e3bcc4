"""What the engine tells a progress display: how much there is to do, and what got done."""

from __future__ import annotations

from typing import Protocol


class ProgressSink(Protocol):
    """Implemented by `roam_core.cli.progress.Progress`; engine code never prints itself."""

    def begin(self, files: int, total_bytes: int) -> None:
        """The work ahead: `files` files holding `total_bytes` bytes."""

    def advance(self, done_bytes: int, files: int = 0) -> None:
        """`done_bytes` more bytes (and `files` more whole files) are done."""

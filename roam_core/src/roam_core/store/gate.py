"""The gate sealed packs wait behind until the push's secret scan has passed.

A push scans its files beside the packing (docs/decisions.md, "The scan runs beside the
packing"; a large push's in a worker process, "A large push scans in one worker
process"). The sealing threads seal packs while the scan works, but the store threads
store nothing (no pack, no index) before the gate opens; a finding closes it and every held
pack is dropped unstored. What waits is bounded by the packing stages' byte budget
(`pipeline.PackStages`): once that is full, the packer's own thread waits for a held pack,
so it reads no further. The gate tells the scan when that happens (`on_stall`), so the
push's own thread helps the scan instead of idling.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class GateClosed(Exception):
    """The scan did not pass (a finding, or the push gave up): nothing may be stored."""


class UploadGate:
    """Opens once (the scan passed) or closes once (it did not); the first decision holds."""

    def __init__(self) -> None:
        self._decided = threading.Event()
        self._passed = False
        self._lock = threading.Lock()
        #: 1 when packs are stored in the packer's own thread (a pack held here holds the
        #: packer); otherwise None, and the packer's stages say when it waits (`full`).
        self.holders: int | None = None
        self._held = 0
        self._full = False
        #: Called when the push can go no further before the verdict (the packer waits for
        #: room and a pack waits here): the scan then helps its worker (secretscan/worker.py).
        self.on_stall: Callable[[], None] | None = None
        #: Called once if the gate closes (the scan then stops: nothing will be stored).
        self.on_close: Callable[[], None] | None = None
        #: How long the push stood still for the verdict (the packer at its budget with a
        #: pack held here): what the scan cost the packing beyond sharing the cores.
        self.stall_seconds = 0.0
        self._stalled_since: float | None = None

    def open(self) -> None:
        """Let the held packs be stored (unless the gate was closed first)."""
        self._decide(True)

    def close(self) -> None:
        """Drop the held packs: every waiter raises `GateClosed` (unless already open)."""
        self._decide(False)

    def _decide(self, passed: bool) -> None:
        with self._lock:
            if self._decided.is_set():
                return
            self._passed = passed
            self._decided.set()
            self._stall_ends()
        if not passed and self.on_close is not None:
            self.on_close()

    @property
    def closed(self) -> bool:
        """Whether the gate was closed (the packer stops reading then)."""
        return self._decided.is_set() and not self._passed

    @property
    def decided(self) -> bool:
        return self._decided.is_set()

    def wait(self) -> None:
        """Block until the gate is decided; `GateClosed` unless it opened."""
        if not self._decided.is_set():
            with self._lock:
                self._held += 1
                stalled = (self._full or self._held == self.holders) \
                    and not self._decided.is_set()
            try:
                if stalled:
                    self._stall_starts()
                self._decided.wait()
            finally:
                with self._lock:
                    self._held -= 1
        if not self._passed:
            raise GateClosed("the secret scan did not pass: nothing is stored")

    def full(self, waiting: bool) -> None:
        """The packer starts (True) or stops waiting for room in its budget.

        Waiting while a pack is held here, it waits for the verdict (whichever came first).
        """
        with self._lock:
            self._full = waiting
            stalled = waiting and self._held > 0 and not self._decided.is_set()
            if not waiting:
                self._stall_ends()
        if stalled:
            self._stall_starts()

    def _stall_starts(self) -> None:
        with self._lock:
            if self._stalled_since is None and not self._decided.is_set():
                self._stalled_since = time.perf_counter()
        if self.on_stall is not None:
            self.on_stall()

    def _stall_ends(self) -> None:
        """Count a stall that ends now (called under the lock)."""
        if self._stalled_since is not None:
            self.stall_seconds += time.perf_counter() - self._stalled_since
            self._stalled_since = None

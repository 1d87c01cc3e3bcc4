"""Whether the packs a push relies on are really in the store, at few requests.

An index says which blobs a pack holds, not that the pack is still there: a provider can lose
it. Before a push references a blob through an index, the pack is confirmed once per process:
by a cheap existence probe for the first two packs, and by one listing of `packs/` beyond that
(on S3 one LIST answers for a thousand packs where a thousand HEADs would each cost a round
trip).
"""

from __future__ import annotations

import threading

from roam_core.storage import Backend

#: Packs probed one by one before a single listing of every pack is cheaper.
PROBES = 2


class PackPresence:
    """Answers "is this pack in the store?", each pack asked of the backend at most once."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._confirmed: set[str] = set()
        self._listed: set[str] | None = None
        self._probes = 0
        self._lock = threading.Lock()

    def __call__(self, pack: str) -> bool:
        with self._lock:
            if pack in self._confirmed:
                return True
            if self._listed is None and self._probes < PROBES:
                self._probes += 1
                found = self.backend.exists(pack)
            else:
                if self._listed is None:
                    self._listed = set(self.backend.list("packs/"))
                found = pack in self._listed
            if found:
                self._confirmed.add(pack)
            return found

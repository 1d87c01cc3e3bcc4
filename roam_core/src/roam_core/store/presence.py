"""Whether the packs a push relies on are really in the store, at few requests.

An index says which blobs a pack holds, not that the pack is still there: a provider can lose
it. Before a push references a blob through an index, the pack is confirmed once per process:
by a cheap existence probe for the first two packs, and by one listing of `packs/` beyond that
(on S3 one LIST answers for a thousand packs where a thousand HEADs would each cost a round
trip).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from roam_core.storage import Backend
from roam_core.store.parallel import ParallelReads, read_workers

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

    def confirm(self, packs: Iterable[str]) -> None:
        """Ask about several packs at once: probes sent together, or the one listing.

        Within the probe budget the probes go in parallel (one round trip, not one each);
        beyond it the listing answers for all. Answers are kept for `__call__`.
        """
        with self._lock:
            wanted = sorted(set(packs) - self._confirmed)
            if not wanted or self._listed is not None:
                return
            if self._probes + len(wanted) > PROBES:
                self._listed = set(self.backend.list("packs/"))
                self._confirmed.update(pack for pack in wanted if pack in self._listed)
                return
            self._probes += len(wanted)
            with ParallelReads(read_workers(self.backend)) as reads:
                found = reads.map(self.backend.exists, wanted)
            self._confirmed.update(pack for pack, there in zip(wanted, found, strict=True)
                                   if there)

"""Packs are sealed in a few threads and stored in more: uploads travel while packing goes on.

Sealing is processor work: two threads use two cores. Storing is a wait on the network: on a
remote store each pack costs at least two round trips (the pack, then its index), so at
100 ms RTT two threads that seal and then store in turn keep at most two requests in flight
and the cores idle while they wait. Here a sealed pack is handed to a store stage with
its own threads (more on a remote store), and the sealers go on with the next pack.

What the stages hold is bounded by bytes, not by packs: a pack's raw bytes count from the
moment the caller hands it over, its sealed bytes (compressed: usually fewer) from when it
is sealed until it and its index are stored. The caller waits while the budget is spent, so
it reads no further than the budget allows. Each job runs in a copy of the caller's context
(the operation's deadline applies in the worker threads too); the first failure stops the
caller at its next hand-over and is raised by `wait`.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

#: A sealing job: seals, and returns the job that stores the result and how many bytes that
#: job holds until it ends.
Seal = Callable[[], tuple[Callable[[], None], int]]


class PackStages:
    """A seal stage and a store stage, bounded together by the bytes they hold."""

    def __init__(self, sealers: int, storers: int, budget: int) -> None:
        #: Threads in each stage; 0 sealers: both stages run in the caller's thread.
        self.sealers = sealers
        self.storers = storers if sealers else 0
        self.budget = budget
        self._seal_pool = ThreadPoolExecutor(sealers, "roam-seal") if sealers else None
        self._store_pool = ThreadPoolExecutor(self.storers, "roam-store") if sealers else None
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._held = 0  # bytes handed over and not yet stored
        self._jobs = 0  # packs handed over and not yet stored (or failed)
        self._failure: BaseException | None = None
        #: Told (quickly, under the stages' lock) when the caller starts and stops waiting
        #: for room in the budget (the push's scan gate: store/gate.py).
        self.on_full: Callable[[bool], None] | None = None
        #: While this answers True (the push's scan has no verdict yet, and every sealed
        #: pack waits at its gate: store/gate.py), packs are taken only up to `held_budget`
        #: bytes instead of `budget`.
        self.holding: Callable[[], bool] | None = None
        self.held_budget = budget

    def submit(self, seal: Seal, size: int) -> None:
        """Seal (then store) a pack of about `size` raw bytes; waits while the budget is spent.

        Raises the first failure of an earlier pack instead of taking a new one.
        """
        if self._seal_pool is None:
            store, _sealed = seal()
            store()
            return
        with self._changed:
            waited = False
            while self._failure is None and self._jobs and self._held + size > self._limit():
                if self.on_full is not None:
                    self.on_full(True)
                    waited = True
                self._changed.wait()
            if waited and self.on_full is not None:
                self.on_full(False)
            if self._failure is not None:
                raise self._failure
            self._held += size
            self._jobs += 1
        context = contextvars.copy_context()
        self._seal_pool.submit(context.run, self._sealing, seal, size)

    def _limit(self) -> int:
        """The bytes the stages may hold now (`held_budget` while `holding`)."""
        holding = self.holding
        return self.held_budget if holding is not None and holding() else self.budget

    def _sealing(self, seal: Seal, size: int) -> None:
        try:
            store, sealed = seal()
        except BaseException as error:
            self._done(size, error)
            return
        with self._changed:
            # the sealed bytes replace the raw ones (the raw chunks are let go while sealing)
            self._held += sealed - size
            self._changed.notify_all()
        assert self._store_pool is not None
        try:
            self._store_pool.submit(contextvars.copy_context().run, self._storing, store,
                                    sealed)
        except RuntimeError as error:  # the stages were closed meanwhile
            self._done(sealed, error)

    def _storing(self, store: Callable[[], None], sealed: int) -> None:
        try:
            store()
        except BaseException as error:
            self._done(sealed, error)
            return
        self._done(sealed, None)

    def _done(self, held: int, error: BaseException | None) -> None:
        with self._changed:
            self._held -= held
            self._jobs -= 1
            if error is not None and self._failure is None:
                self._failure = error
            self._changed.notify_all()

    @property
    def failed(self) -> bool:
        with self._lock:
            return self._failure is not None

    def wait(self) -> None:
        """Block until every pack handed over is stored; the first failure is raised."""
        with self._changed:
            while self._jobs:
                self._changed.wait()
            if self._failure is not None:
                raise self._failure

    def close(self) -> None:
        """Drop the packs not yet started, wait for those running, stop the threads."""
        for pool in (self._seal_pool, self._store_pool):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self._seal_pool = self._store_pool = None

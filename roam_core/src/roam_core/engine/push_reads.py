"""The reads a push makes besides HEAD, sent beside it rather than one after another.

On a remote store every read is a round trip. Apart from HEAD a push needs the index listing
(which blobs and trees the store holds), the void records (packs found lost), the lease
(packs a prune marked) and a probe of the tree packs that hold its base generation's trees.
None of them needs HEAD, so they leave with it, in threads, and come back while the home is
walked; the probe follows the index listing. Reading the lease at the start of the push
rather than later is what the lease asks for anyway: marks are honoured from a push's start
(docs/decisions.md, "Prune and concurrent pushes"). On a local or git store, where a read is
no round trip of its own, each runs when first asked, as before.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Mapping, MutableMapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

from roam_core.engine import lease as lease_module
from roam_core.store.manifest import BlobRef
from roam_core.store.presence import PackPresence
from roam_core.store.repository import Repository

Value = TypeVar("Value")


class _Later(Generic[Value]):
    """A value read in a worker thread already, or on first use when there is no pool."""

    def __init__(self, job: Callable[[], Value], pool: ThreadPoolExecutor | None) -> None:
        self._job = job
        self._future: Future[Value] | None = None
        if pool is not None:  # in a copy of the caller's context: its deadline applies
            self._future = pool.submit(contextvars.copy_context().run, job)

    def result(self) -> Value:
        if self._future is None:
            self._future = Future()
            try:
                self._future.set_result(self._job())
            except BaseException as error:
                self._future.set_exception(error)
        return self._future.result()


class PushReads:
    """A push's reads of the store other than HEAD, started together (see the module)."""

    def __init__(self, repo: Repository, *, eager: bool = True) -> None:
        capabilities = repo.backend.capabilities
        self.repo = repo
        self._pool = ThreadPoolExecutor(3, "roam-push-reads") \
            if eager and capabilities.remote and not capabilities.batched_publish else None
        # the void records first: the index listing asks for them once its own LIST is back
        self._voids = _Later(repo.voided, self._pool)
        self._known = _Later(repo.known_blobs, self._pool)
        self._marked = _Later(lambda: lease_module.marked_keys(repo), self._pool)
        self._probe: _Later[None] | None = None

    def known_blobs(self) -> MutableMapping[str, BlobRef]:
        """`Repository.known_blobs`, read when the push started."""
        self._voids.result()
        return self._known.result()

    def marked(self) -> frozenset[str]:
        """Every key a pending prune mark names (`lease.marked_keys`)."""
        return self._marked.result()

    def probe_trees(self, folders: Mapping[str, str] | None, present: PackPresence) -> None:
        """Confirm, once the index listing is in, the tree packs holding `folders`' trees.

        The answers wait in `present`, which the tree writing asks (a known tree counts only
        while its tree pack is stored); without a pool the tree writing asks them itself.
        """
        if self._pool is None or not folders:
            return
        trees = set(folders.values())

        def probe() -> None:
            self._known.result()  # the trees' places come with the index listing
            if self.repo.format < 2:
                return
            places = self.repo.tree_places()
            present.confirm({ref[1] for tree in trees for ref in places.get(tree, ())})

        self._probe = _Later(probe, self._pool)

    def settle(self) -> None:
        """Wait for the tree-pack probe, if one was started (its failure is raised)."""
        if self._probe is not None:
            self._probe.result()

    def close(self) -> None:
        """Let the threads go: reads still travelling end on their own, unused."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

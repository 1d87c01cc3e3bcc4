"""Pull: verify the remote generation, plan, and (with --apply) install through the journal."""

from __future__ import annotations

import contextlib
import contextvars
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from roam_core.engine import hermes_guard, rekeyed
from roam_core.engine import remote as remote_module
from roam_core.engine.backups import unpushed_paths
from roam_core.engine.journal import Install, prune_backups
from roam_core.engine.plan import Plan, Planner
from roam_core.engine.progress import ProgressSink
from roam_core.engine.session import Session, hermes_version
from roam_core.engine.state import raise_floor, save_state
from roam_core.engine.status import collector_paused
from roam_core.settings import number


@dataclass
class PullResult:
    plan: Plan
    applied: bool = False
    verified_bytes: int = 0
    #: an interrupt arrived once the install had committed: it is complete
    interrupted_after_commit: bool = False
    #: the generation this device counts as seen after the pull (None: none yet)
    seen: int | None = None

    @property
    def exit_code(self) -> int:
        return 2 if self.applied and self.plan.kept_conflicts else 0


class _PlacesBeside:
    """Where the trees are (index listing, void records, indexes), read in a thread.

    On a remote store each of those reads is a round trip, and none needs HEAD: a first
    pull sends them beside HEAD, a later one as soon as HEAD names a new generation of a
    format that packs its trees, so they come back while the snapshot is read and the home
    is walked. The trees' load then finds them read (`Repository.tree_places` is read once,
    under a lock). A failure here is not raised: the load reads them again and says why.
    """

    def __init__(self, session: Session) -> None:
        capabilities = session.backend.capabilities
        self._repo = session.repo
        self._worth = capabilities.remote and not capabilities.batched_publish
        self._pool: ThreadPoolExecutor | None = None
        self._future: Future[object] | None = None

    def start(self) -> None:
        if self._worth and self._future is None:
            self._pool = ThreadPoolExecutor(1, "roam-pull-reads")
            self._future = self._pool.submit(contextvars.copy_context().run,
                                             self._repo.tree_places)

    def close(self) -> None:
        """Wait for the reads (they touch the repository's caches), then stop the thread."""
        if self._future is not None:
            with contextlib.suppress(Exception):
                self._future.result()
        if self._pool is not None:
            self._pool.shutdown(wait=True)


# A pull makes a few objects per file of the remote that live to its end (entries, ops,
# rows) and hold no cycles; every collection walked them all again: ~1.2 s of the main
# thread's 6.5 s of processor time at 100,000 files (bench/pull_profile.py phases).
@collector_paused()
def pull(session: Session, *, apply: bool = False, overwrite_conflicts: bool = False,
         only: tuple[str, ...] = (), keep_seen: bool = False, dry_run: bool = False,
         progress: ProgressSink | None = None, cron_only: bool = False) -> PullResult:
    """Plan a pull; install it when `apply`; `dry_run` downloads and verifies, writing nothing.

    `cron_only` restricts the pull to the cron job definitions (`roam pull --cron`); like
    `only`, it does not advance the generation this device has seen.
    """
    state = session.require_state()
    places = _PlacesBeside(session)
    try:
        if state.generation is None:
            places.start()  # a first pull reads every tree: their places beside HEAD
        view = remote_module.require_remote(session, state)
        if view.head.generation != state.generation and session.repo.format >= 2:
            places.start()
        rekeyed.adopt(session, state, view)  # after a key rotation: the base's new blob names
        planner = Planner(session, state, view, overwrite_conflicts=overwrite_conflicts,
                          only=only, cron_only=cron_only)
        view.read_trees()
    finally:
        places.close()
    # the indexes' refs served to find the trees: the manifest says where every blob is
    session.repo.forget_catalog()
    plan = planner.build()
    result = PullResult(plan)
    writes = [op.rel for op in plan.ops if op.action == "write"]
    planned = sum(view.manifest[rel].size for rel in writes if rel in view.manifest)
    session.deadline.size_to(planned, len(writes))
    if dry_run:
        for op in plan.ops:
            if op.source is not None:
                result.verified_bytes += sum(len(chunk) for chunk in op.source())
        return result
    if not apply:
        return result
    hermes_guard.check_pull(view.snapshot, hermes_version(), session.core)
    new_state = plan.new_state
    assert new_state is not None
    keep_seen = keep_seen or cron_only
    if keep_seen or only:
        new_state.generation = state.generation
        new_state.snapshot = state.snapshot
        new_state.last_pull = state.last_pull
        new_state.set_base(state.base)
    if plan.ops:
        if progress is not None:
            progress.begin(len(writes), planned)
        merged = {item["path"] for item in (*plan.configs_merged, *plan.memories_merged)}
        unpushed = unpushed_paths(plan.ops, state.base, merged, overwrite_conflicts)
        install = Install(session.root, session.state_dir, plan.ops, progress, unpushed)
        try:
            install.run(new_state)
        except KeyboardInterrupt:
            if not install.settled():
                raise
            # Ctrl-C after the commit point: the install is whole, so say so and finish
            result.interrupted_after_commit = True
        prune_backups(session.state_dir, int(number(session.settings, "backup_keep")))
    else:
        save_state(session.state_dir, new_state)
    if not (keep_seen or only):
        raise_floor(session.state_dir, view.head.store, session.backend.identity(),
                    view.head.generation)
        view.remember_trees()
    result.applied = True
    result.seen = new_state.generation
    return result

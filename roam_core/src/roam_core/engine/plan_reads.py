"""The remote files a pull's plan merges, read together before it compares path by path.

A plan reads a few remote files' contents to merge them: the plugin inventory, each
`config.yaml` that differs from the local one, each cron jobs file that differs. Read in the
comparison loop they were one round trip each, one after another, before the first byte of
the install was asked for. Here the ones the loop will certainly read are found first (the
same tests the loop makes) and read at once on a remote store; the loop then takes them from
`ReadAhead`, and reads anything else (a memory merge, a guess that missed) as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from roam_core.engine import inventory
from roam_core.store.manifest import FileEntry, synced_mode
from roam_core.store.parallel import ParallelReads, read_workers
from roam_core.tiers.archive import is_archive
from roam_core.tiers.cron import is_jobs_file
from roam_core.types import Scope

if TYPE_CHECKING:
    from roam_core.engine.plan import Planner


class ReadAhead:
    """Remote contents read before the plan's loop, by SHA-256; the rest read when asked."""

    def __init__(self, planner: Planner) -> None:
        self._planner = planner
        self._contents: dict[str, bytes] = {}

    def fill(self) -> None:
        """Read every file the loop will merge, at once (when there are two or more)."""
        wanted = {entry.sha256: entry for entry in _merged(self._planner)}
        repo = self._planner.session.repo
        if len(wanted) < 2 or read_workers(repo.backend) == 1:
            return  # one read, or no round trips to save: each is read where it is used
        entries = list(wanted.values())
        with ParallelReads(min(len(entries), read_workers(repo.backend))) as reads:
            contents = reads.map(repo.read_content, entries)
        self._contents = {entry.sha256: data for entry, data in zip(entries, contents,
                                                                    strict=True)}

    def read(self, entry: FileEntry) -> bytes:
        """`entry`'s bytes: read ahead, or read now."""
        found = self._contents.get(entry.sha256)
        return found if found is not None else self._planner.session.repo.read_content(entry)


def _merged(planner: Planner) -> list[FileEntry]:
    """The remote (and base) entries `Planner.build`'s loop reads for certain, in its order."""
    remote = planner.view.manifest
    scope = planner.scope
    found: list[FileEntry] = []
    for rel in sorted(rel for rel in remote if rel == inventory.INVENTORY
                      or is_jobs_file(rel) or scope.is_config(rel)):
        # the loop's own filters, in its order: a path it skips reads nothing
        if (planner.only and not under(rel, planner.only)) \
                or (planner.cron_only and not is_jobs_file(rel)) or is_archive(rel) \
                or scope.classify(rel) is not Scope.SHARED or planner.hidden(rel):
            continue
        r, loc = remote[rel], planner.local.get(rel)
        if rel == inventory.INVENTORY:
            found.append(r)
        elif is_jobs_file(rel):
            if loc is None or loc.sha256 != r.sha256:  # `plan_cron` merges: remote and base
                base = planner.base.get(rel)
                found.extend([r] if base is None else [r, base])
        elif loc is None or loc.sha256 != r.sha256 \
                or synced_mode(loc.mode) != synced_mode(r.mode):
            found.append(r)  # `Planner._config` merges it
        elif planner.state.projections.get(rel) is None:
            found.append(r)  # the same: accepted as the base of the next merge
    return found


def under(rel: str, prefixes: tuple[str, ...]) -> bool:
    """Whether `rel` is one of `prefixes` (folders or files) or inside one."""
    return any(rel == p.rstrip("/") or rel.startswith(p.rstrip("/") + "/") for p in prefixes)

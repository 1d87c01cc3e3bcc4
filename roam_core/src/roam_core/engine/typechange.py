"""Type changes in a pull plan: a file that became a folder here or there, and the reverse.

A remote file at `x` needs the local folder `x/` gone, and a remote file at `x/y` needs the
local file `x` gone. The planner decides each path on its own; this pass, run once at the
end, looks at what those decisions leave standing in the way. Where the plan already
deletes everything in the way (it was synced and is unchanged here), the install simply
deletes first and writes after. Where something local would stay (an edited file, a file
the base never had, a file the rules keep here), the remote path is a conflict kept local;
`--overwrite-conflicts` deletes what is in the way instead, each file backed up first.
"""

from __future__ import annotations

import os
import stat as stat_module
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from roam_core.engine.journal import Op, sha256_file
from roam_core.engine.scan import stat_signature

if TYPE_CHECKING:
    from roam_core.engine.plan import Planner


def _ancestors(rel: str) -> list[str]:
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: depth + 1]) for depth in range(len(parts))]


def _files_below(root: str, folder: str) -> list[str]:
    """Every non-folder below `folder` (relative), whatever the rules say about it."""
    found: list[str] = []
    for here, folders, files in os.walk(os.path.join(root, folder)):
        rel = os.path.relpath(here, root).replace(os.sep, "/")
        found.extend(f"{rel}/{name}" for name in files)
        # a symlinked folder is a name in the way, never entered
        found.extend(f"{rel}/{name}" for name in folders
                     if os.path.islink(os.path.join(here, name)))
    return found


def _regular(root: str, rel: str) -> bool:
    try:
        return stat_module.S_ISREG(os.lstat(os.path.join(root, rel)).st_mode)
    except FileNotFoundError:
        return True  # gone already: nothing in the way


def _delete_op(root: str, rel: str) -> Op | None:
    """A delete of whatever file is at `rel`, backed up first like any replaced file."""
    path = os.path.join(root, rel)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if not stat_module.S_ISREG(st.st_mode):
        return None  # never deleted through (see `_regular`)
    return Op(rel, "delete", expect=stat_signature(st), original_sha=sha256_file(Path(path)))


def _keep(planner: Planner, op: Op, why: str) -> None:
    """Take `op` out of the plan: its remote version is a conflict kept local, with `why`."""
    plan = planner.plan
    plan.ops.remove(op)
    for names in (plan.added, plan.changed):
        if op.rel in names:
            names.remove(op.rel)
    planner.keep_by_shape(op.rel, planner.view.manifest.get(op.rel), why)


class _Folders:
    """What stands at each folder of the remote's new files here, looked at once per folder.

    Nothing can stand below a folder this home lacks (or holds a file at): no path there is
    looked at, so a plan for an empty home makes no `stat` under its missing folders (it
    made one per file: 100,000 at 100,000 files, issue 22).
    """

    def __init__(self, root: str, local: Collection[str], local_folders: set[str],
                 deleting: set[str]) -> None:
        self.root = root
        self.local = local
        self.local_folders = local_folders
        self.deleting = deleting
        #: folder -> (the files in the way on the way to it, outermost first; whether it is
        #: a folder here, so that something may stand below it)
        self._known: dict[str, tuple[tuple[str, ...], bool]] = {"": ((), True)}

    def of(self, folder: str) -> tuple[tuple[str, ...], bool]:
        """The files in the way of anything in `folder`, and whether `folder` is a folder."""
        known = self._known.get(folder)
        if known is None:
            outer, present = self.of(folder.rpartition("/")[0])
            if folder in self.deleting:  # a file the plan deletes first: nothing below
                known = (outer, False)
            elif folder in self.local_folders:  # it holds local files
                known = (outer, True)
            elif folder in self.local or (present and self._file(folder)):
                known = ((*outer, folder), False)
            else:
                known = (outer, present and self._folder(folder))
            self._known[folder] = known
        return known

    def _file(self, folder: str) -> bool:
        """Whether something other than a folder (a file, a dangling link) is at `folder`."""
        path = os.path.join(self.root, folder)
        return os.path.lexists(path) and not os.path.isdir(path)

    def _folder(self, folder: str) -> bool:
        return os.path.isdir(os.path.join(self.root, folder))


def settle_type_changes(planner: Planner) -> None:
    """Keep local, or clear the way for, every remote file whose path changed type here."""
    plan = planner.plan
    root = str(planner.session.root)
    writes = [op for op in plan.ops if op.action == "write"]
    if not writes:
        return
    # each local file's folders, found from its own folder once however many files it holds
    parents = {rel.rpartition("/")[0] for rel in planner.local}
    local_folders = {folder for parent in parents if parent
                     for folder in _ancestors(parent + "/")}
    deleting = {op.rel for op in plan.ops if op.action == "delete"}
    folders = _Folders(root, planner.local, local_folders, deleting)
    for op in writes:
        outer, present = folders.of(op.rel.rpartition("/")[0])
        in_the_way = [rel for rel in outer if rel not in deleting]
        if op.rel in local_folders or (present and os.path.isdir(os.path.join(root, op.rel))):
            in_the_way.extend(rel for rel in _files_below(root, op.rel) if rel not in deleting)
        if not in_the_way:
            continue
        if not planner.overwrite:
            _keep(planner, op, f"{in_the_way[0]} is in the way here, changed since last sync")
            continue
        odd = next((rel for rel in in_the_way if not _regular(root, rel)), None)
        if odd is not None:  # a link, FIFO or socket is never deleted through, nor backed up
            _keep(planner, op, f"{odd} is in the way here and is not a regular file")
            continue
        for rel in in_the_way:
            delete = _delete_op(root, rel)
            if delete is not None and rel not in deleting:
                plan.ops.append(delete)
                plan.overwritten.append(rel)
                deleting.add(rel)


def case_insensitive(root: str, probe: str = "roam") -> bool:
    """Whether the file system holding `root` folds case (macOS, Windows shares, FAT).

    `probe` is a name known to exist there (roam's own folder): if its upper-case spelling
    opens too while the folder lists no such name, names that differ only in case are one
    name here. (Inode numbers cannot tell: some FUSE file systems number each lookup.)
    """
    upper = probe.upper()
    try:
        return os.path.lexists(os.path.join(root, upper)) and upper not in os.listdir(root)
    except OSError:
        return False


def settle_case_collisions(planner: Planner) -> None:
    """Keep local each remote path that would merge with another here, differing in case.

    Only on a case-folding file system, where `skills/A/x` and `skills/a/x` are one file.
    """
    plan = planner.plan
    writes = [op for op in plan.ops if op.action == "write"]
    if not writes or not case_insensitive(str(planner.session.root)):
        return
    deleting = {op.rel for op in plan.ops if op.action == "delete"}
    spellings: dict[str, set[str]] = {}
    for rel in {*planner.view.manifest, *(set(planner.local) - deleting)}:
        parts = rel.split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            spellings.setdefault(prefix.casefold(), set()).add(prefix)
    for op in writes:
        parts = op.rel.split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            others = sorted(spellings.get(prefix.casefold(), set()) - {prefix})
            if others:
                _keep(planner, op, f"{prefix} differs only in case from {others[0]}, and this "
                      "file system does not tell them apart")
                break

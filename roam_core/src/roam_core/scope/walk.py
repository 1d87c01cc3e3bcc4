"""Listing the shared files of a home without entering anything that cannot be shared.

A folder is entered only when some path below it could be shared, decided from its relative
path alone, so `venv/`, `node_modules/`, `sessions/` or `cache/` are never listed, however
large. Symbolic links are never followed (a link may point out of the home), and names that
are not UTF-8 or hold control characters cannot travel; all of these are recorded in
`skipped` when they would otherwise have been shared, with the reason, so every command can
say what it left out, and a push can carry forward what the last generation held there
instead of publishing a deletion (docs/decisions.md, "Shapes a home can take").
"""

from __future__ import annotations

import os
import re
import stat as stat_module
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roam_core.errors import UserError
from roam_core.types import Scope

if TYPE_CHECKING:
    from roam_core.scope.chain import Chain
    from roam_core.scope.model import Entry, FileStat

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: (prefix, base, [(name, lstat)]): one folder's shared files, `walk_runs`
Run = tuple[str, str, list[tuple[str, os.stat_result]]]


def display_name(rel: str) -> str:
    """A printable form of a relative path whose bytes may not be UTF-8."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


_SPECIAL = ((stat_module.S_ISFIFO, "FIFO"), (stat_module.S_ISSOCK, "socket"),
            (stat_module.S_ISCHR, "character device"), (stat_module.S_ISBLK, "block device"))
SYMLINK = "symbolic link (never followed)"


def special_kind(mode: int) -> str:
    """`not a regular file (FIFO)` and the like: why a special file does not travel."""
    for test, kind in _SPECIAL:
        if test(mode):
            return f"not a regular file ({kind})"
    return "not a regular file"


def hidden_by(skipped: list[tuple[str, str]]) -> Callable[[str], bool]:
    """Whether a path is, or lies below, something the walk skipped (it could not see it).

    Such a path's last synced entry is carried forward, never published as removed.
    """
    tops = {rel for rel, _reason in skipped}
    if not tops:
        return lambda rel: False

    def hidden(rel: str) -> bool:
        if rel in tops:
            return True
        parts = rel.split("/")
        return any("/".join(parts[:depth]) in tops for depth in range(1, len(parts)))

    return hidden


def _problem(name: str) -> str | None:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return "file name is not valid UTF-8"
    if _CONTROL.search(name):
        return "file name holds control characters"
    return None


def _would_share(rules: Chain, name: str) -> bool:
    """Whether `name` would have been shared as a file, or entered as a folder."""
    decided = rules.decide_name(name)
    return (decided is not None and decided.scope is Scope.SHARED) \
        or rules.narrow(name).shareable()


def walk_shared(root: Path, chain: Chain, skipped: list[tuple[str, str]],
                folders: list[tuple[str, FileStat]] | None = None) -> Iterator[Entry]:
    """Every shared regular file below `root`, sorted by `rel`, recording what was skipped.

    `folders`, when given, receives each folder listed (relative, no trailing slash) with
    its `lstat` taken before the listing.
    """
    from roam_core.scope.model import Entry, FileStat

    of = FileStat.of
    for prefix, base, run in walk_runs(root, chain, skipped, folders):
        for name, info in run:
            yield Entry(prefix + name, base + name, of(info))


def walk_runs(root: Path, chain: Chain, skipped: list[tuple[str, str]],
              folders: list[tuple[str, FileStat]] | None = None) -> Iterator[Run]:
    """The shared regular files below `root` as runs of one folder's, in `rel` order.

    Each run is (prefix, base, [(name, lstat)]): a file's `rel` is `prefix + name` and its
    absolute path `base + name`. A folder's names are sorted with each subfolder's as
    `name + "/"`, and the subfolder walked at its place, which is the order of the `rel`
    strings: nothing is gathered and sorted whole, and a caller building a record per file
    never holds every `lstat` beside them (issue 22).
    """
    from roam_core.scope.model import FileStat

    top = _listed("", str(root), chain, root, skipped, folders, FileStat)
    if top is None:
        return
    stack: list[tuple[str, str, list[tuple[str, Any]]]] = [top]
    while stack:
        prefix, base, items = stack.pop()
        run: list[tuple[str, os.stat_result]] = []
        while items:
            key, value = items.pop()
            if isinstance(value, os.stat_result):
                run.append((key, value))
                continue
            # a subfolder: what comes before it is handed over, the rest waits below it
            if run:
                yield prefix, base, run
                run = []
            stack.append((prefix, base, items))
            inside = _listed(f"{prefix}{key[:-1]}/", value[0], value[1], root, skipped,
                             folders, FileStat)
            if inside is not None:
                stack.append(inside)
            break
        if run:
            yield prefix, base, run


def _listed(prefix: str, folder: str, rules: Chain, root: Path,
            skipped: list[tuple[str, str]], folders: list[tuple[str, FileStat]] | None,
            file_stat: type[FileStat]) -> tuple[str, str, list[tuple[str, Any]]] | None:
    """One folder listed: (prefix, base, items), items sorted in reverse to be popped.

    An item is (name, lstat) for a shared regular file, (name + "/", (path, chain)) for a
    folder to enter.
    """
    try:
        if folders is not None:
            folders.append((prefix[:-1], file_stat.of(os.lstat(folder))))
        with os.scandir(folder) as listing:
            items = list(listing)
    except FileNotFoundError:
        return None
    except OSError as error:
        if not prefix:  # the whole home unseen would read as every file removed
            raise UserError(f"cannot read the home {root}: "
                            f"{error.strerror or error}") from None
        skipped.append((prefix[:-1], f"cannot read folder: {error.strerror or error}"))
        return None
    found: list[tuple[str, Any]] = []
    decide = rules.decide_name
    shared = Scope.SHARED
    for item in items:
        name = item.name
        # nearly every name is printable ASCII: two C calls instead of a function call
        problem = None if name.isascii() and name.isprintable() else _problem(name)
        if problem is None and item.is_symlink():
            problem = SYMLINK
        if problem is not None:
            if _would_share(rules, name):
                skipped.append((display_name(prefix + name), problem))
            continue
        if item.is_dir(follow_symlinks=False):
            inside = rules.narrow(name)
            if inside.shareable():
                found.append((name + "/", (item.path, inside)))
            continue
        decided = decide(name)
        if decided is None or decided.scope is not shared:
            continue
        try:
            info = item.stat(follow_symlinks=False)
        except OSError:
            continue  # vanished while we looked
        if not stat_module.S_ISREG(info.st_mode):
            skipped.append((prefix + name, special_kind(info.st_mode)))
            continue
        found.append((name, info))
    found.sort(reverse=True)
    return prefix, folder + "/", found

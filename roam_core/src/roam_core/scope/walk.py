"""Listing the shared files of a home without entering anything that cannot be shared.

A folder is entered only when some path below it could be shared, decided from its relative
path alone, so `venv/`, `node_modules/`, `sessions/` or `cache/` are never listed, however
large. Symbolic links are never followed (a link may point out of the home), and names that
are not UTF-8 or hold control characters cannot travel; all of these are recorded in
`skipped` when they would otherwise have been shared.
"""

from __future__ import annotations

import os
import re
import stat as stat_module
from pathlib import Path
from typing import TYPE_CHECKING

from roam_core.types import Scope

if TYPE_CHECKING:
    from roam_core.scope.chain import Chain
    from roam_core.scope.model import Entry

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def display_name(rel: str) -> str:
    """A printable form of a relative path whose bytes may not be UTF-8."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


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
                folders: list[tuple[str, os.stat_result]] | None = None) -> list[Entry]:
    """Every shared regular file below `root` (unsorted), recording what was skipped.

    `folders`, when given, receives each folder listed (relative, no trailing slash) with
    its `lstat` taken before the listing.
    """
    from roam_core.scope.model import Entry

    found: list[Entry] = []
    pending: list[tuple[str, str, Chain]] = [("", str(root), chain)]
    while pending:
        prefix, folder, rules = pending.pop()
        try:
            if folders is not None:
                folders.append((prefix[:-1], os.lstat(folder)))
            with os.scandir(folder) as listing:
                items = list(listing)
        except FileNotFoundError:
            continue
        except OSError as error:
            if prefix:
                skipped.append((prefix, f"cannot read folder: {error.strerror or error}"))
            continue
        for item in items:
            name = item.name
            rel = prefix + name
            # nearly every name is printable ASCII: two C calls instead of a function call
            problem = None if name.isascii() and name.isprintable() else _problem(name)
            if problem is None and item.is_symlink():
                problem = "symbolic link (never followed)"
            if problem is not None:
                if _would_share(rules, name):
                    skipped.append((display_name(rel), problem))
                continue
            if item.is_dir(follow_symlinks=False):
                inside = rules.narrow(name)
                if inside.shareable():
                    pending.append((rel + "/", item.path, inside))
                continue
            decided = rules.decide_name(name)
            if decided is None or decided.scope is not Scope.SHARED:
                continue
            try:
                info = item.stat(follow_symlinks=False)
            except OSError:
                continue  # vanished while we looked
            if not stat_module.S_ISREG(info.st_mode):
                skipped.append((rel, "not a regular file"))
                continue
            found.append(Entry(rel, item.path, info))
    return found

"""A remembered `roam status`: when nothing it looked at has changed, it is not worked out again.

A full look costs reading the state (every path of the last generation with its digest),
the stat cache, one scope decision per name and one `lstat` per shared file.
Most of the time none of it changed. The memo (`roam/cache/status.json`) records what the last
full look saw and found: the state's save count (`serial`), a fingerprint of the scope rules, the
signature of every folder it listed and of every shared file, this device's record without
its generation entries, and the changes. A later status whose signatures all still match
returns those changes after one `lstat` per folder and per file.

A folder's signature (mtime, ctime, inode) changes whenever a name in it is added, removed or
renamed, which is what git's untracked cache relies on too; a file's changes with its size,
mtime, inode or ctime, as for the stat cache. The clock behind those times is coarse, so a
folder or file changed within `RACY_NS` of the look is recorded as unknown and never matches
(git's "racy" entries): a change made in the same tick as the look cannot be missed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from roam_core import __version__
from roam_core.engine import statedb
from roam_core.engine.state import LocalState
from roam_core.fs import write_atomic

if TYPE_CHECKING:
    from roam_core.engine.session import Session
    from roam_core.scope.model import FileStat, ScopeModel

MEMO_FILE = "status.json"
VERSION = 4
#: Anything changed this close to the look is recorded as unknown.
RACY_NS = 2_000_000_000
_HEAVY = ("base", "projections")




def _key(session: Session, scope: ScopeModel,
         state_signature: list[int] | None) -> list[Any] | None:
    if state_signature is None:
        return None  # a state that cannot say when it last changed is looked at every time
    return [__version__, sys.version, str(session.root), state_signature, scope.fingerprint()]


def state_signature(session: Session) -> list[int] | None:
    """Taken before the state is read: a later change then makes the memo stale, not wrong.

    The state's save count, not its file's times: two saves within one tick of the file
    system's clock could leave the same times behind.
    """
    serial = statedb.read_serial(session.state_dir)
    return None if serial is None else [serial]


def recall(session: Session) -> tuple[LocalState, dict[str, list[Any]]] | None:
    """This device's record (without its generation entries) and the changes, if still true."""
    try:
        data = json.loads((session.state_dir / "cache" / MEMO_FILE).read_bytes())
        if data.get("v") != VERSION:
            return None
        key = _key(session, session.scope, state_signature(session))
        if key is None or data["key"] != key:
            return None
        root = str(session.root)
        lstat = os.lstat
        for rel, signature, names, digest in data["folders"]:
            folder = f"{root}/{rel}" if rel else root
            st = lstat(folder)
            if signature != [st.st_mtime_ns, st.st_ctime_ns, st.st_ino]:
                return None
            if names and _digest(map(lstat, [f"{folder}/{name}" for name in names])) != digest:
                return None
        state = LocalState(**data["state"])
        changes = {name: list(paths) for name, paths in data["changes"].items()}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None  # no memo, a damaged one, or a file gone: the full look decides
    return state, changes


def remember(session: Session, state: LocalState, signature: list[int] | None, started_ns: int,
             folders: list[tuple[str, FileStat]], files: dict[str, list[int]],
             changes: dict[str, list[Any]]) -> None:
    """Record a full look that began at `started_ns` (wall clock, nanoseconds).

    `folders` are the folders the walk listed, `files` the shared files' signatures
    ([size, mtime, inode, ctime]) as the look saw them.
    """
    key = _key(session, session.scope, signature)
    if key is None:
        return
    racy_after = started_ns - RACY_NS
    # one pass over the files, in `rel` order: a folder's files mostly come together, so
    # its lists are looked up once per stretch, not once per file (issue 22)
    named: dict[str, tuple[list[str], list[tuple[int, ...]]]] = {}
    racy: set[str] = set()
    folder: str | None = None
    names: list[str] = []
    sigs: list[tuple[int, ...]] = []
    for rel, sig in files.items():
        where, _, name = rel.rpartition("/")
        if where != folder:
            folder = where
            names, sigs = named.setdefault(where, ([], []))
        names.append(name)
        sigs.append(tuple(sig))
        if sig[1] >= racy_after or sig[3] >= racy_after:
            racy.add(where)
    entries = []
    for rel, st in folders:
        names, sigs = named.get(rel, ([], []))
        known = rel not in racy and st.st_mtime_ns < racy_after and st.st_ctime_ns < racy_after
        entries.append([rel, [st.st_mtime_ns, st.st_ctime_ns, st.st_ino] if known else None,
                        names, _digest_of(tuple(sigs))])
    record = {item.name: getattr(state, item.name) for item in fields(state)
              if item.init and item.name not in _HEAVY}
    data = {"v": VERSION, "key": key, "state": record, "changes": changes, "folders": entries}
    try:
        write_atomic(session.state_dir / "cache" / MEMO_FILE,
                     json.dumps(data, separators=(",", ":")).encode())
    except OSError:
        pass  # only slower next time


def _digest(stats: Iterable[os.stat_result]) -> int:
    return _digest_of(tuple((st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
                            for st in stats))


def _digest_of(signatures: tuple[tuple[int, ...], ...]) -> int:
    """Python's hash of a tuple of integers, computed in C.

    Stable between runs of one interpreter version (only str and bytes hashes are salted);
    the memo's key names the version.
    """
    return hash(signatures)

"""Versions that exist only in `roam/backups/`: found, listed, restored and dropped.

An install copies every file it replaces to `roam/backups/<stamp>/`; `backup_keep` prunes
old folders. A replaced version the store never received (a local edit overwritten by
`pull --overwrite-conflicts`, `restore --apply` over an unpushed edit) has no other copy, so
its folder is marked (`<stamp>.kept.json`) and kept until the user drops it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from roam_core import boundedjson
from roam_core.engine.journal import KEPT_SUFFIX, Install, Op, kept_marker, sha256_file
from roam_core.engine.scan import stat_signature
from roam_core.engine.session import Session
from roam_core.errors import UserError
from roam_core.store.manifest import FileEntry, check_path
from roam_core.tiers.cron import is_jobs_file

_STAMP = re.compile(r"^[0-9]{8}T[0-9]{12}Z$")


def unpushed_paths(ops: Iterable[Op], base: Mapping[str, FileEntry],
                   merged: Collection[str], overwrite: bool) -> set[str]:
    """Paths whose local version an install replaces although the store never received it.

    Compared with the last synced manifest, so a version pushed long ago counts as unpushed
    (kept: the safe side). A merged file (config, memories, cron jobs) keeps its local part,
    unless conflicts are overwritten.
    """
    found: set[str] = set()
    for op in ops:
        if op.expect is None or op.original_sha is None:
            continue  # nothing was there
        entry = base.get(op.rel)
        if entry is not None and op.original_sha == entry.sha256:
            continue
        if (op.rel in merged or is_jobs_file(op.rel)) and not overwrite:
            continue
        found.add(op.rel)
    return found


def _folder(state_dir: Path) -> Path:
    return state_dir / "backups"


def _checked(state_dir: Path, stamp: str) -> Path:
    folder = _folder(state_dir) / stamp
    if not _STAMP.match(stamp) or not folder.is_dir():
        raise UserError(f"no backup {stamp!r} (roam backups list shows them)")
    return folder


def _kept_files(marker: Path) -> list[str]:
    try:
        data = boundedjson.loads(marker.read_bytes(), str(marker))
        files = data["files"]
        if not isinstance(files, dict):
            raise TypeError
    except (OSError, ValueError, TypeError, KeyError):
        raise UserError(f"{marker} is damaged; the files beside it in "
                        f"{marker.name.removesuffix(KEPT_SUFFIX)}/ are still there") from None
    return sorted(str(rel) for rel in files)


def kept(state_dir: Path) -> list[dict[str, Any]]:
    """Each backup holding versions the store lacks: its stamp and those files, oldest first."""
    folder = _folder(state_dir)
    if not folder.is_dir():
        return []
    found = []
    for marker in sorted(folder.glob(f"*{KEPT_SUFFIX}")):
        stamp = marker.name.removesuffix(KEPT_SUFFIX)
        if (folder / stamp).is_dir():
            found.append({"stamp": stamp, "files": _kept_files(marker)})
    return found


def kept_count(state_dir: Path) -> int:
    """How many local versions exist only in backups."""
    return sum(len(item["files"]) for item in kept(state_dir))


def show(state_dir: Path, stamp: str) -> dict[str, Any]:
    """Every file of one backup, with its size, and which of them only it holds."""
    folder = _checked(state_dir, stamp)
    marker = kept_marker(folder)
    only_here = set(_kept_files(marker)) if marker.exists() else set()
    files = []
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.is_symlink():
            rel = path.relative_to(folder).as_posix()
            files.append({"path": rel, "size": path.stat().st_size,
                          "only_in_backups": rel in only_here})
    return {"stamp": stamp, "files": files}


def drop(state_dir: Path, stamp: str) -> None:
    """Delete one backup for good (the user said so)."""
    folder = _checked(state_dir, stamp)
    shutil.rmtree(folder)
    kept_marker(folder).unlink(missing_ok=True)


def _source(data: bytes) -> Callable[[], Iterator[bytes]]:
    return lambda: iter((data,))


def restore(session: Session, stamp: str, paths: Iterable[str]) -> list[str]:
    """Put backed-up versions back through the journal; what they replace is backed up too."""
    folder = _checked(session.state_dir, stamp)
    state = session.require_state()
    ops = []
    for rel in paths:
        check_path(rel, "the path given")
        source = folder / rel
        if not source.is_file() or source.is_symlink():
            raise UserError(f"backup {stamp} holds no file {rel}")
        data = source.read_bytes()
        target = session.root / rel
        try:
            expect: list[int] | None = stat_signature(os.lstat(target))
        except FileNotFoundError:
            expect = None
        ops.append(Op(rel, "write", hashlib.sha256(data).hexdigest(),
                      source.stat().st_mode & 0o777, expect,
                      None if expect is None else sha256_file(target),
                      source=_source(data)))
    if not ops:
        raise UserError("name the paths to restore (roam backups show STAMP lists them)")
    unpushed = unpushed_paths(ops, state.base, (), True)
    Install(session.root, session.state_dir, ops, unpushed=unpushed).run(state)
    return [op.rel for op in ops]

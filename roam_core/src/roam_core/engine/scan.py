"""What the home holds now: shared files, their digests, and a stat cache to skip re-reading.

A file whose size, mtime, inode and ctime match the cache keeps its cached digest without
being read, so a warm `status` on a large home costs one `lstat` per shared file. Config
files are digested as their shared projection, the form in which they travel.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from roam_core.engine.statedb import connect
from roam_core.errors import UserError
from roam_core.tiers.cron import is_jobs_file
from roam_core.tiers.cron import projection as cron_projection

if TYPE_CHECKING:
    from roam_core.scope.model import FileStat, ScopeModel

CACHE_DB = "stat.db"
LEGACY_CACHE = "stat.json"
READ_SIZE = 1024 * 1024
#: Rows a stat cache writes at once while files are read: a first push reads every file of
#: the home, and the record of each held until the end was a good part of its peak (issue 22)
FLUSH_ROWS = 4096


@dataclass(slots=True)
class LocalFile:
    """One shared file as it is in the home right now.

    Slotted: a push or status holds one per shared file, and an instance dict would cost
    more than the fields themselves (issue 22).
    """

    rel: str
    #: the absolute path, or the folder (ending in "/") that `rel` is relative to: a walk's
    #: files share their home's, instead of a path string each (issue 22)
    where: str
    size: int
    mode: int
    signature: list[int]
    is_config: bool = False
    sha256: str | None = None
    #: the projection this device last accepted (configs): keys it keeps to itself carry
    #: the fleet's value forward instead of deleting it everywhere
    base_projection: str | None = None
    #: what travels instead of the file when a push redacted it (`redact_memories`)
    redacted: bytes | None = field(default=None, repr=False)
    #: the digest the stat cache holds for this very signature (`StatCache.prime`)
    cached: str | None = field(default=None, repr=False)
    _projected: bytes | None = field(default=None, repr=False)

    @property
    def location(self) -> str:
        """The absolute path; `path` makes the `Path` only for files actually read."""
        return self.where + self.rel if self.where.endswith("/") else self.where

    @property
    def path(self) -> Path:
        return Path(self.location)

    @property
    def travels_as_is(self) -> bool:
        """Whether the bytes that travel are the file on disk (no redacted copy, no projection)."""
        return not self.is_config and self.redacted is None

    def projection(self, host_keys: Iterable[str] = ()) -> bytes:
        """A config's shared projection, parsed once per operation however often it is read."""
        if self._projected is None:
            self._projected = projected_bytes(self.path, self.rel, host_keys,
                                              self.base_projection)
        return self._projected

    def open_content(self, host_keys: Iterable[str] = ()) -> BinaryIO:
        """The bytes that travel: the file, its redacted copy, or a config's projection."""
        if self.redacted is not None:
            return io.BytesIO(self.redacted)
        if self.is_config:
            return io.BytesIO(self.projection(host_keys))
        return open(self.location, "rb")


def read_umask() -> int:
    """The process's umask, read without changing it where /proc says it."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    found = os.umask(0o077)
    os.umask(found)
    return found


def install_mode(remote_mode: int, local: LocalFile | None, umask: int | None = None) -> int:
    """The mode a file installed from the store gets: only its executable bit comes along.

    A replaced file keeps its own mode (a private 0600 stays private) with the executable
    bits set or cleared; a new one gets 0644 or 0755 under the home's umask (`umask`, read
    here when not given: a caller planning many files reads it once). Nothing from a
    remote entry makes a file setuid or group/world-writable.
    """
    executable = bool(remote_mode & 0o100)
    if local is not None:
        kept = local.mode & 0o777 & ~0o111
        return kept | ((kept & 0o444) >> 2) if executable else kept
    return (0o755 if executable else 0o644) & ~(read_umask() if umask is None else umask)


def projected_bytes(path: Path, rel: str, host_keys: Iterable[str] = (),
                    base: str | None = None) -> bytes:
    if is_jobs_file(rel):  # cron job definitions without their run state
        return cron_projection(path.read_bytes(), rel)
    from roam_core.config import shared_projection

    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{rel} is not UTF-8; roam cannot project it") from None
    return shared_projection(text, host_keys=tuple(host_keys), source=rel,
                             base=base).encode("utf-8")


def stat_signature(st: os.stat_result | FileStat) -> list[int]:
    """What says a file is unchanged without reading it: size, mtime, inode and ctime."""
    return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]


class StatCache:
    """rel → (signature, digest) remembered between commands, in `roam/cache/stat.db`.

    Read in one pass over its rows (`prime`), each matching file given its digest, so no
    table of every path is held beside the files; written by the row, so a push that changed
    ten files writes ten rows whatever the size of the home. Its loss only costs re-reading.
    """

    def __init__(self, cache_dir: Path) -> None:
        self.path = cache_dir / CACHE_DB
        self.primed = False
        #: stored paths that were not among the primed files: dropped unless kept
        self.stale: list[str] = []
        #: files whose digest is to be stored: their rows are made at `save` (a row per file
        #: made at once would sit beside every record of a first push, issue 22)
        self.pending: dict[str, LocalFile] = {}

    def prime(self, files: Mapping[str, LocalFile]) -> None:
        """One pass over the stored rows: every file whose signature matches gets its digest."""
        self.primed = True
        conn = self._open()
        if conn is None:
            return
        get = files.get
        try:
            for rel, size, mtime, ino, ctime, digest in conn.execute("SELECT * FROM stat"):
                item = get(rel)
                if item is None:
                    self.stale.append(rel)
                elif item.signature == [size, mtime, ino, ctime]:
                    item.cached = digest
        except sqlite3.Error:
            pass  # a damaged cache is an empty one; the next save rewrites the rows
        finally:
            conn.close()

    def lookup(self, item: LocalFile) -> str | None:
        if self.primed:
            return item.cached
        conn = self._open()  # one file outside a whole pass (history): one query
        if conn is None:
            return None
        try:
            row = conn.execute("SELECT * FROM stat WHERE path = ?", (item.rel,)).fetchone()
        except sqlite3.Error:
            row = None
        finally:
            conn.close()
        return str(row[5]) if row and list(row[1:5]) == item.signature else None

    def remember(self, item: LocalFile, digest: str) -> None:
        if item.cached != digest or not self.primed:
            item.cached = digest
            self.pending[item.rel] = item
            if len(self.pending) >= FLUSH_ROWS:
                # a row says what a file's bytes were at a signature: true whatever becomes
                # of the command, so it need not wait for the end
                self._write([])

    def save(self, keep: Iterable[str]) -> None:
        wanted = keep if isinstance(keep, (set, frozenset, dict)) else set(keep)
        self._write([rel for rel in self.stale if rel not in wanted])
        self.stale = []

    def _write(self, gone: list[str]) -> None:
        """Delete the rows of `gone` and write the pending ones, in one transaction."""
        if not gone and not self.pending:
            return
        try:
            conn = self._open(create=True)
            assert conn is not None
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("DELETE FROM stat WHERE path = ?", [(rel,) for rel in gone])
                conn.executemany("INSERT OR REPLACE INTO stat VALUES (?, ?, ?, ?, ?, ?)",
                                 ((item.rel, *item.signature, item.cached)
                                  for item in self.pending.values()))
                conn.execute("COMMIT")
            finally:
                conn.close()
        except (OSError, sqlite3.Error):
            pass  # only slower next time
        self.pending = {}

    def _open(self, create: bool = False) -> sqlite3.Connection | None:
        legacy = self.path.with_name(LEGACY_CACHE)
        if not self.path.exists() and not create and not legacy.exists():
            return None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # a cache: a save lost to a crash is only slower, so commits are not synced
            conn = connect(self.path, durable=False)
            conn.execute("CREATE TABLE IF NOT EXISTS stat (path TEXT PRIMARY KEY, size INTEGER,"
                         " mtime INTEGER, ino INTEGER, ctime INTEGER, sha256 TEXT) WITHOUT ROWID")
        except (OSError, sqlite3.Error):
            return None
        if legacy.exists():
            _migrate_cache(conn, legacy)
        return conn


def _migrate_cache(conn: sqlite3.Connection, legacy: Path) -> None:
    """Carry an earlier roam's `stat.json` into the table once, then remove it."""
    try:
        entries = json.loads(legacy.read_bytes())
        rows = [(rel, *signature, digest) for rel, (signature, digest) in entries.items()
                if isinstance(signature, list) and len(signature) == 4]
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT OR REPLACE INTO stat VALUES (?, ?, ?, ?, ?, ?)", rows)
        conn.execute("COMMIT")
    except (OSError, ValueError, TypeError, AttributeError, sqlite3.Error):
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    legacy.unlink(missing_ok=True)


def list_shared(scope: ScopeModel, projections: Mapping[str, str] | None = None, *,
                modes: Mapping[str, int] | None = None,
                found: Callable[[list[LocalFile]], None] | None = None
                ) -> dict[str, LocalFile]:
    """Every shared regular file of the home (no content read).

    `projections` are the config projections this device last accepted (the state).
    `modes` is given when the home's file system keeps no modes (`engine.filemodes`): a
    file's mode is then its entry there, or 0644 for a new file, never what the disk says.
    `found` is told of each folder's files as the walk finds them (a first push's secret
    scan starts on them while the walk goes on).
    """
    files: dict[str, LocalFile] = {}
    home = f"{scope.root}/"
    is_config = scope.is_config
    projections = projections or {}
    for prefix, base, run in scope.walk_runs():
        # a walk's files share their home's path string, unless the folder is not below it
        where = home if base == home + prefix else None
        for name, st in run:
            rel = prefix + name
            # `is_config` means "travels as a projection": config.yaml and cron jobs files
            projected = (name == "config.yaml" and is_config(rel)) \
                or (name == "jobs.json" and is_jobs_file(rel))
            files[rel] = LocalFile(
                rel, where or base + name, st.st_size,
                st.st_mode & 0o777 if modes is None else modes.get(rel, 0o644),
                [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns],
                projected, None, projections.get(rel) if projected else None)
        if found is not None:
            found([files[prefix + name] for name, _st in run])
    return files


def digest_file(item: LocalFile, host_keys: Iterable[str] = ()) -> str:
    digest = hashlib.sha256()
    with item.open_content(host_keys) as handle:
        while chunk := handle.read(READ_SIZE):
            digest.update(chunk)
    return digest.hexdigest()


def fill_digests(files: dict[str, LocalFile], cache: StatCache,
                 host_keys: Iterable[str] = ()) -> None:
    """Give every file its digest: from the stat cache, or by reading it once."""
    if not cache.primed:
        cache.prime(files)
    for item in files.values():
        if item.sha256 is None and not item.is_config:  # projections depend on the rules
            item.sha256 = item.cached  # what `lookup` answers once primed, without a call
        if item.sha256 is None:
            try:
                item.sha256 = digest_file(item, host_keys)
            except FileNotFoundError:
                continue  # vanished while we looked; treated as absent by the caller
            if not item.is_config:
                cache.remember(item, item.sha256)

"""`roam/state.db`: the device's state in SQLite, read as a stream and written by the row.

A whole-file `state.json` was parsed whole and rewritten by every push: 33 MB at 100,000 files
for a change of ten. Here each path of the last synced generation is one row of `base`, every
other field of `LocalState` one row of `meta` (its JSON), and a save writes only the rows that
differ from what is stored, in one transaction: the commit point of a push or an install is
that transaction's commit (a rollback journal, `synchronous=FULL`: durable when `commit`
returns; a crash before it leaves the previous state whole, rolled back by the next
reader). `meta`'s `serial` counts the saves, so a reader can tell cheaply whether the state
moved (the status memo does).

A home written by an earlier roam (`state.json`) is migrated on first use: the rows go into a
temp database beside it, which is renamed into place whole, and only then is `state.json`
removed (docs/decisions.md, "State in SQLite").
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import sys
from collections.abc import Iterator, Mapping
from json.encoder import encode_basestring_ascii as _quoted
from pathlib import Path
from typing import Any

from roam_core.errors import ConfigError, IntegrityError
from roam_core.fs import ensure_private_dir, fsync_dir
from roam_core.store.manifest import BlobRef, FileEntry, is_hex64

STATE_DB = "state.db"
LEGACY_FILE = "state.json"
RECOVERY_DOC = "docs/troubleshooting.md"
#: rows sent to SQLite per `executemany`: bounded memory however many paths changed
BATCH = 2000
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) "
    "WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS base (path TEXT PRIMARY KEY, size INTEGER NOT NULL, "
    "mode INTEGER NOT NULL, sha256 TEXT NOT NULL, scope TEXT NOT NULL, blobs TEXT NOT NULL) "
    "WITHOUT ROWID",
)
_UPSERT = "INSERT OR REPLACE INTO base VALUES (?, ?, ?, ?, ?, ?)"
BaseRow = tuple[str, int, int, str, str, str]


def commit(conn: sqlite3.Connection) -> None:
    """The commit point: a function of its own, so fault-injection tests can fail it."""
    conn.execute("COMMIT")


def connect(path: Path, *, durable: bool = True) -> sqlite3.Connection:
    """A connection with a rollback journal; transactions are begun explicitly.

    Not WAL (docs/decisions.md, "State in SQLite"): a WAL connection creates and removes
    `-wal` and `-shm` files beside the database even to read it, which changes `roam/`'s
    own signature (the status memo watches that folder), and WAL's shared memory is missing
    on some file systems (network mounts). With a rollback journal reading touches no folder;
    a write makes `state.db-journal` and removes it at its commit. `synchronous=FULL` makes a
    commit durable when it returns; the stat cache, whose loss only costs re-reading, skips
    that.
    """
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")
        conn.execute(f"PRAGMA synchronous={'FULL' if durable else 'NORMAL'}")
    except sqlite3.Error:
        conn.close()
        raise
    return conn


def damaged(path: Path, why: object) -> ConfigError:
    return ConfigError(f"{path} is unreadable ({why}); move it aside, run roam init "
                       f"(see {RECOVERY_DOC})")


def open_state(state_dir: Path) -> sqlite3.Connection | None:
    """The state database, migrated from `state.json` if only that exists; None when neither."""
    path = state_dir / STATE_DB
    if not path.exists():
        legacy = state_dir / LEGACY_FILE
        if not legacy.exists():
            return None
        migrate(state_dir)
    try:
        conn = connect(path)
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        if ("meta",) not in tables:  # made but never written: a crash before the first save
            conn.close()
            return None
        conn.execute("SELECT name FROM meta LIMIT 1").fetchall()
    except sqlite3.Error as error:
        raise damaged(path, error) from None
    # a migration interrupted after its rename: the database is whole, the old file stale
    with contextlib.suppress(OSError):
        (state_dir / LEGACY_FILE).unlink()
    return conn


def create(state_dir: Path) -> sqlite3.Connection:
    """The state database, made empty (with its tables) if it is not there yet."""
    ensure_private_dir(state_dir)
    return create_at(state_dir / STATE_DB)


def read_meta(conn: sqlite3.Connection) -> dict[str, str]:
    return dict(conn.execute("SELECT name, value FROM meta").fetchall())


def serial(conn: sqlite3.Connection) -> int:
    found = conn.execute("SELECT value FROM meta WHERE name = 'serial'").fetchone()
    return int(found[0]) if found else 0


def read_serial(state_dir: Path) -> int | None:
    """How many times the state was saved; None when there is no state database (yet)."""
    path = state_dir / STATE_DB
    if not path.exists():
        return None
    try:
        conn = connect(path)
        try:
            return serial(conn)
        finally:
            conn.close()
    except (sqlite3.Error, ValueError):
        return None


def entry_row(entry: FileEntry) -> BaseRow:
    return (entry.path, entry.size, entry.mode, entry.sha256, entry.scope,
            _blobs_text(entry.blobs))


def _blobs_text(refs: tuple[BlobRef, ...]) -> str:
    """`refs` as `json.dumps(..., separators=(",", ":"))` writes them, to the letter.

    Formatted directly: a list per ref through the JSON encoder was about half of a first
    pull's state save, the last step before its commit point (100,000 rows, issue 22).
    """
    if len(refs) == 1:  # most files
        pack, key, offset, length = refs[0]
        return f"[[{_quoted(pack)},{_quoted(key)},{int(offset)},{int(length)}]]"
    return "[" + ",".join([f"[{_quoted(pack)},{_quoted(key)},{int(offset)},{int(length)}]"
                           for pack, key, offset, length in refs]) + "]"


def row_entry(row: tuple[Any, ...]) -> FileEntry:
    """A stored row as a `FileEntry`; a malformed one is damaged state, never a guess."""
    path, size, mode, sha256, scope, blobs = row
    try:
        # pack keys repeat across thousands of rows: one string each
        refs = tuple((str(b[0]), sys.intern(str(b[1])), int(b[2]), int(b[3]))
                     for b in json.loads(blobs))
    except (ValueError, TypeError, IndexError, KeyError):
        raise IntegrityError(f"integrity error: state.db has a malformed entry for "
                             f"{path!r}") from None
    if not (isinstance(size, int) and isinstance(mode, int) and size >= 0
            and not mode & ~0o777 and is_hex64(sha256) and isinstance(scope, str)):
        raise IntegrityError(f"integrity error: state.db has a malformed entry for {path!r}")
    return FileEntry(path, size, mode, sha256, sys.intern(scope), refs)


def iter_base(conn: sqlite3.Connection) -> Iterator[FileEntry]:
    """Every stored path of the base, in path order, one row at a time."""
    for row in conn.execute("SELECT * FROM base ORDER BY path"):
        yield row_entry(row)


def iter_digests(conn: sqlite3.Connection) -> Iterator[tuple[str, str, int]]:
    """(path, sha256, mode) of every stored path in path order: what a status compares."""
    yield from conn.execute("SELECT path, sha256, mode FROM base ORDER BY path")


def write_changes(conn: sqlite3.Connection, meta: Mapping[str, str],
                  base: Mapping[str, FileEntry] | None,
                  stored: Mapping[str, FileEntry] | None) -> int:
    """Write the meta rows and the base rows that differ from what is stored; returns rows.

    `stored` is the base as it was read from this database (the same transaction's view,
    checked by the caller through `serial`); without it the stored rows are streamed and
    compared one by one. Runs inside the caller's transaction.
    """
    written = 0
    old_meta = read_meta(conn)
    changed_meta = [(name, value) for name, value in meta.items() if old_meta.get(name) != value]
    conn.executemany("INSERT OR REPLACE INTO meta VALUES (?, ?)", changed_meta)
    written += len(changed_meta)
    if base is not None:
        upserts, deletes = _base_changes(conn, base, stored)
        for chunk in _chunks(upserts):
            conn.executemany(_UPSERT, [entry_row(base[rel]) for rel in chunk])
        for chunk in _chunks(deletes):
            conn.executemany("DELETE FROM base WHERE path = ?", [(path,) for path in chunk])
        written += len(upserts) + len(deletes)
    return written


def _base_changes(conn: sqlite3.Connection, base: Mapping[str, FileEntry],
                  stored: Mapping[str, FileEntry] | None
                  ) -> tuple[list[str], list[str]]:
    """The paths to write and to delete.

    Paths, not entries: `base` may make each entry afresh when read (a push's new rows),
    and a first push's every entry at once is too much (issue 22).
    """
    upserts: list[str] = []
    deletes: list[str] = []
    if stored is not None:
        # carried entries are the very objects read: `is` answers before any field compare
        for path in base:
            old = stored.get(path)
            # a path not stored is written, its entry made only then (`base[rel]` below)
            if old is None or (old is not (entry := base[path]) and old != entry):
                upserts.append(path)
        deletes = [path for path in stored if path not in base]
        return upserts, deletes
    seen = 0
    for row in conn.execute("SELECT * FROM base"):
        new = base.get(row[0])
        if new is None:
            deletes.append(row[0])
            continue
        seen += 1
        if entry_row(new) != row:
            upserts.append(row[0])
    if seen < len(base):
        have = set(stored_paths(conn))
        upserts.extend(path for path in base if path not in have)
    return upserts, deletes


def stored_paths(conn: sqlite3.Connection) -> Iterator[str]:
    for (path,) in conn.execute("SELECT path FROM base"):
        yield path


def _chunks(items: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(items), BATCH):
        yield items[start:start + BATCH]


def migrate(state_dir: Path) -> None:
    """Move `state.json` into a new `state.db`: built under a temp name, renamed whole."""
    legacy = state_dir / LEGACY_FILE
    try:
        data = json.loads(legacy.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise damaged(legacy, error) from None
    if not isinstance(data, dict):
        raise ConfigError(f"{legacy} is not roam state (not a JSON object); move it aside, "
                          f"run roam init (see {RECOVERY_DOC})")
    base = data.pop("base", {})
    if not isinstance(base, dict):
        raise ConfigError(f"{legacy} is not roam state (base is {type(base).__name__}); move "
                          f"it aside, run roam init (see {RECOVERY_DOC})")
    from roam_core.engine.state import check_fields

    check_fields(legacy, data)
    temp = state_dir / f".{STATE_DB}.{os.getpid()}.migrating"
    for stale in (temp, temp.with_name(temp.name + "-journal")):
        stale.unlink(missing_ok=True)
    conn = create_at(temp)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany("INSERT INTO meta VALUES (?, ?)",
                         [(name, json.dumps(value, separators=(",", ":")))
                          for name, value in data.items()] + [("serial", "1")])
        rows = (entry_row(FileEntry.from_json(path, entry, str(legacy)))
                for path, entry in base.items())
        conn.executemany(_UPSERT, rows)
        commit(conn)
    finally:
        conn.close()
    # the committed database is whole in its one file: its journal is only an empty header
    temp.with_name(temp.name + "-journal").unlink(missing_ok=True)
    os.replace(temp, state_dir / STATE_DB)
    fsync_dir(state_dir)
    legacy.unlink()
    fsync_dir(state_dir)


def create_at(path: Path) -> sqlite3.Connection:
    conn = connect(path)
    for statement in _SCHEMA:
        conn.execute(statement)
    return conn


def export(state_dir: Path) -> dict[str, Any] | None:
    """The state as `state.json` held it (for tests and for a person debugging a home)."""
    conn = open_state(state_dir)
    if conn is None:
        return None
    try:
        data: dict[str, Any] = {name: json.loads(value)
                                for name, value in read_meta(conn).items() if name != "serial"}
        data["base"] = {entry.path: entry.as_json() for entry in iter_base(conn)}
    finally:
        conn.close()
    return data

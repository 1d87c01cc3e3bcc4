"""`SqliteBackend`: the storage contract on one SQLite file.

Every duty of `roam_core.storage.Backend` in a few lines each. SQLite gives atomic
create-once (a primary key) and an atomic compare-and-swap (`BEGIN IMMEDIATE`), across
threads and processes, which is all roam asks of a store.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path

from roam_core.plugin import (
    Backend,
    BackendError,
    Capabilities,
    Deadline,
    DoctorChecks,
    ObjectExists,
    ObjectNotFound,
    RefConflict,
    TransientBackendError,
    validate_key,
    validate_ref,
)
from roam_core.plugin import deadline as _deadline

SCHEMA = """
CREATE TABLE IF NOT EXISTS objects (key TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS refs (name TEXT PRIMARY KEY, data BLOB NOT NULL,
                                 version INTEGER NOT NULL);
"""

#: The longest one call may wait for another writer's lock, deadline permitting.
LOCK_WAIT = 30.0


class SqliteBackend(Backend):
    """A roam store in one SQLite file. One instance is safe to use from several threads."""

    capabilities = Capabilities(remote=False, deletes=True)

    def __init__(self, path: Path, deadline: Deadline | None = None) -> None:
        self.path = Path(path).absolute()
        self.deadline = deadline
        self._lock = threading.Lock()  # one connection, used by one thread at a time
        self._db: sqlite3.Connection | None = None

    # -- plumbing ------------------------------------------------------------------------

    def _timeout(self) -> float:
        # Core's uploader threads do not inherit the context variable, so the deadline
        # handed to the factory is the fallback.
        current = _deadline.current() or self.deadline
        return LOCK_WAIT if current is None else current.timeout(LOCK_WAIT)

    def _open(self, create: bool = False) -> sqlite3.Connection:
        if self._db is None:
            if create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            mode = "rwc" if create else "rw"
            try:
                db = sqlite3.connect(f"file:{self.path}?mode={mode}", uri=True,
                                     timeout=LOCK_WAIT, isolation_level=None,
                                     check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                # In WAL mode NORMAL keeps commits in order across a power loss, so HEAD can
                # never survive without the objects written before it.
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(SCHEMA)
            except sqlite3.Error as error:
                raise BackendError(f"cannot open the store {self.path}: {error}" + (
                    "" if create else " (roam init --create-remote creates it)")) from None
            self._db = db
        self._db.execute(f"PRAGMA busy_timeout = {int(self._timeout() * 1000)}")
        return self._db

    def _failure(self, error: sqlite3.Error) -> BackendError:
        if "locked" in str(error) or "busy" in str(error):
            return TransientBackendError(f"the store {self.path} is busy: {error}")
        return BackendError(f"the store {self.path} failed: {error}")

    # -- objects -------------------------------------------------------------------------

    def get(self, key: str, offset: int = 0, length: int | None = None) -> bytes:
        validate_key(key)
        # substr() counts from 1 and, on a BLOB, in bytes.
        params: tuple[int | str, ...]
        if length is None:
            query, params = "SELECT substr(data, ?) FROM objects WHERE key = ?", (offset + 1, key)
        else:
            query = "SELECT substr(data, ?, ?) FROM objects WHERE key = ?"
            params = (offset + 1, length, key)
        with self._lock:
            try:
                row = self._open().execute(query, params).fetchone()
            except sqlite3.Error as error:
                raise self._failure(error) from None
        if row is None:
            raise ObjectNotFound(key)
        return bytes(row[0] or b"")

    def put_new(self, key: str, data: bytes) -> None:
        validate_key(key)
        with self._lock:
            try:
                self._open().execute("INSERT INTO objects (key, data) VALUES (?, ?)",
                                     (key, sqlite3.Binary(bytes(data))))
            except sqlite3.IntegrityError:
                raise ObjectExists(key) from None
            except sqlite3.Error as error:
                raise self._failure(error) from None

    def delete(self, keys: Iterable[str]) -> None:
        checked = [(validate_key(key),) for key in keys]
        with self._lock:
            try:
                self._open().executemany("DELETE FROM objects WHERE key = ?", checked)
            except sqlite3.Error as error:
                raise self._failure(error) from None

    def list(self, prefix: str = "") -> Iterator[str]:
        with self._lock:
            try:
                rows = self._open().execute(
                    "SELECT key FROM objects WHERE substr(key, 1, ?) = ? ORDER BY key",
                    (len(prefix), prefix)).fetchall()
            except sqlite3.Error as error:
                raise self._failure(error) from None
        # Materialised first: each key exactly once, whatever other writers do meanwhile.
        return iter([row[0] for row in rows])

    def exists(self, key: str) -> bool:
        validate_key(key)
        with self._lock:
            try:
                row = self._open().execute("SELECT 1 FROM objects WHERE key = ?",
                                           (key,)).fetchone()
            except sqlite3.Error as error:
                raise self._failure(error) from None
        return row is not None

    # -- the ref -------------------------------------------------------------------------

    def read_ref(self, name: str) -> tuple[bytes, str] | None:
        validate_ref(name)
        with self._lock:
            try:
                row = self._open().execute("SELECT data, version FROM refs WHERE name = ?",
                                           (name,)).fetchone()
            except sqlite3.Error as error:
                raise self._failure(error) from None
        return None if row is None else (bytes(row[0]), str(row[1]))

    def swap_ref(self, name: str, data: bytes, expected_version: str | None) -> str:
        validate_ref(name)
        with self._lock:
            db = self._open()
            try:
                # IMMEDIATE takes the write lock before reading: no other writer can move
                # the ref between our check and our write.
                db.execute("BEGIN IMMEDIATE")
                try:
                    row = db.execute("SELECT version FROM refs WHERE name = ?",
                                     (name,)).fetchone()
                    current = None if row is None else str(row[0])
                    if current != expected_version:
                        raise RefConflict(f"ref {name} is at version {current}, not "
                                          f"{expected_version}")
                    version = 1 if row is None else int(row[0]) + 1
                    db.execute("INSERT INTO refs (name, data, version) VALUES (?, ?, ?) "
                               "ON CONFLICT(name) DO UPDATE SET data = excluded.data, "
                               "version = excluded.version",
                               (name, sqlite3.Binary(bytes(data)), version))
                    db.execute("COMMIT")
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as error:
                raise self._failure(error) from None
        return str(version)

    # -- the rest ------------------------------------------------------------------------

    def identity(self) -> str:
        return f"sqlite://{self.path}"

    def create_remote(self) -> None:
        with self._lock:
            self._open(create=True)

    def doctor(self) -> DoctorChecks:
        writable = self.path.parent.exists() and self.path.parent.is_dir()
        return [("example store folder", writable, str(self.path.parent))]

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

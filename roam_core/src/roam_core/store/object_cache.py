"""`roam/cache/objects.db`: copies of the sealed JSON objects a device read from a remote store.

Trees, snapshots, indexes and the other sealed JSON objects are immutable and named by
their content, so a plaintext read (and verified) once can save its round trip the next
time. An earlier roam kept each copy as a file of its own (`cache/trees/<id>`): 3,026 file
creations on a pull of the large home, a sixth of its main thread (issue 22). Here they are
rows of one SQLite table, written in one transaction per load and read in one query per
batch. The caller re-derives each row's name from its bytes before using it
(`Repository`), so nothing read here is trusted on its own: a damaged, swapped or foreign
row is a miss. Any failure (a damaged file, a lock held too long, a folder that cannot be
written) only costs reading the object from the store again: the cache is then left alone
for the rest of the process, and a database SQLite calls damaged is removed so the next
command builds it afresh.

A rollback journal, as `roam/state.db` (docs/decisions.md, "State in SQLite"), and no
syncing: a copy lost to a crash is only a read more, and a torn page is caught by the name
check or by SQLite.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

from roam_core.store.manifest import is_hex64

#: The database, in the device's cache folder.
OBJECTS_DB = "objects.db"
#: How long a read or write waits for another roam process's transaction (a pull writing
#: its copies beside a status) before the cache is passed over.
BUSY_SECONDS = 2.0
#: Ids per query (SQLite's oldest builds allow 999 parameters).
QUERY_IDS = 900
#: A load's copies kept before they are written (in a thread), so a large home's do not
#: all wait for the load's end.
PENDING_BYTES = 4 * 1024 * 1024
#: Trees are dropped down to one generation's once there are this many times as many.
COMPACT_AFTER = 4
#: ... and at least this many.
COMPACT_FLOOR = 1024

_SCHEMA = ("CREATE TABLE IF NOT EXISTS objects (kind TEXT NOT NULL, id TEXT NOT NULL, "
           "plain BLOB NOT NULL, PRIMARY KEY (kind, id))")
#: SQLITE_CORRUPT, SQLITE_NOTADB: the file is not (or no longer) a database.
_DAMAGED = (11, 26)


class ObjectCache:
    """The rows of `objects.db`: (kind, id) → plaintext, for one device's cache folder.

    Safe to share between threads (one connection, behind a lock) and between processes
    (SQLite's locks; a writer waits at most `BUSY_SECONDS`).
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / OBJECTS_DB
        self._conn: sqlite3.Connection | None = None
        self._pid = 0
        #: Set at the first failure: the rest of the process reads from the store.
        self._off = False
        #: Whether the database was missing at this process's first look (None: not yet).
        self._absent: bool | None = None
        self._lock = threading.Lock()

    def get_many(self, kind: str, ids: Sequence[str]) -> dict[str, bytes]:
        """The rows of `kind` among `ids` (not yet checked: the caller re-derives names)."""
        found: dict[str, bytes] = {}
        if not ids:
            return found
        if self._absent is None:
            self._absent = not self.path.is_file()
        if self._absent:
            # nothing was cached when this process first looked: what it writes meanwhile
            # is what it read (a pull into a new home), so its loads never wait for those
            # writes to look up what cannot be there
            return found
        with self._lock:
            conn = self._open(create=False)
            if conn is None:
                return found
            try:
                for start in range(0, len(ids), QUERY_IDS):
                    chunk = ids[start:start + QUERY_IDS]
                    marks = ",".join("?" * len(chunk))
                    # a row of another type (the column takes any) is a miss, as a
                    # damaged one is: only bytes are re-named and used
                    found.update((object_id, plain) for object_id, plain in conn.execute(
                        f"SELECT id, plain FROM objects WHERE kind = ? AND id IN ({marks})",
                        (kind, *chunk)) if isinstance(plain, bytes))
            except sqlite3.Error as error:
                self._fail(error)
        return found

    def put_many(self, rows: Iterable[tuple[str, str, bytes]]) -> bool:
        """Write (kind, id, plaintext) rows in one transaction; whether it was committed."""
        return self._write(lambda conn: conn.executemany(
            "INSERT OR REPLACE INTO objects VALUES (?, ?, ?)", rows))

    def keep_only(self, kind: str, ids: set[str]) -> None:
        """Bound the cache: once the rows of `kind` are many times `ids`, keep only `ids`.

        Called with a whole generation's trees when a load has read them all: what was
        kept for generations before it is dropped, at most once every few generations.
        """
        with self._lock:
            conn = self._open(create=False)
            if conn is None:
                return
            try:
                count = conn.execute("SELECT count(*) FROM objects WHERE kind = ?",
                                     (kind,)).fetchone()[0]
            except sqlite3.Error as error:
                self._fail(error)
                return
        if count <= max(COMPACT_FLOOR, COMPACT_AFTER * len(ids)):
            return

        def compact(conn: sqlite3.Connection) -> None:
            conn.execute("CREATE TEMP TABLE IF NOT EXISTS kept (id TEXT PRIMARY KEY)")
            conn.execute("DELETE FROM kept")
            conn.executemany("INSERT OR IGNORE INTO kept VALUES (?)", ((i,) for i in ids))
            conn.execute("DELETE FROM objects WHERE kind = ? AND id NOT IN "
                         "(SELECT id FROM kept)", (kind,))
            conn.execute("DELETE FROM kept")

        self._write(compact)

    def legacy(self, kinds: Iterable[str]) -> Iterator[tuple[str, str, Path]]:
        """(kind, id, file) of each copy an earlier roam kept as a file of its own.

        Each was in the folder of its kind, named by its id (`cache/trees/<id>`).
        """
        for kind in kinds:
            try:
                with os.scandir(self.folder / kind) as found:
                    names = [entry.name for entry in found if is_hex64(entry.name)]
            except OSError:
                continue
            for name in names:
                yield kind, name, self.folder / kind / name

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _write(self, change: Callable[[sqlite3.Connection], object]) -> bool:
        with self._lock:
            conn = self._open(create=True)
            if conn is None:
                return False
            try:
                conn.execute("BEGIN IMMEDIATE")
                change(conn)
                conn.execute("COMMIT")
                return True
            except sqlite3.Error as error:
                if conn.in_transaction:
                    try:
                        conn.execute("ROLLBACK")
                    except sqlite3.Error:
                        pass
                self._fail(error)
                return False

    def _open(self, create: bool) -> sqlite3.Connection | None:
        if self._off:
            return None
        if self._conn is not None and self._pid == os.getpid():
            return self._conn
        self._conn = None  # a connection is never used across a fork
        if not create and not self.path.is_file():
            return None
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_SECONDS,
                                   check_same_thread=False)
        except (OSError, sqlite3.Error) as error:
            self._fail(error)
            return None
        try:
            conn.execute("PRAGMA journal_mode=DELETE")
            conn.execute("PRAGMA synchronous=OFF")
            conn.execute(_SCHEMA)
        except sqlite3.Error as error:
            conn.close()
            self._fail(error)
            return None
        self._conn, self._pid = conn, os.getpid()
        return conn

    def _fail(self, error: BaseException) -> None:
        """Leave the cache alone from now on; remove a file SQLite says is no database."""
        self._off = True
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None
        if getattr(error, "sqlite_errorcode", None) in _DAMAGED:
            for path in (self.path, self.path.with_name(OBJECTS_DB + "-journal")):
                try:
                    path.unlink(missing_ok=True)
                except OSError:
                    pass

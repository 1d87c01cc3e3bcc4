"""Reading Hermes's state.db, always read-only and never waiting long for it."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

from roam_core.errors import UserError
from roam_core.home import Home


def profile_home(home: Home) -> Path:
    """The Hermes home of the profile `home` points into (the root for `default`)."""
    if home.profile == "default":
        return home.root
    return home.root / "profiles" / home.profile


@contextlib.contextmanager
def open_readonly(path: Path, timeout: float = 1.0) -> Iterator[sqlite3.Connection]:
    """Open an SQLite file read-only (`file:…?mode=ro`); a missing file is a `UserError`."""
    if not path.is_file():
        raise UserError(f"no Hermes state database at {path}")
    uri = f"file:{quote(str(path.absolute()))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=timeout, check_same_thread=False)
    except sqlite3.Error as error:
        raise UserError(f"cannot open {path} read-only: {error}") from None
    try:
        connection.row_factory = sqlite3.Row
        yield connection
    finally:
        connection.close()


def session_meta(hermes_home: Path, session_id: str, timeout: float = 0.05) -> tuple[str, str]:
    """(title, source) of a session, or empty strings when state.db cannot say quickly."""
    try:
        with open_readonly(hermes_home / "state.db", timeout=timeout) as db:
            row = db.execute("SELECT title, source FROM sessions WHERE id = ?",
                             (session_id,)).fetchone()
    except (UserError, sqlite3.Error):
        return "", ""
    if row is None:
        return "", ""
    return str(row["title"] or ""), str(row["source"] or "")

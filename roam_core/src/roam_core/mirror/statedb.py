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
    return live_turn_meta(hermes_home, session_id, timeout=timeout)[:2]


def live_turn_meta(hermes_home: Path, session_id: str, user_message: str = "",
                   timeout: float = 0.05) -> tuple[str, str, str]:
    """(title, source, anchor) of a session's latest turn; empty where state.db cannot say.

    `anchor` is the row id of this turn's user message: when Hermes's per-turn hook runs,
    Hermes has already stored the turn (seen with 0.19). Of the session's latest user rows
    the newest whose text `user_message` is (or starts with: hooks may have added context)
    is taken, else the newest; the backfill anchors the same turn on the same row.
    """
    try:
        with open_readonly(hermes_home / "state.db", timeout=timeout) as db:
            row = db.execute("SELECT title, source FROM sessions WHERE id = ?",
                             (session_id,)).fetchone()
            users = db.execute("SELECT id, content FROM messages WHERE session_id = ? AND "
                               "role = 'user' ORDER BY id DESC LIMIT 20",
                               (session_id,)).fetchall()
    except (UserError, sqlite3.Error):
        return "", "", ""
    text = user_message.strip()
    same = [r for r in users if text and str(r["content"] or "").strip()
            and text.startswith(str(r["content"]).strip())]
    chosen = (same or users)[:1]
    anchor = str(chosen[0]["id"]) if chosen else ""
    if row is None:
        return "", "", anchor
    return str(row["title"] or ""), str(row["source"] or ""), anchor

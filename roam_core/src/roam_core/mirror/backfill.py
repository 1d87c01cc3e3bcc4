"""Replaying past sessions from Hermes's state.db through the mirror's redaction and spool.

state.db is opened read-only. A turn is a user message and the last non-empty assistant
message before the next user message (tool calls and their output are not turns). The
backfill is idempotent by the turn's identity, not its text: a turn whose user-message row
(or, when the live hook could not read that row, whose place among the session's user
messages) the spool already holds for that session, live or from an earlier backfill,
delivered or not, is skipped. Text changes (Hermes masking the stored reply, a redaction
that changed since) therefore never post a turn twice. Only turns spooled by older
versions, which recorded no identity, are matched on their redacted text. Redaction is
required: when it is unavailable nothing is spooled at all.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from roam_core.errors import UserError
from roam_core.home import Home
from roam_core.mirror.config import enabled_sinks, settings_for
from roam_core.mirror.events import TurnEvent, backfill_event_id
from roam_core.mirror.redact import RedactionUnavailable, redact_event, redact_text
from roam_core.mirror.spool import Spool
from roam_core.mirror.statedb import open_readonly, profile_home


@dataclass
class BackfillResult:
    sessions: int = 0
    turns: int = 0
    spooled: int = 0
    skipped: int = 0


def parse_since(text: str) -> float:
    """`2026-01-31` or `2026-01-31T12:00[:00]` (local time) as an epoch timestamp."""
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise UserError(f"--since: {text!r} is not a date like 2026-01-31 or "
                        "2026-01-31T12:00") from None


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}


def _sessions(db: sqlite3.Connection, session: str | None,
              since: float | None) -> list[sqlite3.Row]:
    columns = _columns(db, "sessions")
    if not columns:
        raise UserError("state.db has no sessions table")
    wanted = [c for c in ("id", "title", "source", "started_at") if c in columns]
    query = f"SELECT {', '.join(wanted)} FROM sessions WHERE 1=1"
    args: list[object] = []
    if session:
        query += " AND id = ?"
        args.append(session)
    if since is not None and "started_at" in columns:
        query += " AND started_at >= ?"
        args.append(since)
    order = "started_at, id" if "started_at" in columns else "id"
    return list(db.execute(f"{query} ORDER BY {order}", args))


Turn = tuple[int, int, str, str, float]


def _turns(db: sqlite3.Connection, session_id: str) -> Iterator[Turn]:
    """(user row id, index, user text, final reply, time) for every finished turn.

    The index counts every user message of the session, finished or not, as the live hook
    counts them in Hermes's conversation history.
    """
    columns = _columns(db, "messages")
    active = " AND active = 1" if "active" in columns else ""
    rows = db.execute("SELECT id, role, content, timestamp FROM messages "
                      f"WHERE session_id = ?{active} ORDER BY id", (session_id,))
    current: tuple[int, int, str, float] | None = None
    reply = ""
    index = -1
    for row in rows:
        role, content = row["role"], row["content"] or ""
        if role == "user":
            if current is not None and reply.strip():
                yield current[0], current[1], current[2], reply, current[3]
            index += 1
            current = (int(row["id"]), index, str(content), float(row["timestamp"] or 0))
            reply = ""
        elif role == "assistant" and str(content).strip() and current is not None:
            reply = str(content)
    if current is not None and reply.strip():
        yield current[0], current[1], current[2], reply, current[3]


def backfill(home: Home, session: str | None = None, since: float | None = None,
             state_db: Path | None = None) -> BackfillResult:
    """Spool the turns of past sessions that the mirror does not hold yet."""
    if not enabled_sinks(settings_for(home.root)):
        raise UserError("the mirror is off; enable it with mirror_sinks: [discord] in roam's "
                        "settings first")
    try:
        redact_text("roam backfill probe")
    except RedactionUnavailable as error:
        raise UserError(f"cannot backfill: {error}; nothing was spooled") from None
    path = state_db or profile_home(home) / "state.db"
    spool = Spool(home.root)
    known = spool.known_turns()
    known_turns = spool.known_identities()
    known_ids = {entry.event_id for entry in spool.entries()}
    seen: Counter[tuple[str, str]] = Counter()
    result = BackfillResult()
    fresh: list[TurnEvent] = []
    with open_readonly(path) as db:
        try:
            sessions = _sessions(db, session, since)
            if session and not sessions:
                raise UserError(f"no session {session!r} in {path}")
            for row in sessions:
                result.sessions += 1
                keys = row.keys()
                for anchor, index, user, reply, when in _turns(db, row["id"]):
                    result.turns += 1
                    event = TurnEvent(
                        event_id=backfill_event_id(home.profile, row["id"], str(anchor)),
                        session_id=row["id"], turn_id=f"m{anchor}", user_message=user,
                        reply=reply, time=when, profile=home.profile,
                        title=str(row["title"] or "") if "title" in keys else "",
                        source=str(row["source"] or "") if "source" in keys else "",
                        origin="backfill", anchor=str(anchor), turn_index=index)
                    session_key = event.session_key
                    if event.event_id in known_ids or any(
                            (session_key, identity) in known_turns
                            for identity in (*event.identities, f"i:{index}")):
                        result.skipped += 1
                        continue
                    try:
                        event = redact_event(event, home.root)
                    except RedactionUnavailable as error:
                        raise UserError(f"cannot backfill: {error}; nothing was spooled") \
                            from None
                    key = (event.session_key, event.content_digest)
                    seen[key] += 1
                    if event.event_id in known_ids or seen[key] <= known[key]:
                        result.skipped += 1
                        continue
                    fresh.append(event)
        except sqlite3.Error as error:
            raise UserError(f"cannot read {path}: {error}") from None
    spool.append_many(fresh)
    result.spooled = len(fresh)
    return result

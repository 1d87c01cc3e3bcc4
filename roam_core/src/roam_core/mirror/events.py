"""`TurnEvent`: one finished agent turn, the unit the mirror spools and sinks deliver."""

from __future__ import annotations

import hashlib
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

#: Bumped when the spooled form changes incompatibly; readers skip newer records.
EVENT_VERSION = 1


def _digest(*parts: str) -> str:
    hasher = hashlib.sha256()
    for part in parts:
        hasher.update(part.encode("utf-8", "surrogatepass"))
        hasher.update(b"\0")
    return hasher.hexdigest()


@dataclass(frozen=True)
class TurnEvent:
    """A user message and the agent's final reply, with where they happened.

    `event_id` is stable for one turn: the live hook derives it from Hermes's turn id, the
    backfill from the turn's position and content, so sinks can deliver idempotently.
    `redacted` says whether the text fields already went through the egress redaction; only
    redacted events ever reach a sink.

    `anchor` (the state.db row id of the turn's user message) and `turn_index` (its place
    among the session's user messages, from 0) say which turn of the session this is; the
    live hook records them so the backfill recognises the turn whatever its text became
    (masked by Hermes before storing, or redacted differently since). Empty / -1: unknown.
    """

    event_id: str
    session_id: str
    turn_id: str
    user_message: str
    reply: str
    time: float
    profile: str = "default"
    title: str = ""
    source: str = ""
    platform: str = ""
    model: str = ""
    origin: str = "live"
    redacted: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    anchor: str = ""
    turn_index: int = -1

    @property
    def session_key(self) -> str:
        """The session as sinks key it: sessions of different profiles never share a thread."""
        return f"{self.profile}/{self.session_id}"

    @property
    def identities(self) -> tuple[str, ...]:
        """What names this turn within its session: its anchor, else its index."""
        return turn_identities(self.anchor, self.turn_index)

    @property
    def content_digest(self) -> str:
        """A digest of the redacted text, used to recognise a turn already mirrored."""
        return _digest(self.session_key, self.user_message.strip(), self.reply.strip())

    def with_text(self, **changes: Any) -> TurnEvent:
        """A copy with some fields replaced (redaction, title lookup)."""
        return replace(self, **changes)

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["v"] = EVENT_VERSION
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnEvent:
        known = {name for name in cls.__dataclass_fields__}
        values = {key: value for key, value in data.items() if key in known}
        return cls(**values)


def turn_identities(anchor: str, turn_index: int) -> tuple[str, ...]:
    """The identity keys of a turn: the row anchor when known, else the index when known.

    A backfilled turn knows both; a live one whose state.db read timed out knows only its
    index. Matching on the anchor first keeps two turns that share an index after Hermes
    compressed the history apart.
    """
    if anchor:
        return (f"a:{anchor}",)
    return (f"i:{turn_index}",) if turn_index >= 0 else ()


def live_event_id(profile: str, session_id: str, turn_id: str) -> str:
    """The id of a turn reported by Hermes's `post_llm_call` hook."""
    return "t" + _digest("live", profile, session_id, turn_id)[:31]


def backfill_event_id(profile: str, session_id: str, anchor: str) -> str:
    """The id of a turn replayed from state.db, anchored on the user message's row id."""
    return "b" + _digest("backfill", profile, session_id, anchor)[:31]


def make_live_event(
    *,
    session_id: str,
    turn_id: str,
    user_message: str,
    reply: str,
    profile: str = "default",
    title: str = "",
    source: str = "",
    platform: str = "",
    model: str = "",
    when: float | None = None,
    anchor: str = "",
    turn_index: int = -1,
) -> TurnEvent:
    """Build the event for a turn Hermes just finished."""
    turn = turn_id or _digest(user_message, reply, str(when))[:16]
    return TurnEvent(
        event_id=live_event_id(profile, session_id, turn),
        session_id=session_id,
        turn_id=turn,
        user_message=user_message,
        reply=reply,
        time=time.time() if when is None else when,
        profile=profile,
        title=title,
        source=source,
        platform=platform,
        model=model,
        anchor=anchor,
        turn_index=turn_index,
    )

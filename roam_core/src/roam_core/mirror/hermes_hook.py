"""The per-turn Hermes hook: turn a finished turn into a redacted, spooled event.

`on_post_llm_call` runs on the agent's thread (0.19) or a hook worker (newer Hermes). It
never raises and never touches the network: it reads the settings (cached), the session's
title from state.db (read-only, 50 ms at most), redacts, appends to the spool (the
bytes are in the kernel, so an exit right after loses nothing; the background sender
fsyncs) and wakes the sender. If redaction is unavailable the raw turn is spooled
locally (0600, never synced) and held unsent, with the reason, until redaction works.
"""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger(__name__)


def _text(value: Any) -> str:
    """Message content as text: a string, or the text parts of a multimodal list."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [part.get("text", "") if isinstance(part, dict) else str(part)
                 for part in value]
        return "\n".join(part for part in parts if part)
    if isinstance(value, dict):
        return str(value.get("content") or value.get("text") or "")
    return str(value)


def _turn_index(history: Any) -> int:
    """This turn's place among the session's user messages (from 0), or -1 if unknown."""
    if not isinstance(history, list):
        return -1
    users = sum(1 for message in history
                if isinstance(message, dict) and message.get("role") == "user")
    return users - 1


def on_post_llm_call(**kwargs: Any) -> None:
    """Spool the finished turn for the mirror; never raises, returns in milliseconds."""
    started = time.perf_counter()
    try:
        if _spool_turn(kwargs):
            log.info("roam mirror: turn spooled in %.1f ms",
                     (time.perf_counter() - started) * 1000)
    except Exception as error:  # a turn must never fail because of the mirror
        log.warning("roam mirror: could not spool a turn: %s: %s", type(error).__name__,
                    str(error).splitlines()[0] if str(error) else "")


def _spool_turn(kwargs: dict[str, Any]) -> bool:
    from roam_core.home import resolve_home
    from roam_core.mirror.config import enabled_sinks, settings_for

    home = resolve_home()
    if not enabled_sinks(settings_for(home.root)):
        return False
    session_id = str(kwargs.get("session_id") or "").strip()
    reply = _text(kwargs.get("assistant_response"))
    if not session_id or not reply.strip():
        return False

    from roam_core.mirror import sender
    from roam_core.mirror.events import make_live_event
    from roam_core.mirror.redact import RedactionUnavailable, redact_event
    from roam_core.mirror.spool import Spool
    from roam_core.mirror.statedb import live_turn_meta, profile_home

    user_message = _text(kwargs.get("user_message"))
    title, source, anchor = live_turn_meta(profile_home(home), session_id, user_message)
    event = make_live_event(
        session_id=session_id,
        turn_id=str(kwargs.get("turn_id") or ""),
        user_message=user_message,
        reply=reply,
        profile=home.profile,
        title=title,
        source=source or str(kwargs.get("platform") or ""),
        platform=str(kwargs.get("platform") or ""),
        model=str(kwargs.get("model") or ""),
        when=time.time(),
        anchor=anchor,
        turn_index=_turn_index(kwargs.get("conversation_history")),
    )
    try:
        event = redact_event(event, home.root)
    except RedactionUnavailable as error:
        log.warning("roam mirror: turn held unsent: %s", error)
    Spool(home.root).append(event, sync=False)  # the sender fsyncs, off this thread
    sender.ensure_started(home.root)
    return True

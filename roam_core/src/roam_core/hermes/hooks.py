"""The Hermes hook callbacks: each takes `**kwargs`, catches its own errors, returns fast.

Hermes 0.19 always passes `telemetry_schema_version` and calls hooks on the agent thread,
swallowing exceptions into a log line; newer Hermes runs the hot ones on a worker thread
with a timeout. Either way a roam hook must never raise into Hermes nor hold up a turn:
slow work goes to `autosync`'s daemon threads.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

log = logging.getLogger("roam.hermes")

Callback = Callable[..., Any]

_seen_sessions: set[str] = set()
_seen_lock = threading.Lock()


def guarded(name: str, body: Callback) -> Callback:
    """Wrap `body` so that nothing it raises reaches Hermes."""

    def callback(**kwargs: Any) -> Any:
        try:
            return body(**kwargs)
        except Exception as failure:
            log.warning("roam: %s hook failed: %s", name, failure)
            return None

    callback.__name__ = f"roam_{name}"
    callback.__qualname__ = callback.__name__
    return callback


def _root() -> Path:
    from roam_core.hermes.host import current_home

    return current_home().root


def _first_turn(kwargs: dict[str, Any]) -> bool:
    flag = kwargs.get("is_first_turn")
    if isinstance(flag, bool):
        return flag
    session = str(kwargs.get("session_id") or "")
    with _seen_lock:
        if session in _seen_sessions:
            return False
        _seen_sessions.add(session)
        return True


def on_session_start(**kwargs: Any) -> None:
    from roam_core.hermes import autosync

    outcome = autosync.session_start(_root())
    log.debug("roam: session start: remote check %s", outcome)


def pre_llm_call(**kwargs: Any) -> dict[str, str] | None:
    if not _first_turn(kwargs):
        return None
    from roam_core.hermes import autosync
    from roam_core.hermes.host import redact

    text = autosync.first_turn_context(_root())
    return {"context": redact(text)} if text else None


def on_session_end(**kwargs: Any) -> None:
    from roam_core.hermes import autosync

    outcome = autosync.session_end(_root())
    log.debug("roam: session end: automatic push %s", outcome)


def on_session_finalize(**kwargs: Any) -> None:
    from roam_core.hermes import autosync

    autosync.finalize(_root(), str(kwargs.get("reason") or ""))


def post_llm_call(**kwargs: Any) -> None:
    """Hand the finished turn to the session mirror, when it is installed."""
    try:
        from roam_core.mirror.hermes_hook import on_post_llm_call
    except ImportError:
        return
    on_post_llm_call(**kwargs)


CALLBACKS: dict[str, Callback] = {
    "on_session_start": on_session_start,
    "pre_llm_call": pre_llm_call,
    "post_llm_call": post_llm_call,
    "on_session_end": on_session_end,
    "on_session_finalize": on_session_finalize,
}


def callbacks() -> dict[str, Callback]:
    """Every hook roam registers, each wrapped by `guarded`."""
    return {name: guarded(name, body) for name, body in CALLBACKS.items()}

"""The session→thread map: `<root>/state/session-mirror.json`, mode 0600.

Keyed by channel, then `profile/session`. Before a thread is created, the intent (the
exact name asked for, and when) is written; a restarted sender that finds an intent without
a thread id looks for that thread before creating another. An entry is written (and
fsynced) as soon as a thread is created, before anything is posted into it, so a restarted
sender reuses the thread. It also remembers how far the event in flight got (`progress`),
so a multi-part turn interrupted by a crash resumes at the part it stopped at.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from roam_core.plugin import read_json, write_private_json

FILENAME = "session-mirror.json"
#: Delivered events remembered per session (redelivery of older ones is the spool's job).
RECENT = 64


class ThreadMap:
    """Read-modify-write access to the map, serialized across processes."""

    def __init__(self, root: Path) -> None:
        self.dir = root / "state"
        self.path = self.dir / FILENAME

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        self.dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.dir / f".{FILENAME}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            data = self._read()
            before = repr(data)
            yield data
            if repr(data) != before:
                write_private_json(self.path, data)
        finally:
            os.close(fd)

    def _read(self) -> dict[str, Any]:
        data = read_json(self.path, {})
        if not isinstance(data, dict) or not isinstance(data.get("channels"), dict):
            data = {"version": 1, "channels": {}}
        return data

    def get(self, channel: str, session_key: str) -> dict[str, Any] | None:
        entry = self._read()["channels"].get(channel, {}).get(session_key)
        return dict(entry) if isinstance(entry, dict) else None

    def set_thread(self, channel: str, session_key: str, thread_id: str, name: str) -> None:
        """Record the session's thread (what the session was called is kept)."""
        with self._locked() as data:
            threads = data["channels"].setdefault(channel, {})
            threads[session_key] = {**_lineage(threads.get(session_key)),
                                    "thread_id": thread_id, "name": name,
                                    "created_at": time.time()}

    def set_intent(self, channel: str, session_key: str, name: str, *, label: str = "",
                   titled: bool = False) -> None:
        """Note that a thread named `name` is about to be created (none is known yet).

        `label` is what names the session (kept for every later thread of it) and
        `titled` whether that came from Hermes's title; an existing label wins.
        """
        with self._locked() as data:
            threads = data["channels"].setdefault(channel, {})
            lineage = _lineage(threads.get(session_key))
            if label and not lineage.get("label"):
                lineage.update(label=label, titled=titled)
            threads[session_key] = {**lineage, "intent": {"name": name, "at": time.time()}}

    def mark_unanswered(self, channel: str, session_key: str) -> None:
        """Note that the creation asked for in the intent got no answer at all."""
        with self._locked() as data:
            entry = data["channels"].get(channel, {}).get(session_key)
            if isinstance(entry, dict) and isinstance(entry.get("intent"), dict):
                entry["intent"]["unanswered"] = True

    def retire(self, channel: str, session_key: str, thread_id: str, reason: str) -> None:
        """The session's thread refuses posts (`reason`): its next thread continues it."""
        with self._locked() as data:
            threads = data["channels"].get(channel, {})
            entry = threads.get(session_key)
            if not isinstance(entry, dict) or entry.get("thread_id") != thread_id:
                return
            lineage = _lineage(entry)
            lineage["generation"] = int(lineage.get("generation", 0)) + 1
            lineage["continued_from"] = {"thread_id": thread_id, "reason": reason}
            threads[session_key] = lineage

    def update(self, channel: str, session_key: str, **fields: Any) -> None:
        """Set some fields of an existing entry (a rename, a continuation note posted)."""
        with self._locked() as data:
            entry = data["channels"].get(channel, {}).get(session_key)
            if isinstance(entry, dict):
                entry.update(fields)

    def set_progress(self, channel: str, session_key: str, event_id: str,
                     message_ids: list[str], attempting: float | None = None) -> None:
        """Note the parts posted so far, and when the next one was sent (if it was)."""
        with self._locked() as data:
            entry = data["channels"].get(channel, {}).get(session_key)
            if entry is not None:
                entry["progress"] = {"event_id": event_id, "message_ids": list(message_ids)}
                if attempting is not None:
                    entry["progress"]["attempting_at"] = attempting

    def done(self, channel: str, session_key: str, event_id: str,
             message_ids: list[str]) -> None:
        """Note a delivered event (the last few are kept, so redelivery posts nothing)."""
        with self._locked() as data:
            entry = data["channels"].get(channel, {}).get(session_key)
            if entry is not None:
                recent = [r for r in entry.get("recent", []) if r.get("event_id") != event_id]
                recent.append({"event_id": event_id, "message_ids": list(message_ids)})
                entry["recent"] = recent[-RECENT:]
                entry.pop("progress", None)


#: What an entry keeps when its thread is replaced: how the session is named and how many
#: threads it had, so a continuation is named from the session, not from the latest turn.
_LINEAGE = ("label", "titled", "generation", "continued_from")


def _lineage(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict):
        return {}
    return {key: entry[key] for key in _LINEAGE if key in entry}

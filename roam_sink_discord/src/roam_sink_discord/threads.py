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

from roam_core.mirror.spool import read_json, write_private_json

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
        with self._locked() as data:
            data["channels"].setdefault(channel, {})[session_key] = {
                "thread_id": thread_id, "name": name, "created_at": time.time()}

    def set_intent(self, channel: str, session_key: str, name: str) -> None:
        """Note that a thread named `name` is about to be created (none is known yet)."""
        with self._locked() as data:
            data["channels"].setdefault(channel, {})[session_key] = {
                "intent": {"name": name, "at": time.time()}}

    def forget(self, channel: str, session_key: str, thread_id: str) -> None:
        """Drop the entry if it still points at `thread_id` (the thread is gone)."""
        with self._locked() as data:
            threads = data["channels"].get(channel, {})
            if threads.get(session_key, {}).get("thread_id") == thread_id:
                del threads[session_key]

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

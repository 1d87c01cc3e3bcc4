"""The durable spool under `<root>/roam/mirror/`: append-only, fsynced, crash-safe.

Files (directory 0700, files 0600):

- `spool.jsonl`: one JSON event per line, appended under `spool.lock` with O_APPEND and
  fsync. The last record for an event id wins (a redacted copy supersedes a raw one) but
  keeps the first one's place, so order per session is the order turns happened. A line
  torn by a crash is skipped, and the next append starts a fresh line.
- `delivered.jsonl`: one line per event a sink delivered (the sink's receipt), fsynced.
- `state.json`: the sender's view (last error, backoff, terminal failures, held events),
  replaced atomically; written only by the process holding `sender.lock`.

Compaction replaces events every enabled sink delivered by stubs that keep only what the
backfill needs to recognise a turn already mirrored (its session and identity: the row
anchor or index), so the spool does not keep turn text forever.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from roam_core.fs import fsync_dir, write_atomic
from roam_core.home import STATE_DIRNAME
from roam_core.mirror.events import EVENT_VERSION, TurnEvent
from roam_core.mirror.sink import Receipt

log = logging.getLogger(__name__)

MIRROR_DIRNAME = "mirror"
COMPACT_BYTES = 4 * 1024 * 1024


def mirror_dir(root: Path) -> Path:
    """Where the spool of the root home `root` lives."""
    return root / STATE_DIRNAME / MIRROR_DIRNAME


@dataclass(frozen=True)
class SpoolEntry:
    """One event in the spool; `event` is None for a compacted stub."""

    event_id: str
    session_key: str
    digest: str
    event: TurnEvent | None
    identities: tuple[str, ...] = ()


def _ensure_private_dir(path: Path) -> None:
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    for folder in (path.parent, path):
        with contextlib.suppress(OSError):
            if folder.stat().st_mode & 0o077:
                folder.chmod(0o700)


def _open_private(path: Path, flags: int) -> int:
    fd = os.open(path, flags | os.O_CLOEXEC, 0o600)
    with contextlib.suppress(OSError):
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    return fd


def write_private_json(path: Path, data: Any) -> None:
    """Replace `path` atomically with `data` as JSON, mode 0600 (temp, fsync, rename)."""
    write_atomic(path, json.dumps(data, indent=1, sort_keys=True).encode(), mode=0o600)


def read_json(path: Path, default: Any) -> Any:
    """A JSON file's content, or `default` when it is missing or unreadable."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return default
    except (OSError, ValueError) as error:
        log.warning("roam mirror: ignoring unreadable %s: %s", path.name, error)
        return default


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    for raw in data.split(b"\n")[:-1]:  # the last piece lacks its newline: torn or empty
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except ValueError:
            log.warning("roam mirror: skipping a torn spool line")
            continue
        if isinstance(record, dict):
            yield record


class Spool:
    """The mirror's spool and delivery records for one root home."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.dir = mirror_dir(root)
        self.events_path = self.dir / "spool.jsonl"
        self.delivered_path = self.dir / "delivered.jsonl"
        self.state_path = self.dir / "state.json"
        self.lock_path = self.dir / "spool.lock"
        self.sender_lock_path = self.dir / "sender.lock"

    # -- locking -------------------------------------------------------------------------

    def ensure(self) -> None:
        """Create the private directory if needed."""
        _ensure_private_dir(self.dir)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.ensure()
        fd = _open_private(self.lock_path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def sender_lock(self, blocking: bool = False) -> Iterator[bool]:
        """Hold the one-drainer-per-home lock; yields False when another process has it."""
        self.ensure()
        fd = _open_private(self.sender_lock_path, os.O_RDWR | os.O_CREAT)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)

    # -- appending -----------------------------------------------------------------------

    def _append(self, path: Path, records: Iterable[dict[str, Any]], sync: bool = True) -> None:
        payload = b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n"
                           for r in records)
        if not payload:
            return
        with self._locked():
            fd = _open_private(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    payload = b"\n" + payload  # a previous writer died mid-line
                os.write(fd, payload)
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
            if size == 0:
                with contextlib.suppress(OSError):  # the file's bytes are safe either way
                    fsync_dir(self.dir)

    def append(self, event: TurnEvent, sync: bool = True) -> None:
        """Add `event` (or supersede an earlier record of the same id).

        With `sync=False` (the per-turn hook) the bytes are in the kernel when this returns,
        so a process that exits or crashes right after loses nothing; the fsync that also
        covers a power loss is left to the sender (`sync_events`), off the agent's thread.
        """
        self.append_many([event], sync=sync)

    def append_many(self, events: Iterable[TurnEvent], sync: bool = True) -> None:
        self._append(self.events_path, ({"kind": "event", **e.to_json()} for e in events), sync)

    def sync_events(self) -> None:
        """Flush the event log to disk (the hook appends without waiting for the disk)."""
        with contextlib.suppress(OSError):
            fd = os.open(self.events_path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def record_delivery(self, receipt: Receipt) -> None:
        """Durably note that a sink delivered an event."""
        self._append(self.delivered_path, [{**receipt.to_json(), "at": time.time()}])

    # -- reading -------------------------------------------------------------------------

    def entries(self) -> list[SpoolEntry]:
        """Every event, in first-appearance order, the latest record of each id winning."""
        order: dict[str, SpoolEntry] = {}
        for record in _lines(self.events_path):
            if record.get("kind") != "event" or int(record.get("v", 1)) > EVENT_VERSION:
                continue
            event_id = str(record.get("event_id", ""))
            if not event_id:
                continue
            if record.get("stub"):
                entry = SpoolEntry(event_id, str(record.get("session_key", "")),
                                   str(record.get("digest", "")), None,
                                   tuple(str(i) for i in record.get("identities") or ()))
            else:
                try:
                    event = TurnEvent.from_json(record)
                except TypeError:
                    log.warning("roam mirror: skipping a malformed spool record")
                    continue
                entry = SpoolEntry(event_id, event.session_key, event.content_digest, event,
                                   event.identities)
            previous = order.get(event_id)
            if previous is not None and previous.event is not None and entry.event is not None \
                    and previous.event.redacted and not entry.event.redacted:
                continue  # never let a raw copy replace a redacted one
            order[event_id] = entry
        return list(order.values())

    def events(self) -> list[TurnEvent]:
        return [entry.event for entry in self.entries() if entry.event is not None]

    def deliveries(self) -> list[dict[str, Any]]:
        return list(_lines(self.delivered_path))

    def delivered(self, sink: str) -> set[str]:
        """Ids of the events `sink` delivered."""
        return {str(r.get("event_id")) for r in self.deliveries() if r.get("sink") == sink}

    def pending(self, sink: str) -> list[TurnEvent]:
        """Events `sink` has not delivered, in spool order."""
        done = self.delivered(sink)
        return [event for event in self.events() if event.event_id not in done]

    def known_turns(self) -> Counter[tuple[str, str]]:
        """How often each (session, redacted content) occurs among turns of unknown identity.

        Only turns spooled without an identity (by older versions) are matched on content.
        """
        return Counter((entry.session_key, entry.digest) for entry in self.entries()
                       if (entry.event is None or entry.event.redacted)
                       and not entry.identities)

    def known_identities(self) -> set[tuple[str, str]]:
        """(session, turn identity) of every turn the spool holds, stubs included."""
        return {(entry.session_key, identity) for entry in self.entries()
                for identity in entry.identities}

    # -- sender state --------------------------------------------------------------------

    def read_state(self) -> dict[str, Any]:
        state = read_json(self.state_path, {})
        return state if isinstance(state, dict) else {}

    def write_state(self, state: dict[str, Any]) -> None:
        self.ensure()
        write_private_json(self.state_path, state)

    # -- compaction ----------------------------------------------------------------------

    def compact(self, sinks: Iterable[str], min_bytes: int = COMPACT_BYTES) -> int:
        """Replace events every sink in `sinks` delivered by stubs; returns how many."""
        names = list(sinks)
        try:
            if not names or self.events_path.stat().st_size < min_bytes:
                return 0
        except FileNotFoundError:
            return 0
        done = [self.delivered(name) for name in names]
        with self._locked():
            records: list[dict[str, Any]] = []
            stubbed = 0
            for entry in self.entries():
                if entry.event is not None and not all(entry.event_id in d for d in done):
                    records.append({"kind": "event", **entry.event.to_json()})
                    continue
                stubbed += entry.event is not None
                records.append({"kind": "event", "v": EVENT_VERSION, "stub": True,
                                "event_id": entry.event_id, "session_key": entry.session_key,
                                "digest": entry.digest, "identities": list(entry.identities)})
            write_atomic(self.events_path, b"".join(
                json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records),
                mode=0o600)
        return stubbed

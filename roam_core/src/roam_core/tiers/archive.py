"""The session archive's places: its namespace in the store and its read-only copies here.

In the store, device D's archive of profile P is `archive/sessions/D/P/<session id>.md`:
D's private namespace. Only D's push writes it; every other device carries it forward
untouched. A pulling device lands the copies read-only (0444) under
`<root>/roam/session-archive/D/P/`, inside roam's own folder, so they never travel again and
are never mistaken for sessions Hermes could resume.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PREFIX = "archive/sessions/"
LOCAL_DIR = "roam/session-archive"
MODE = 0o444
SUFFIX = ".md"
#: Hermes session ids look like 20260131_120000_a1b2c3; keep to that alphabet.
_SESSION_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
FRONT_MATTER_CHARS = 8192


def safe_name(name: str) -> bool:
    """Whether a device or profile name can be one folder name (no separators, no dots)."""
    return (bool(name) and len(name) <= 128 and name not in (".", "..")
            and not name.startswith(".") and "/" not in name and "\\" not in name
            and _CONTROL.search(name) is None)


def safe_session_id(session_id: str) -> bool:
    return _SESSION_ID.match(session_id) is not None


def is_archive(rel: str) -> bool:
    """Whether a store path lies in the session archive namespace."""
    return rel.startswith(PREFIX)


def store_rel(device: str, profile: str, session_id: str) -> str:
    return f"{PREFIX}{device}/{profile}/{session_id}{SUFFIX}"


@dataclass(frozen=True)
class ArchivePath:
    """One archived transcript: whose, which profile, which session."""

    device: str
    profile: str
    session_id: str

    @property
    def local_rel(self) -> str:
        """Where a pulling device keeps its read-only copy, relative to the root home."""
        return f"{LOCAL_DIR}/{self.device}/{self.profile}/{self.session_id}{SUFFIX}"


def parse(rel: str) -> ArchivePath | None:
    """The parts of an archive store path; None for anything malformed (never landed)."""
    if not is_archive(rel):
        return None
    parts = rel[len(PREFIX):].split("/")
    if len(parts) != 3 or not parts[2].endswith(SUFFIX):
        return None
    device, profile, session_id = parts[0], parts[1], parts[2][: -len(SUFFIX)]
    if not (safe_name(device) and safe_name(profile) and safe_session_id(session_id)):
        return None
    return ArchivePath(device, profile, session_id)


def front_matter(text: str) -> dict[str, Any]:
    """The `key: value` lines between the leading `---` markers (values JSON when they can be)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return {}
    found: dict[str, Any] = {}
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, sep, raw = line.partition(":")
        if not sep or not key.strip():
            continue
        raw = raw.strip()
        try:
            found[key.strip()] = json.loads(raw)
        except ValueError:
            found[key.strip()] = raw
    return found


def read_front_matter(path: Path) -> dict[str, Any]:
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return front_matter(handle.read(FRONT_MATTER_CHARS))
    except OSError:
        return {}


def local_archives(root: Path) -> list[dict[str, Any]]:
    """Every archive copy this device holds: device, profile, session, title, date, size."""
    base = root / LOCAL_DIR
    rows: list[dict[str, Any]] = []
    for device in _folders(base):
        for profile in _folders(base / device):
            folder = base / device / profile
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if not entry.name.endswith(SUFFIX) or not entry.is_file(follow_symlinks=False):
                    continue
                session_id = entry.name[: -len(SUFFIX)]
                if not safe_session_id(session_id):
                    continue
                meta = read_front_matter(Path(entry.path))
                rows.append({"device": device, "profile": profile, "session_id": session_id,
                             "title": _text(meta.get("title")) or session_id,
                             "date": _text(meta.get("ended_at") or meta.get("created_at")),
                             "size": entry.stat(follow_symlinks=False).st_size})
    rows.sort(key=lambda row: row["date"], reverse=True)  # newest first inside each group
    rows.sort(key=lambda row: (row["device"], row["profile"]))
    return rows


def _folders(path: Path) -> list[str]:
    try:
        with os.scandir(path) as listing:
            return sorted(e.name for e in listing
                          if e.is_dir(follow_symlinks=False) and safe_name(e.name))
    except OSError:
        return []


def _text(value: Any) -> str:
    return "" if value is None else str(value)

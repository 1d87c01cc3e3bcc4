"""Whether the home's file system keeps Unix modes, as git asks for its core.fileMode.

FAT, exFAT and some network shares show every file with one mode (often 0755 or 0700)
and refuse or ignore a chmod. On such a home the executable bit read from disk says
nothing, so each file carries its last synced entry's bit forward (a new file is not
executable) and a mode is never a local change there. The answer is probed once, in
roam's own folder, and kept in `filesystem.json` beside the state, keyed by the file
system's device number so a home moved to another disk is probed again.
"""

from __future__ import annotations

import json
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path

from roam_core.engine.scan import LocalFile, list_shared
from roam_core.engine.session import Session
from roam_core.engine.state import LocalState
from roam_core.fs import write_atomic

RECORD_FILE = "filesystem.json"
PROBE_PREFIX = ".roam-modes-"


def keeps_modes(state_dir: Path) -> bool:
    """Whether files under `state_dir`'s file system keep the executable bit set on them.

    A home not initialised (no `state_dir`) is taken to keep modes: nothing is written
    there to find out.
    """
    try:
        device = os.stat(state_dir).st_dev
    except OSError:
        return True
    record = state_dir / RECORD_FILE
    try:
        known = json.loads(record.read_bytes())
        if known.get("device") == device and isinstance(known.get("keeps_modes"), bool):
            return bool(known["keeps_modes"])
    except (OSError, ValueError, AttributeError):
        pass
    answer = _probe(state_dir)
    if answer is not None:
        try:
            write_atomic(record, json.dumps({"device": device, "keeps_modes": answer}).encode())
        except OSError:
            pass  # probed again next time
    return True if answer is None else answer


def _probe(folder: Path) -> bool | None:
    """Set and clear the executable bit on a scratch file; None when it cannot be created."""
    probe = folder / f"{PROBE_PREFIX}{secrets.token_hex(6)}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return None
    try:
        for mode in (0o700, 0o600):
            os.fchmod(fd, mode)
            if stat.S_IMODE(os.fstat(fd).st_mode) & 0o100 != mode & 0o100:
                return False
        return True
    except OSError:  # ENOSYS, EPERM, EOPNOTSUPP: a file system without modes
        return False
    finally:
        os.close(fd)
        try:
            probe.unlink()
        except OSError:
            pass


def carried_modes(session: Session, state: LocalState) -> dict[str, int] | None:
    """Each base path's synced mode when the home keeps no modes; None when it does."""
    if keeps_modes(session.state_dir):
        return None
    return {rel: entry.mode or 0o644 for rel, entry in state.base.items()}


def home_files(session: Session, state: LocalState,
               found: Callable[[list[LocalFile]], None] | None = None
               ) -> dict[str, LocalFile]:
    """Every shared file of the home, with modes carried forward where the disk keeps none.

    `found` is told of each folder's files as the walk finds them (`list_shared`).
    """
    return list_shared(session.scope, state.projections,
                       modes=carried_modes(session, state), found=found)

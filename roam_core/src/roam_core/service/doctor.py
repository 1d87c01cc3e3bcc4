"""`doctor`: every check of the setup on its own row, each isolated from the others.

Both faces show the record: `roam doctor` prints its lines, `/roam doctor` condenses them.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from roam_core.engine.session import Session
from roam_core.engine.state import LocalState
from roam_core.errors import RoamError
from roam_core.service.render import WARN, doctor_lines
from roam_core.service.session import Notify, operation
from roam_core.service.verbs import SCHEMA
from roam_core.storage import DoctorCheck


def _writable(path: Path) -> DoctorCheck:
    # doctor only looks: a folder that does not exist yet is judged by the nearest one that
    # does (roam creates it there on first use), and nothing is left behind either way
    name = f"writable {path.name}/"
    existing = path
    while not existing.is_dir() and existing != existing.parent:
        existing = existing.parent
    if existing != path:
        if os.access(existing, os.W_OK | os.X_OK):
            return (name, True, f"{path} (created on first use)")
        return (name, False, f"{existing}: not writable")
    try:
        with tempfile.NamedTemporaryFile(dir=path, prefix=".roam-doctor-"):
            pass
        return (name, True, str(path))
    except OSError as error:
        return (name, False, f"{path}: {error.strerror or error}")


def _run_check(name: str, func: Callable[[], str]) -> DoctorCheck:
    try:
        return (name, True, func())
    except CheckWarning as warning:
        return (name, True, f"{WARN}{warning}")
    except (RoamError, OSError) as error:
        return (name, False, str(error))


class CheckWarning(RoamError):
    """A check that passed with a caveat: printed as `warn`, not a failure."""


def _hermes(session: Session, state: LocalState | None) -> str:
    """This device's Hermes against the newest one in the fleet (warns when it is behind)."""
    from roam_core.engine import hermes_guard
    from roam_core.engine.remote import load_remote
    from roam_core.engine.session import hermes_version

    here = hermes_version()
    view = load_remote(session, state)
    found = None if view is None else hermes_guard.newest(view.snapshot)
    if found is None:
        return f"{here or 'not installed'} here; no Hermes version recorded in the fleet"
    version, device = found
    detail = f"{here or 'not installed'} here; newest Hermes in the fleet {version} ({device})"
    if hermes_guard.newer_minor(version, here):
        raise CheckWarning(f"{detail}: pulls of its generations are refused; upgrade Hermes here "
                       f"({hermes_guard.UPGRADE})")
    return detail


def _enabled(session: Session) -> str:
    """Whether Hermes will load roam here, and whether this Hermes is a tested version."""
    from roam_core.engine.session import hermes_version
    from roam_core.service.enablement import problem, version_note

    here = hermes_version()
    if here is None:
        return "Hermes is not installed in this environment (roam runs standalone)"
    found = problem(session.root, here)
    if found:
        raise CheckWarning(found)
    note = version_note(here)
    if note:
        raise CheckWarning(note)
    return f"enabled in Hermes {here}"


def checks(session: Session) -> list[DoctorCheck]:
    """Every row of `roam doctor`, each check isolated so one failure never hides the rest."""
    from roam_core.engine.remote import read_verified_head
    from roam_core.engine.scan import list_shared
    from roam_core.engine.state import read_floors

    def archive_key() -> str:
        _ = session.keys  # reading it decodes the archive key, or raises why it cannot
        return "decodes to 32 bytes"

    def reachable() -> str:
        session.backend.ping()
        return "answers"

    def initialised() -> str:
        return f"device {session.require_state().device}"

    rows: list[DoctorCheck] = [_run_check("archive key", archive_key)]
    rows.append(_run_check("initialised", initialised))
    backend_ok = _run_check("backend", lambda: f"{session.core.backend}: "
                            f"{session.backend.identity()}")
    rows.append(backend_ok)
    if backend_ok[1]:
        rows.append(_run_check("backend reachable", reachable))
        rows.extend(session.backend.doctor())
        state = session.state()

        def head() -> str:
            floors = read_floors(session.state_dir)  # before HEAD, as it is verified against
            found = read_verified_head(session, state)
            if found is None:
                return "no HEAD yet (run roam init)"
            floor = floors.of(found.store, session.backend.identity(), state)
            return f"generation {found.generation} verifies, not below the floor ({floor})"

        if rows[0][1]:
            rows.append(_run_check("HEAD", head))
            rows.append(_run_check("Hermes version", lambda: _hermes(session, state)))
    limit = session.max_file_size

    def sizes() -> str:
        big = [item.rel for item in list_shared(session.scope).values() if item.size > limit]
        if big:
            raise RoamError(f"over max_file_mb ({limit >> 20} MiB): {', '.join(big[:5])}")
        return f"every shared file is under {limit >> 20} MiB"

    rows.append(_run_check("bundle size", sizes))
    rows.append(_run_check("Hermes plugin", lambda: _enabled(session)))
    rows.append(_writable(session.state_dir))
    rows.append(_writable(session.state_dir / "backups"))
    return rows


@dataclass(frozen=True)
class DoctorRecord:
    """`roam doctor`: one (check, passed, detail) row per check; a caveat is a `warn` row."""

    rows: list[DoctorCheck]
    schema: int = SCHEMA

    @property
    def exit_code(self) -> int:
        return 1 if any(not ok for _name, ok, _detail in self.rows) else 0

    def as_json(self) -> list[dict[str, str | bool]]:
        return [{"check": name, "ok": ok, "warning": detail.startswith(WARN),
                 "detail": detail.removeprefix(WARN)} for name, ok, detail in self.rows]

    def lines(self) -> list[str]:
        """The rows for people (`roam doctor` without `--json`)."""
        return doctor_lines(self.rows)


def doctor(home: str | Path | None, notify: Notify) -> DoctorRecord:
    """Check the key, the backend, HEAD, the local state and the Hermes plugin (read-only)."""
    with operation(home, "doctor", notify, lock=False) as session:
        return DoctorRecord(checks(session))

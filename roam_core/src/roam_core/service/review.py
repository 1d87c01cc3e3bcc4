"""`history`, `restore` and `check` as functions returning typed, versioned records.

The reviewing verbs, beside `service/verbs.py`'s syncing ones: the same rule holds (the
CLI renders the record, `--json` prints `as_json()`, other faces read the record).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roam_core.service.session import Notify, operation
from roam_core.service.verbs import SCHEMA

if TYPE_CHECKING:
    from roam_core.engine.check import CheckReport


@dataclass(frozen=True)
class HistoryRecord:
    """`roam history [PATH]`: every generation, or one path's versions, newest last."""

    rows: list[dict[str, Any]]
    #: the path asked about, or None for the generation list
    path: str | None = None
    schema: int = SCHEMA

    @property
    def exit_code(self) -> int:
        return 0

    def as_json(self) -> list[dict[str, Any]]:
        return list(self.rows)


@dataclass(frozen=True)
class RestoreRecord:
    """`roam restore PATH --generation N`: what was (or would be) done to the path."""

    result: dict[str, Any]
    schema: int = SCHEMA

    @property
    def action(self) -> str:
        return str(self.result["action"])

    @property
    def applied(self) -> bool:
        return self.result.get("applied") is True

    @property
    def exit_code(self) -> int:
        return 0

    def as_json(self) -> dict[str, Any]:
        return dict(self.result)


@dataclass(frozen=True)
class CheckRecord:
    """`roam check [--read-data]`: what the store holds and every problem found."""

    report: CheckReport
    schema: int = SCHEMA

    @property
    def exit_code(self) -> int:
        return 0 if self.report.ok else 1

    def as_json(self) -> dict[str, Any]:
        return self.report.as_json()


def history(home: str | Path | None, notify: Notify, path: str | None = None) -> HistoryRecord:
    """The store's generations, or the versions of `path` in them (read-only)."""
    from roam_core.engine.history import generation_list, path_history

    with operation(home, "status", notify, lock=False) as session:
        session.require_state()  # "not initialised — run roam init" before any remote call
        rows = path_history(session, path) if path else generation_list(session)
    return HistoryRecord(rows, path)


def restore(home: str | Path | None, notify: Notify, path: str, generation: int, *,
            apply: bool = False) -> RestoreRecord:
    """Bring back `path` as it was in `generation` (`apply`), or say what that would do."""
    from roam_core.engine.history import restore as engine_restore

    with operation(home, "restore", notify) as session:
        return RestoreRecord(engine_restore(session, path, generation, apply=apply))


def check(home: str | Path | None, notify: Notify, *, read_data: bool = False) -> CheckRecord:
    """Verify the store: every object a generation needs is there and authentic."""
    from roam_core.engine.check import check as engine_check

    with operation(home, "check", notify, lock=False) as session:
        return CheckRecord(engine_check(session, read_data=read_data))

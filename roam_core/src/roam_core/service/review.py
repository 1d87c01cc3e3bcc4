"""`history`, `restore` and `check` as functions returning typed, versioned records.

The reviewing verbs, beside `service/verbs.py`'s syncing ones: the same rule holds (the
CLI renders the record, `--json` prints `as_json()`, other faces read the record).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from roam_core.service.session import Notify, operation
from roam_core.service.verbs import SCHEMA

if TYPE_CHECKING:
    from roam_core.engine.check import CheckReport


@dataclass(frozen=True)
class RowsRecord:
    """A listing: one JSON object per row (`roam history`, `roam devices`, `roam sessions`)."""

    rows: list[dict[str, Any]]
    schema: int = SCHEMA

    @property
    def exit_code(self) -> int:
        return 0

    def as_json(self) -> list[dict[str, Any]]:
        return list(self.rows)


@dataclass(frozen=True)
class HistoryRecord(RowsRecord):
    """`roam history [PATH]`: every generation, or one path's versions, newest last."""

    #: the path asked about, or None for the generation list
    path: str | None = None


@dataclass(frozen=True)
class RestoreRecord:
    """`roam restore PATH --generation N`: what was (or would be) done to the path."""

    path: str
    generation: int
    #: `unchanged` (already as it was), `replace` or `create`
    action: Literal["unchanged", "replace", "create"]
    applied: bool
    #: the version brought back (None when nothing was to be done)
    size: int | None = None
    sha256: str | None = None
    #: cron jobs the restore brought back paused, with the command that approves each
    cron_paused: list[dict[str, str]] | None = None
    schema: int = SCHEMA

    @classmethod
    def from_result(cls, result: dict[str, Any]) -> RestoreRecord:
        """The record of the engine's restore result (`engine.history.restore`)."""
        return cls(path=result["path"], generation=result["generation"],
                   action=result["action"], applied=result["applied"] is True,
                   size=result.get("size"), sha256=result.get("sha256"),
                   cron_paused=result.get("cron_paused"))

    @property
    def exit_code(self) -> int:
        return 0

    def as_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {"path": self.path, "generation": self.generation,
                                    "action": self.action, "applied": self.applied}
        if self.size is not None or self.sha256 is not None:
            document.update(size=self.size, sha256=self.sha256)
        if self.cron_paused is not None:
            document["cron_paused"] = self.cron_paused
        return document


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
    return HistoryRecord(rows, path=path)


def restore(home: str | Path | None, notify: Notify, path: str, generation: int, *,
            apply: bool = False) -> RestoreRecord:
    """Bring back `path` as it was in `generation` (`apply`), or say what that would do."""
    from roam_core.engine.history import restore as engine_restore

    with operation(home, "restore", notify) as session:
        return RestoreRecord.from_result(engine_restore(session, path, generation, apply=apply))


def check(home: str | Path | None, notify: Notify, *, read_data: bool = False) -> CheckRecord:
    """Verify the store: every object a generation needs is there and authentic."""
    from roam_core.engine.check import check as engine_check

    with operation(home, "check", notify, lock=False) as session:
        return CheckRecord(engine_check(session, read_data=read_data))

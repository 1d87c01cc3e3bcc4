"""`diff`, `devices`, `sessions` and `auto status` as functions returning typed records.

The read-only looks both faces offer (`roam diff`, `/roam diff`, …): the CLI renders the
record or prints `as_json()` for `--json`; `/roam` condenses the same record for a chat.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roam_core.service.render import diff_lines
from roam_core.service.review import RowsRecord
from roam_core.service.session import Notify, operation
from roam_core.service.verbs import SCHEMA

if TYPE_CHECKING:
    from roam_core.engine.plan import Plan


@dataclass(frozen=True)
class DiffRecord:
    """`roam diff`: what a pull would change here, nothing installed."""

    plan: Plan
    schema: int = SCHEMA

    @property
    def exit_code(self) -> int:
        return 0

    def as_json(self) -> dict[str, Any]:
        return self.plan.as_json()

    def lines(self, *, show_all: bool = False) -> list[str]:
        """The preview grouped by scope class (`roam diff` without `--json`)."""
        return diff_lines(self.plan, show_all=show_all)


@dataclass(frozen=True)
class AutoRecord:
    """`roam auto status`: the switches, the last automatic push, whether Hermes runs roam."""

    auto_push: bool
    auto_pull_shared: bool
    #: the setting as written (the debounce reads it as a number when it pushes)
    push_debounce_seconds: object
    last_auto_push: object
    pending_failed_push: str | None
    initialized: bool
    hermes_version: str | None
    hermes_problem: str | None
    hermes_version_note: str | None
    schema: int = SCHEMA

    @property
    def exit_code(self) -> int:
        return 0

    def as_json(self) -> dict[str, object]:
        return {"auto_push": self.auto_push, "auto_pull_shared": self.auto_pull_shared,
                "push_debounce_seconds": self.push_debounce_seconds,
                "last_auto_push": self.last_auto_push,
                "pending_failed_push": self.pending_failed_push,
                "initialized": self.initialized, "hermes_version": self.hermes_version,
                "hermes_problem": self.hermes_problem,
                "hermes_version_note": self.hermes_version_note}


def diff(home: str | Path | None, notify: Notify) -> DiffRecord:
    """The pull preview: what the store would change here (read-only)."""
    from roam_core.engine.pull import pull

    with operation(home, "diff", notify, lock=False) as session:
        return DiffRecord(pull(session).plan)


def devices(home: str | Path | None, notify: Notify) -> RowsRecord:
    """The fleet's devices from the remote roster, by name (read-only)."""
    from roam_core.engine.remote import require_remote
    from roam_core.engine.roster import name_of

    with operation(home, "status", notify, lock=False) as session:
        state = session.require_state()
        view = require_remote(session, state)
    roster = view.snapshot.roster
    rows = sorted(({**info, "device": name_of(roster, device_id), "id": device_id,
                    "this": device_id == state.id} for device_id, info in roster.items()),
                  key=lambda row: (row["device"], row["id"]))
    return RowsRecord(rows)


def sessions(home: str | Path | None) -> RowsRecord:
    """The session archives pulls landed here, by device and profile (read-only)."""
    from roam_core.home import resolve_home
    from roam_core.tiers.archive import local_archives

    return RowsRecord(local_archives(resolve_home(home).root))


def auto_status(home: str | Path | None) -> AutoRecord:
    """Auto sync's switches and state, kept in the root home of `home` (read-only)."""
    from roam_core.engine.session import hermes_version
    from roam_core.home import resolve_home
    from roam_core.service import autostate
    from roam_core.service.enablement import problem, version_note
    from roam_core.settings import CoreSettings, load_settings

    root = resolve_home(home).root
    core = CoreSettings.build(load_settings(root))
    here = hermes_version()
    state = autostate.load(root)
    pending = state.get("pending") if isinstance(state.get("pending"), dict) else None
    return AutoRecord(
        auto_push=core.auto_push, auto_pull_shared=core.auto_pull_shared,
        push_debounce_seconds=core.raw.get("push_debounce_seconds"),
        last_auto_push=state.get("last_push_at"),
        pending_failed_push=str(pending.get("reason") or "did not finish") if pending else None,
        initialized=autostate.initialized(root), hermes_version=here,
        hermes_problem=problem(root, here), hermes_version_note=version_note(here))

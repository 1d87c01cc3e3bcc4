"""`status`, `push` and `pull` as functions returning typed, versioned records.

Both faces call these: the CLI renders a record for people or prints `as_json()` for
`--json`; the Hermes tools and auto sync read the record itself, never printed output.
`as_json()` is the CLI's published `--json` document, key for key; `schema` is the
record's version (raise it when a key changes meaning or goes away).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from roam_core.service.session import Notify, operation

if TYPE_CHECKING:
    from roam_core.engine.force_guard import Confirm
    from roam_core.engine.forget import ForgetPlan
    from roam_core.engine.progress import ProgressSink
    from roam_core.engine.pull import PullResult
    from roam_core.engine.push import PushResult
    from roam_core.engine.retention import Policy
    from roam_core.engine.session import Session
    from roam_core.secretscan.scan import SecretsFound

SCHEMA = 1


def _profiles(session: Session) -> list[tuple[str, bool]]:
    return session.scope.profiles()


#: Status keys present only when the store was read and has a HEAD, or a scan failed.
_STATUS_OPTIONAL = ("last_push_device", "remote_time", "generations_ahead",
                    "secret_scan_error")


@dataclass(frozen=True)
class StatusRecord:
    """`roam status`: local and remote generation, changes, conflicts, reachability."""

    root: str
    device: str
    backend: str
    identity: str | None
    local_generation: int | None
    #: how many paths changed here since the last synced generation
    dirty: int
    #: `added`, `changed`, `removed`: the shared paths changed here
    changes: dict[str, list[str]]
    conflicts: list[str]
    entry_conflicts: dict[str, list[str]]
    #: what the walk left out: `{"path", "reason"}` each
    skipped: list[dict[str, str]]
    links_at_top: list[str]
    reachable: bool
    remote_generation: int | None
    remote_ahead: bool
    behind: bool
    ahead: bool
    fleet_size: int | None
    #: why the remote could not be read (None when it was)
    error: str | None
    kept_in_backups: int
    secret_findings: list[dict[str, object]]
    profiles: list[dict[str, object]]
    optional: dict[str, bool]
    last_push_device: str | None = None
    remote_time: str | None = None
    generations_ahead: int | None = None
    secret_scan_error: str | None = None
    #: keys the engine reports that this record does not name yet, passed through
    extra: dict[str, object] = field(default_factory=dict)
    schema: int = SCHEMA

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> StatusRecord:
        """The record of the engine's status report (`engine.status.status`)."""
        named = {f.name for f in fields(cls)} - {"extra", "schema"}
        return cls(**{key: value for key, value in report.items() if key in named},
                   extra={key: value for key, value in report.items() if key not in named})

    @property
    def exit_code(self) -> int:
        return 0 if self.reachable else 1

    def as_json(self) -> dict[str, Any]:
        document = {f.name: getattr(self, f.name) for f in fields(self)
                    if f.name not in ("extra", "schema")}
        for key in _STATUS_OPTIONAL:
            if document[key] is None:
                del document[key]
        return {**document, **self.extra}


@dataclass(frozen=True)
class PushRecord:
    """`roam push`: what was published, or the secret-looking values that stopped it."""

    root: str
    profiles: list[tuple[str, bool]]
    result: PushResult | None = None
    #: the push stopped before anything was uploaded: these values look like secrets
    stopped: SecretsFound | None = None
    schema: int = SCHEMA

    @property
    def exit_code(self) -> int:
        if self.stopped is not None:
            return 1
        return 1 if self.result is not None and self.result.findings else 0

    def as_json(self) -> dict[str, Any]:
        if self.stopped is not None:
            return {"error": "secrets found", "pushed": False,
                    "secret_findings": [finding.as_json() for finding in self.stopped.findings]}
        assert self.result is not None
        return dict(self.result.as_json())


@dataclass(frozen=True)
class PullRecord:
    """`roam pull`: the plan, and whether it was installed."""

    root: str
    profiles: list[tuple[str, bool]]
    result: PullResult
    #: `--cron` asked for cron job definitions, but sync_cron is off on this device
    cron_off: bool = False
    schema: int = SCHEMA

    @property
    def exit_code(self) -> int:
        return self.result.exit_code

    def as_json(self) -> dict[str, Any]:
        result = self.result
        return {**result.plan.as_json(), "applied": result.applied,
                "verified_bytes": result.verified_bytes, "root": self.root}


def status(home: str | Path | None, notify: Notify) -> StatusRecord:
    """Compare this home with the last synced generation and the remote (read-only)."""
    from roam_core.engine.status import status as engine_status

    with operation(home, "status", notify, lock=False) as session:
        return StatusRecord.from_report(engine_status(session))


def push(home: str | Path | None, notify: Notify, *, force: bool = False,
         dry_run: bool = False, progress: ProgressSink | None = None,
         confirm: Confirm | None = None) -> PushRecord:
    """Publish this home's shared files as the next generation (or list them: `dry_run`)."""
    from roam_core.engine.push import push as engine_push
    from roam_core.secretscan.scan import SecretsFound

    with operation(home, "push", notify) as session:
        root, profiles = str(session.root), _profiles(session)
        try:
            result = engine_push(session, force=force, dry_run=dry_run, progress=progress,
                                 confirm=confirm)
        except SecretsFound as found:
            return PushRecord(root, profiles, stopped=found)
    return PushRecord(root, profiles, result)


def pull(home: str | Path | None, notify: Notify, *, apply: bool = False,
         overwrite_conflicts: bool = False, only: tuple[str, ...] = (),
         keep_seen: bool = False, dry_run: bool = False, cron_only: bool = False,
         progress: ProgressSink | None = None) -> PullRecord:
    """Plan a pull from the remote; `apply` installs it through the journal."""
    from roam_core.engine.pull import pull as engine_pull

    with operation(home, "pull", notify) as session:
        root, profiles = str(session.root), _profiles(session)
        result = engine_pull(session, apply=apply, overwrite_conflicts=overwrite_conflicts,
                             only=only, keep_seen=keep_seen, dry_run=dry_run,
                             progress=progress, cron_only=cron_only)
        cron_off = cron_only and not session.core.sync_cron
    return PullRecord(root, profiles, result, cron_off)


@dataclass(frozen=True)
class ForgetRecord:
    """`roam forget`: what a retention policy keeps and forgets, and whether it was recorded."""

    plan: ForgetPlan
    schema: int = SCHEMA

    @property
    def exit_code(self) -> int:
        return 0

    def as_json(self) -> dict[str, Any]:
        return dict(self.plan.as_json())


def forget(home: str | Path | None, notify: Notify, policy: Policy, *,
           apply: bool = False) -> ForgetRecord:
    """Plan (and with `apply`, record) what a retention `Policy` forgets."""
    from roam_core.engine.forget import forget as engine_forget

    with operation(home, "forget", notify) as session:
        return ForgetRecord(engine_forget(session, policy, apply=apply))

"""The session archive for a push (`sync_sessions`): this device's finished sessions.

For every home of the root (profile `default`, then each `profiles/<name>/` this device does
not exclude), Hermes's own `hermes sessions export --format md --redact` writes one Markdown
transcript per ended session (a bulk export needs a filter, and filter selection takes only
ended sessions; `--min-messages 1` also leaves out empty ones). The newest transcripts across
all profiles fill one shared cap, `sessions_max_mb`. They are staged under
`roam/cache/session-archive/` and published as `archive/sessions/<device id>/<profile>/`.

An export stamps its time into the file; a re-export whose only difference is that stamp
keeps the staged copy, so an unchanged session is never uploaded twice. A profile whose export
fails keeps what the store had for it, and a missing Hermes leaves the whole archive as it was:
the push goes on either way and says why.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from roam_core.errors import ConfigError
from roam_core.fs import ensure_private_dir, write_atomic
from roam_core.tiers import archive
from roam_core.tiers.hermes_exec import find_hermes, run_hermes

if TYPE_CHECKING:
    from roam_core.scope.model import ScopeModel
    from roam_core.settings import CoreSettings

STAGE_DIR = ("cache", "session-archive")
EXPORT_ARGS = ("sessions", "export", "--format", "md", "--redact", "--min-messages", "1")
#: One home's export may take at most this long (and never past the push's deadline).
EXPORT_TIMEOUT = 300.0
_PROFILE = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
#: The lines an export rewrites every time: its own time and the digest covering it.
_VOLATILE = re.compile(r"^(exported_at: |- Exported at: |- SHA256 of exported body: ).*$",
                       re.MULTILINE)


@dataclass(frozen=True)
class Exported:
    """One transcript Hermes wrote."""

    profile: str
    session_id: str
    path: Path
    size: int
    ended: float


@dataclass(frozen=True)
class StagedFile:
    """One staged transcript copy, as the push's scan would list it (it becomes a LocalFile)."""

    rel: str
    location: str
    size: int
    mode: int
    signature: list[int]


@dataclass
class ArchiveStage:
    """What a push publishes for this device's namespace, and what it leaves as it was."""

    device: str = ""
    active: bool = False
    files: dict[str, StagedFile] = field(default_factory=dict)
    kept_profiles: set[str] = field(default_factory=set)
    over_cap: int = 0
    notes: list[str] = field(default_factory=list)

    def replaces(self, rel: str) -> bool:
        """Whether the store entry `rel` belongs to what this push rewrites (own namespace)."""
        if not self.active:
            return False
        parsed = archive.parse(rel)
        if parsed is None:  # malformed, and ours: not ours to keep
            return rel.startswith(f"{archive.PREFIX}{self.device}/")
        return parsed.device == self.device and parsed.profile not in self.kept_profiles

    def as_json(self) -> dict[str, Any]:
        return {"active": self.active, "sessions": len(self.files),
                "bytes": sum(item.size for item in self.files.values()),
                "over_cap": self.over_cap, "kept_profiles": sorted(self.kept_profiles),
                "notes": self.notes}


def cap_bytes(settings: Mapping[str, Any]) -> int:
    raw = settings.get("sessions_max_mb", 50)
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ConfigError(f"setting 'sessions_max_mb' must be a number, not {raw!r}") from None
    if value < 0:
        raise ConfigError("setting 'sessions_max_mb' must not be negative")
    return int(value * 1024 * 1024)


class ArchiveHome(Protocol):
    """What the archive tier reads of an operation's session (the engine's `Session`)."""

    @property
    def root(self) -> Path:
        """The root home."""

    @property
    def state_dir(self) -> Path:
        """`<root>/roam/`: where the archive is staged."""

    @property
    def settings(self) -> Mapping[str, Any]:
        """Roam's settings (sync_sessions, sessions_max_mb)."""

    @property
    def device_id(self) -> str:
        """This device's id in the fleet: its archive namespace."""

    @property
    def scope(self) -> ScopeModel:
        """The scope model: which profiles this device excludes."""

    @property
    def core(self) -> CoreSettings:
        """Roam's own settings, typed (sync_sessions)."""

    @property
    def max_file_size(self) -> int:
        """The largest file a push takes, in bytes (a bigger transcript stays out)."""


def homes(root: Path, scope: ScopeModel) -> list[tuple[str, Path]]:
    """(profile, home) for the root and each profile this device does not exclude."""
    found = [("default", root)]
    for name, excluded in scope.profiles():
        if not excluded and _PROFILE.match(name):
            found.append((name, root / "profiles" / name))
    return found


def stage(session: ArchiveHome) -> ArchiveStage:
    """Export and select this device's archive for a push (inactive when the tier is off)."""
    settings = session.settings
    # the namespace is the device id: names are labels and may repeat over time
    result = ArchiveStage(device=session.device_id)
    if not session.core.sync_sessions:
        return result
    if not archive.safe_name(result.device):
        result.notes.append(f"session archive: device id {result.device!r} cannot name an "
                            "archive folder; rename this device (letters, digits, . _ -)")
        return result
    hermes = find_hermes()
    if hermes is None:
        result.notes.append("session archive: Hermes is not installed here (no `hermes` "
                            "beside this Python or on PATH); the archive was left as it was")
        return result
    cap = cap_bytes(settings)
    state_dir: Path = session.state_dir
    stage_root = ensure_private_dir(state_dir.joinpath(*STAGE_DIR))
    work = Path(tempfile.mkdtemp(prefix="export-", dir=stage_root))
    try:
        exported: list[Exported] = []
        for profile, home in homes(session.root, session.scope):
            found = _export(hermes, profile, home, work, result)
            if found is not None:
                exported.extend(found)
        result.active = True
        chosen = _select(exported, cap, session.max_file_size, result)
        _stabilize(stage_root, chosen, result)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return result


def _export(hermes: Path, profile: str, home: Path, work: Path,
            result: ArchiveStage) -> list[Exported] | None:
    """One home's transcripts, or None when its export failed (its archive is kept)."""
    if not (home / "state.db").is_file():
        return []  # no session was ever recorded here (and Hermes must not create one)
    out = work / profile
    cwd = work / f"{profile}.cwd"
    cwd.mkdir()
    # The root home is named explicitly: a sticky `active_profile` must not redirect it.
    args = (("-p", "default") if profile == "default" else ()) + (*EXPORT_ARGS, str(out))
    run = run_hermes(hermes, args, home, cwd=cwd, cap=EXPORT_TIMEOUT)
    if run.timed_out or run.returncode != 0 or "Exported" not in run.stdout:
        why = "timed out" if run.timed_out else (
            f"exited with code {run.returncode}" if run.returncode else "exported nothing")
        result.kept_profiles.add(profile)
        result.notes.append(f"session archive: exporting profile {profile} {why}; its "
                            "archive was left as it was")
        return None
    return list(_read_manifest(profile, out))


def _read_manifest(profile: str, out: Path) -> list[Exported]:
    found: dict[str, Exported] = {}
    try:
        lines = (out / "manifest.jsonl").read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        return []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        session_id = str(record.get("session_id") or "")
        path = Path(str(record.get("path") or ""))
        if not archive.safe_session_id(session_id) or path.parent != out:
            continue
        try:
            size = path.stat().st_size
        except OSError:
            continue
        meta = archive.read_front_matter(path)
        ended = _epoch(meta.get("ended_at")) or _epoch(meta.get("created_at")) \
            or float(record.get("exported_at") or 0)
        found[session_id] = Exported(profile, session_id, path, size, ended)
    return list(found.values())


def _epoch(value: Any) -> float:
    if not isinstance(value, str) or not value:
        return 0.0
    try:
        return datetime.datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _select(exported: list[Exported], cap: int, max_file: int,
            result: ArchiveStage) -> list[Exported]:
    """Globally newest first, each one that still fits under the shared cap."""
    chosen: list[Exported] = []
    total = 0
    for item in sorted(exported, key=lambda e: (e.ended, e.profile, e.session_id),
                       reverse=True):
        if total + item.size > cap or item.size > max_file:
            result.over_cap += 1
            continue
        chosen.append(item)
        total += item.size
    if result.over_cap:
        result.notes.append(f"session archive: {result.over_cap} older session(s) left out "
                            f"to stay under sessions_max_mb")
    return chosen


def _same_transcript(old: Path, new: bytes) -> bool:
    try:
        before = old.read_bytes()
    except OSError:
        return False
    return _VOLATILE.sub("", before.decode("utf-8", "replace")) == \
        _VOLATILE.sub("", new.decode("utf-8", "replace"))


def _stabilize(stage_root: Path, chosen: list[Exported], result: ArchiveStage) -> None:
    """Keep staged copies whose sessions did not change; stage the rest; list them all."""
    wanted: dict[Path, Exported] = {}
    for item in chosen:
        wanted[stage_root / "staged" / item.profile / f"{item.session_id}{archive.SUFFIX}"] = item
    for target, item in wanted.items():
        data = item.path.read_bytes()
        if not _same_transcript(target, data):
            ensure_private_dir(target.parent)
            write_atomic(target, data, 0o600)
        st = target.stat()
        rel = archive.store_rel(result.device, item.profile, item.session_id)
        result.files[rel] = StagedFile(rel, str(target), st.st_size, archive.MODE,
                                       [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns])
    staged = stage_root / "staged"
    for path in sorted(staged.glob("*/*")) if staged.is_dir() else []:
        if path not in wanted and path.parent.name not in result.kept_profiles:
            with contextlib.suppress(OSError):
                path.unlink()
    with contextlib.suppress(OSError):
        for folder in staged.iterdir():
            if folder.is_dir() and not any(folder.iterdir()):
                folder.rmdir()

"""Pull planning: compare remote (R), last synced base (B) and the home (L), path by path.

Nothing is written here. The plan says what an install would do and why, and carries the
ops the journal will run. Config files always go through the key-by-key merge (their host
keys must survive), files with a registered entry format (core's memory format or a
plugin's) through the entry merge when both sides changed, and everything else is a file:
taken when only the remote changed, kept when only this device changed it, a conflict kept
local when both did (unless overwriting was asked for).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from roam_core.engine import inventory
from roam_core.engine.filemodes import home_files
from roam_core.engine.journal import Op
from roam_core.engine.plan_reads import ReadAhead, under
from roam_core.engine.remote import RemoteView
from roam_core.engine.scan import (
    LocalFile,
    StatCache,
    fill_digests,
    install_mode,
    read_umask,
)
from roam_core.engine.session import Session
from roam_core.engine.state import LocalState
from roam_core.engine.tiers import archive_off_rows, iter_tier_lines, plan_archive, plan_cron
from roam_core.engine.typechange import settle_case_collisions, settle_type_changes
from roam_core.scope.walk import hidden_by
from roam_core.store.manifest import MODES, FileEntry, Manifest, synced_mode
from roam_core.tiers.archive import is_archive
from roam_core.tiers.cron import is_jobs_file
from roam_core.types import MergeFormat, Scope


@dataclass
class Plan:
    """What a pull would do."""

    generation: int
    device: str
    created: str
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    configs_merged: list[dict[str, Any]] = field(default_factory=list)
    memories_merged: list[dict[str, Any]] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    #: conflicts kept local because of what the path is here (a symlink, a folder...): why
    shape_conflicts: dict[str, str] = field(default_factory=dict)
    kept_by_rules: list[dict[str, str]] = field(default_factory=list)
    local_changes: list[str] = field(default_factory=list)
    unchanged: int = 0
    overwritten: list[str] = field(default_factory=list)
    plugins_missing: list[dict[str, Any]] = field(default_factory=list)
    archives: list[dict[str, str]] = field(default_factory=list)
    cron_paused: list[dict[str, str]] = field(default_factory=list)
    cron_removed: list[dict[str, str]] = field(default_factory=list)
    cron_conflicts: list[dict[str, str]] = field(default_factory=list)
    ops: list[Op] = field(default_factory=list)
    new_state: LocalState | None = None

    @property
    def has_changes(self) -> bool:
        return bool(self.ops)

    @property
    def kept_conflicts(self) -> int:
        """Conflicts of every kind kept local: files, config keys, memory entries."""
        return (len(self.conflicts)
                + sum(len(item["conflicts_kept_local"]) for item in self.configs_merged)
                + sum(len(item["conflicts"]) for item in self.memories_merged)
                + len(self.cron_conflicts))

    def as_json(self) -> dict[str, Any]:
        return {"generation": self.generation, "device": self.device, "created": self.created,
                "added": self.added, "changed": self.changed, "removed": self.removed,
                "configs_merged": self.configs_merged, "memories_merged": self.memories_merged,
                "conflicts_kept_local": self.conflicts,
                "conflict_reasons": self.shape_conflicts, "kept_local_by_rules": self.kept_by_rules,
                "local_changes": self.local_changes, "unchanged": self.unchanged,
                "overwritten_conflicts": self.overwritten,
                "plugins_missing": self.plugins_missing, "session_archive": self.archives,
                "cron_paused": self.cron_paused, "cron_removed": self.cron_removed,
                "cron_conflicts": self.cron_conflicts}


def _remote_source(session: Session, entry: FileEntry) -> Any:
    return session.repo.content_source(entry)


def _bytes_source(data: bytes) -> Any:
    return lambda: iter((data,))


class Planner:
    """Builds one `Plan` for one pull (or restore) on one home."""

    def __init__(self, session: Session, state: LocalState, view: RemoteView, *,
                 overwrite_conflicts: bool = False, only: tuple[str, ...] = (),
                 cron_only: bool = False) -> None:
        self.session = session
        #: read once: a /proc read per new file adds up to seconds on a large pull
        self.umask = read_umask()
        self.state = state
        self.view = view
        self.overwrite = overwrite_conflicts
        self.only = only
        self.cron_only = cron_only
        self.archive_off: set[str] = set()
        self.scope = session.scope
        self.host_keys = self.scope.host_keys
        first = state.generation is None
        self.base: Manifest = {} if first else state.base_manifest()
        self.first_pull = first
        #: filled by `scan()`: constructing a planner reads nothing in the home
        self.local: dict[str, LocalFile] = {}
        self.skipped: dict[str, str] = {}
        self.hidden = hidden_by([])
        self.plan = Plan(view.head.generation, view.head.device, view.snapshot.created)
        self.new_state = state.copy()
        self.unseen: set[str] = set()
        #: the paths the last sync left unseen (the state's list), as a set: looked up per path
        self.was_unseen = set(state.unseen)
        self._formats: list[MergeFormat] | None = None
        #: the remote files the loop merges, read at once before it (`plan_reads`)
        self.ahead = ReadAhead(self)

    def scan(self) -> None:
        """Walk the home's shared files and digest them (the stat cache skips unchanged ones).

        `build()` runs it first; it is a step of its own so that making a planner costs
        nothing and the one expensive read of the home is visible where it happens.
        """
        files = home_files(self.session, self.state)
        cache = StatCache(self.session.state_dir / "cache")
        fill_digests(files, cache, self.host_keys)
        cache.save(files)
        self.local = files
        self.skipped = dict(self.scope.skipped)
        self.hidden = hidden_by(list(self.skipped.items()))

    def build(self) -> Plan:
        """Scan the home, then compare remote, base and local path by path into a plan."""
        self.scan()
        remote = self.view.manifest
        self.ahead.fill()
        paths = sorted(set(remote) | set(self.base) | set(self.local))
        for rel in paths:
            if self.only and not under(rel, self.only):
                continue
            if self.cron_only and not is_jobs_file(rel):
                continue
            if is_archive(rel):  # other devices' namespaces, landed under roam/
                plan_archive(self, rel, remote.get(rel), self.base.get(rel))
                continue
            if self.scope.classify(rel) is not Scope.SHARED:
                if rel in remote:
                    self.unseen.add(rel)
                if rel in remote and (rel not in self.base
                                      or not remote[rel].same_content(self.base[rel])):
                    self.plan.kept_by_rules.append(
                        {"path": rel, "reason": self._reason(rel)})
                continue
            if self.hidden(rel):  # a symlink or unreadable here: never written through
                self._hidden(rel, remote.get(rel), self.base.get(rel))
                continue
            if rel == inventory.INVENTORY:
                self._inventory(remote.get(rel))
                continue
            if is_jobs_file(rel):  # merged job by job; new or changed jobs land paused
                plan_cron(self, rel, remote.get(rel), self.base.get(rel), self.local.get(rel))
                continue
            base = self.base.get(rel)
            if rel in self.was_unseen and rel not in self.local:
                base = None  # hidden by the rules until now: never here, so not deleted here
            self._path(rel, remote.get(rel), base, self.local.get(rel))
        self.plan.kept_by_rules.extend(archive_off_rows(self.archive_off))
        settle_type_changes(self)
        settle_case_collisions(self)
        self._finish_state()
        self.plan.new_state = self.new_state
        return self.plan

    def _hidden(self, rel: str, r: FileEntry | None, b: FileEntry | None) -> None:
        """A path this device cannot see: a remote change there is kept local, with why."""
        if r is None or r.same_content(b):
            return
        parts = rel.split("/")
        top = next("/".join(parts[:depth]) for depth in range(1, len(parts) + 1)
                   if "/".join(parts[:depth]) in self.skipped)
        self.keep_by_shape(rel, r, f"{top}: {self.skipped[top]} here")

    def keep_by_shape(self, rel: str, r: FileEntry | None, why: str) -> None:
        """A conflict kept local because the path cannot take the remote version here."""
        self.plan.conflicts.append(rel)
        self.plan.shape_conflicts[rel] = why
        self.new_state.conflicts[rel] = r.sha256 if r is not None else ""
        if rel not in self.local:  # never here: a push carries it forward, never deletes it
            self.unseen.add(rel)

    def _inventory(self, entry: FileEntry | None) -> None:
        """Compare plugin inventories; roam lists what is missing and never installs code."""
        if entry is not None:
            remote_bytes = self.ahead.read(entry)
            self.plan.plugins_missing = inventory.missing(self.session.root, remote_bytes)

    def remote_source(self, entry: FileEntry) -> Any:
        return _remote_source(self.session, entry)

    def _reason(self, rel: str) -> str:
        scope, why = self.scope.explain(rel)
        return f"{scope.value}: {why}"

    def _path(self, rel: str, r: FileEntry | None, b: FileEntry | None,
              loc: LocalFile | None) -> None:
        same = (r is None and loc is None) or (
            r is not None and loc is not None and loc.sha256 == r.sha256
            and synced_mode(loc.mode) == synced_mode(r.mode))
        if self.scope.is_config(rel):
            if r is None:
                if loc is not None:
                    self.plan.local_changes.append(rel)  # a config is never deleted by a pull
                return
            if same:
                self.plan.unchanged += 1
                self._resolved(rel)
                if self.state.projections.get(rel) is None or not _same_sha(
                        self.state.projections[rel], r.sha256):
                    # agreeing with the remote is accepting it: the base of the next merge
                    self.new_state.projections[rel] = self.ahead.read(r).decode("utf-8")
                return
            self._config(rel, r, loc)
            return
        if same:
            if r is not None:
                self.plan.unchanged += 1
            self._resolved(rel)
            return
        local_same_as_base = _same(loc, b) and not self.first_pull
        # A path the remote never had is a local addition, on a first pull too.
        remote_same_as_base = (r is None and b is None) or (
            not self.first_pull and r is not None and r.same_content(b))
        if rel in self.state.conflicts and (loc is not None or rel not in self.was_unseen):
            self._conflict(rel, r, loc)
        elif remote_same_as_base and r is not None and loc is not None \
                and self.state.entry_conflicts.get(rel):
            self._still_open(rel, r, loc)
        elif remote_same_as_base:
            self.plan.local_changes.append(rel)
        elif local_same_as_base or (loc is None and b is None):
            self._take(rel, r, loc)
        elif r is not None and loc is not None and self._entry_merge(rel, r, b, loc):
            return
        else:
            self._conflict(rel, r, loc)

    def _take(self, rel: str, r: FileEntry | None, loc: LocalFile | None,
              overwrite: bool = False) -> None:
        expect = None if loc is None else loc.signature
        if r is None:
            if loc is None:
                return
            self.plan.removed.append(rel)
            self.plan.ops.append(Op(rel, "delete", expect=expect, original_sha=_raw_sha(loc)))
        else:
            (self.plan.changed if loc is not None else self.plan.added).append(rel)
            mode = install_mode(r.mode, loc, self.umask)
            mode = MODES.setdefault(mode, mode)  # one int per mode, not per new file
            self.plan.ops.append(Op(rel, "write", r.sha256, mode, expect, _raw_sha(loc),
                                    source=_remote_source(self.session, r)))
        if overwrite:
            self.plan.overwritten.append(rel)
        self._resolved(rel)

    def _resolved(self, rel: str) -> None:
        """`rel` agrees with the remote now: no conflict of any kind stays open on it."""
        self.new_state.conflicts.pop(rel, None)
        self.new_state.entry_conflicts.pop(rel, None)

    def note_entry_conflicts(self, rel: str, kept: list[str]) -> None:
        """The keys or entries of a merged file kept local, open until pushed or overwritten."""
        if kept:
            self.new_state.entry_conflicts[rel] = [str(item) for item in kept]
        else:
            self.new_state.entry_conflicts.pop(rel, None)

    def _still_open(self, rel: str, r: FileEntry, loc: LocalFile) -> None:
        """Entries of a merged file kept local by an earlier pull, the remote unchanged since.

        They stay open (exit 2) until this device pushes its version or overwrites: with no
        new remote change there is nothing to merge again, and the base they were decided
        against is gone, so `--overwrite-conflicts` takes the remote file whole (this
        version is backed up, kept until dropped when it was never pushed).
        """
        if self.overwrite:
            self._take(rel, r, loc, overwrite=True)
            return
        entries = list(self.state.entry_conflicts[rel])
        self.plan.memories_merged.append({
            "path": rel, "added_remote": 0, "kept_local": len(entries), "removed": 0,
            "conflicts": entries, "still_open": True})
        self.plan.local_changes.append(rel)

    def _conflict(self, rel: str, r: FileEntry | None, loc: LocalFile | None) -> None:
        if self.overwrite:
            self._take(rel, r, loc, overwrite=True)
            return
        self.plan.conflicts.append(rel)
        self.new_state.conflicts[rel] = r.sha256 if r is not None else ""

    def _config(self, rel: str, r: FileEntry, loc: LocalFile | None) -> None:
        from roam_core.config import merge_config

        remote_text = self.ahead.read(r).decode("utf-8")
        local_text = None if loc is None else loc.path.read_text(encoding="utf-8")
        base_projection = None if self.first_pull else self.state.projections.get(rel)
        merged = merge_config(local_text, base_projection, remote_text,
                              overwrite_conflicts=self.overwrite, host_keys=self.host_keys)
        self.new_state.projections[rel] = merged.accepted_projection
        self.note_entry_conflicts(rel, merged.conflicts)
        self.plan.configs_merged.append({
            "path": rel, "remote_applied": merged.remote_applied,
            "conflicts_kept_local": merged.conflicts, "local_kept": merged.local_kept})
        if merged.changed:
            data = merged.text.encode("utf-8")
            mode = loc.mode if loc is not None else 0o600
            self.plan.ops.append(Op(rel, "write", _sha(data), mode,
                                    None if loc is None else loc.signature, _raw_sha(loc),
                                    source=_bytes_source(data)))

    def _entry_merge(self, rel: str, r: FileEntry, b: FileEntry | None,
                     loc: LocalFile) -> bool:
        """Merge a file both sides changed through its registered entry format, if it has one.

        Core's memory format is one registered format among the plugins' (`merge_formats`).
        """
        from roam_core.merge import format_for, merge_file, merge_formats

        if self._formats is None:
            self._formats = merge_formats()
        if format_for(rel, self._formats) is None:
            return False
        base_bytes = None if b is None else self._base_content(b)
        remote_bytes = self.session.repo.read_content(r)
        merged = merge_file(rel, base_bytes, loc.path.read_bytes(), remote_bytes,
                            self._formats, overwrite_conflicts=self.overwrite)
        if merged is None:
            return False
        self.plan.memories_merged.append({
            "path": rel, "added_remote": merged.added_remote, "kept_local": merged.kept_local,
            "removed": merged.removed, "conflicts": merged.conflicts})
        self.note_entry_conflicts(rel, merged.conflicts)
        if merged.changed:
            self.plan.ops.append(Op(rel, "write", _sha(merged.data), loc.mode, loc.signature,
                                    _raw_sha(loc), source=_bytes_source(merged.data)))
        self.new_state.conflicts.pop(rel, None)  # merged: no longer a whole-file conflict
        return True

    def _base_content(self, b: FileEntry) -> bytes | None:
        """The base's bytes, or None when the store no longer holds them.

        The base is the version this device last synced; when the fleet forgot that
        generation and a prune freed its blobs (a device away for weeks), no index names
        them any more. The merge then runs without a base and keeps every entry either side
        holds: an entry one side removed comes back, none is lost. A blob the indexes still
        name is read as ever (a damaged one is an error).
        """
        repo = self.session.repo
        if any(not repo.locations(ref[0]) for ref in b.blobs):
            return None
        return repo.read_content(b)

    def _finish_state(self) -> None:
        if self.only or self.cron_only:
            return  # a restricted pull does not advance what this device has seen
        state = self.new_state
        state.generation = self.view.head.generation
        state.snapshot = self.view.head.snapshot
        state.last_pull = self.view.head.generation
        state.set_base(self.view.manifest)
        state.unseen = sorted(self.unseen)


def _same(loc: LocalFile | None, b: FileEntry | None) -> bool:
    if loc is None or b is None:
        return loc is None and b is None
    return loc.sha256 == b.sha256 and synced_mode(loc.mode) == synced_mode(b.mode)


def _raw_sha(loc: LocalFile | None) -> str | None:
    """The digest of the file's bytes on disk (configs are digested as projections)."""
    if loc is None:
        return None
    if not loc.is_config:
        return loc.sha256
    from roam_core.engine.journal import sha256_file

    return sha256_file(loc.path)


def _same_sha(text: str, sha256: str) -> bool:
    return _sha(text.encode("utf-8")) == sha256


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


def iter_lines(plan: Plan) -> Iterator[str]:
    """The plan for people, one line per path (callers cap long lists)."""
    for rel in plan.added:
        yield f"added: {rel}"
    for rel in plan.changed:
        yield f"changed: {rel}"
    for rel in plan.removed:
        yield f"removed: {rel}"
    for item in plan.configs_merged:
        yield (f"merged config: {item['path']} ({len(item['remote_applied'])} remote key(s) "
               f"applied, {len(item['local_kept'])} kept local)")
        for key in item["local_kept"]:
            yield f"config kept local (first pull, your value stays): {item['path']}: {key}"
        for key in item["conflicts_kept_local"]:
            yield f"config conflict kept local: {item['path']}: {key}"
    for item in plan.memories_merged:
        if not item.get("still_open"):
            yield (f"merged memories: {item['path']} (+{item['added_remote']} remote, "
                   f"{item['kept_local']} kept local)")
        for entry in item["conflicts"]:
            yield f"memory conflict kept local: {item['path']}: {entry}"
    for rel in plan.overwritten:
        yield f"overwritten (was changed here; backed up): {rel}"
    for rel in plan.conflicts:
        why = plan.shape_conflicts.get(rel, "changed here since last sync")
        yield f"kept local ({why}): {rel}"
    for item in plan.kept_by_rules:
        yield f"kept local by rules: {item['path']} ({item['reason']})"
    for rel in plan.local_changes:
        yield f"local change (publish with roam push): {rel}"
    yield from iter_tier_lines(plan)
    for plugin in plan.plugins_missing:
        how = plugin["install"] or "install it the way the other machine did"
        yield f"plugin missing here: {plugin['name']} {plugin['version'] or ''} — {how}".replace(
            "  ", " ")

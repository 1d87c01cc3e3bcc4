"""`roam status`: where this device stands against the store, without guessing."""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Iterable, Iterator
from typing import Any

from roam_core.engine import backups, inventory, memo
from roam_core.engine import remote as remote_module
from roam_core.engine.filemodes import carried_modes
from roam_core.engine.scan import LocalFile, StatCache, fill_digests, list_shared
from roam_core.engine.session import Session
from roam_core.engine.state import LocalState, StateMoved
from roam_core.errors import RoamError, describe
from roam_core.scope.walk import SYMLINK, hidden_by
from roam_core.store.manifest import over_limits, synced_mode
from roam_core.types import Scope

#: paths whose being a symlink (a dotfiles setup) status names first: nothing below syncs
_TOP_LINKS = ("SOUL.md", "skills", "memories", "config.yaml")


def links_at_top(skipped: list[dict[str, str]]) -> list[str]:
    """The home's main paths that are symlinks here, so never synced from this device."""
    return [item["path"] for item in skipped
            if item["reason"] == SYMLINK and item["path"] in _TOP_LINKS]


def local_changes(session: Session, state: LocalState | None = None, *,
                  signature: list[int] | None = None) -> dict[str, list[Any]]:
    """Shared paths added, changed or removed here since the last synced generation.

    `skipped` lists [path, reason] for what the walk left out (a symlink, an unreadable
    folder, an odd name); what the base holds there is not removed, it is carried forward.

    With `signature` (the state's, taken before `state` was read) the look is remembered
    for the next status (`roam_core.engine.memo`).
    """
    started = time.time_ns()
    state = state or session.require_state()
    scope = session.scope
    files = list_shared(scope, state.projections, modes=carried_modes(session, state))
    # as the walk saw them, before the inventory is set aside below
    seen = {rel: item.signature for rel, item in files.items()} if signature else {}
    cache = StatCache(session.state_dir / "cache")
    fill_digests(files, cache, tuple(scope.host_keys))
    cache.save(files)
    # the plugin inventory is rewritten by every push from what is installed: not a change
    files.pop(inventory.INVENTORY, None)
    unseen = set(state.unseen)  # hidden by rules until now: never here, so not removed
    skipped = sorted(scope.skipped)
    hidden = hidden_by(skipped)
    added, changed, removed = _compare(files, state.iter_base_digests())
    removed = [rel for rel in removed if rel not in unseen
               and scope.classify(rel) is Scope.SHARED and not hidden(rel)]
    # a path over the format's limits is not skipped (push refuses it), but said here first
    said = [*skipped, *over_limits(files)]
    changes: dict[str, list[Any]] = {"added": added, "changed": changed, "removed": removed,
                                     "skipped": [list(item) for item in said]}
    if signature is not None:
        memo.remember(session, state, signature, started, scope.folders,
                      seen, changes)
    return changes


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off for a full look, back as it was after it.

    A look makes several objects per shared file that live to its end and hold no cycles;
    each collection then walks every one of them again: ~0.15 s of the walk's 0.8 s of
    processor time at 100,000 files (issue 22). Nothing is collected early instead: what
    is garbage is freed by its reference count as always, and cycles wait for the next
    collection after the look.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _compare(files: dict[str, LocalFile], base: Iterable[tuple[str, str, int]]
             ) -> tuple[list[str], list[str], list[str]]:
    """(added, changed, gone) paths, sorted: the walk merged with the base rows in path order.

    Both come sorted, so the base is never held whole (issue 22: a table of every base path
    beside the walk's records was a quarter of a full status's memory).
    """
    names = sorted(files)
    count = len(names)
    added: list[str] = []
    changed: list[str] = []
    gone: list[str] = []
    at = 0
    skip = inventory.INVENTORY
    for rel, sha, mode in base:
        if rel == skip:
            continue
        while at < count and names[at] < rel:
            added.append(names[at])
            at += 1
        if at < count and names[at] == rel:
            item = files[rel]
            # equal modes sync equal: `synced_mode` only for the few that differ on disk
            if item.sha256 != sha or (item.mode != mode
                                      and synced_mode(item.mode) != synced_mode(mode)):
                changed.append(rel)
            at += 1
        else:
            gone.append(rel)
    added.extend(names[at:])
    return added, changed, gone


def _secret_warnings(session: Session, state: LocalState, changes: dict[str, list[Any]],
                     report: dict[str, Any]) -> None:
    """What would stop the next push, in the changed files only (none changed: nothing read)."""
    from roam_core.engine.secretwarn import findings_in

    report["secret_findings"] = []
    paths = [*changes["added"], *changes["changed"]]
    if not paths:
        return
    scope = session.scope
    try:
        found = findings_in(session.root, session.state_dir, session.settings, paths,
                            is_config=scope.is_config,
                            host_keys=scope.host_keys,
                            projections=state.projections)
    except RoamError as error:  # status still answers; push will refuse with the reason
        report["secret_scan_error"] = describe(error)
        return
    report["secret_findings"] = [finding.as_json() for finding in found]


def status(session: Session) -> dict[str, Any]:
    """Local and remote generation, ahead/behind, dirty paths; `reachable` False on failure."""
    remembered = memo.recall(session)
    if remembered is not None:  # nothing it depends on changed since the last full look
        state, changes = remembered
    else:
        # the base is read after the walk: a push saving meanwhile makes the look start over
        for attempt in range(2):
            signature = memo.state_signature(session)
            state = session.require_state()
            try:
                with collector_paused():
                    changes = local_changes(session, state, signature=signature)
                break
            except StateMoved:
                if attempt:
                    raise
    skipped = [{"path": str(rel), "reason": str(why)} for rel, why in changes.pop("skipped", [])]
    dirty = sum(len(paths) for paths in changes.values())
    report: dict[str, Any] = {
        "root": str(session.root), "device": state.device,
        "backend": session.core.backend,
        "identity": state.identity, "local_generation": state.generation,
        "dirty": dirty, "changes": changes, "conflicts": sorted(state.conflicts),
        "entry_conflicts": {rel: list(keys) for rel, keys in sorted(state.entry_conflicts.items())},
        "skipped": skipped, "links_at_top": links_at_top(skipped),
        "reachable": False, "remote_generation": None, "remote_ahead": False,
        "behind": False, "ahead": dirty > 0, "fleet_size": None, "error": None,
        "kept_in_backups": backups.kept_count(session.state_dir),
    }
    scope = session.scope
    _secret_warnings(session, state, changes, report)
    report["profiles"] = [{"name": name, "excluded": excluded}
                          for name, excluded in scope.profiles()]
    report["optional"] = scope.optional_items()
    try:
        # HEAD and its snapshot (the roster) are enough: the manifest is not needed here
        head = remote_module.read_verified_head(session, state)
        snapshot = None if head is None else session.repo.load_snapshot(head.snapshot)
    except RoamError as error:
        report["error"] = describe(error)  # "remote unreachable" only when it is the network
        return report
    report["reachable"] = True
    if head is not None and snapshot is not None:
        report["remote_generation"] = head.generation
        behind = head.generation != state.generation
        report["behind"] = report["remote_ahead"] = behind
        report["fleet_size"] = len(snapshot.roster)
        report["last_push_device"] = head.device
        report["remote_time"] = head.time
        # a device that has not pulled yet counts from the founding generation 0
        report["generations_ahead"] = max(0, head.generation - (state.generation or 0))
    return report

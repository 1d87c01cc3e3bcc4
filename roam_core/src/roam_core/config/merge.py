"""Merging a remote config projection into the local config.yaml, key by key.

The first pull (no accepted base) is a union in which the local value wins where both set a
key. Later pulls are three-way against the projection this device last ACCEPTED: a remote-only
change is taken, a local-only change stays (and publishes on the next push), a key changed
differently on both sides is a conflict kept local unless `overwrite_conflicts`. Mappings merge
key by key; anything else (scalars, lists) is one value. Keys that stay on this machine (host
keys, secrets, home paths) are never touched, and neither is a mapping that holds one.

The local file is edited in place through a round-trip parser, so its comments and key order
survive; keys new to it are placed after their predecessor in the remote's order.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from roam_core.config.projection import (
    KeyPath,
    KeyPattern,
    host_patterns,
    path_name,
    project,
    protected_paths,
)
from roam_core.config.yamlio import dump_plain, dump_round_trip, load_mapping, round_trip


class _Missing:
    """The absence of a key (distinct from a null value); copies stay the one sentinel."""

    def __repr__(self) -> str:
        return "MISSING"

    def __copy__(self) -> _Missing:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> _Missing:
        return self


MISSING: Any = _Missing()


@dataclass
class ConfigMerge:
    """The outcome of one config merge; `text` is the whole new local file.

    `remote_applied`: keys taken from the remote. `conflicts`: keys changed on both sides and
    kept local. `local_kept`: on a first pull, keys both sides set where the local value won.
    `overwritten`: conflicting keys where `overwrite_conflicts` took the remote value.
    `comments_kept`: False only when the round trip could not be faithful and the file was
    rewritten as plain YAML (the meaning is always exact).
    """

    text: str
    changed: bool
    remote_applied: list[str] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    local_kept: list[str] = field(default_factory=list)
    accepted_projection: str = ""
    comments_kept: bool = True
    overwritten: list[str] = field(default_factory=list)


def same(left: Any, right: Any) -> bool:
    """Equality that tells `1`, `1.0` and `true` apart and ignores mapping order."""
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        return left.keys() == right.keys() and all(same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right, strict=True))
    return bool(left == right)


def _get(node: Any, path: KeyPath) -> Any:
    for key in path:
        if not isinstance(node, dict) or key not in node:
            return MISSING
        node = node[key]
    return node


def _as_map(value: Any) -> dict[Any, Any]:
    return value if isinstance(value, dict) else {}


@dataclass
class _Edit:
    path: KeyPath
    value: Any  # MISSING deletes
    after: Any = MISSING  # the key a new key follows (remote order), if any


class _Merger:
    def __init__(self, local: dict[Any, Any], patterns: Sequence[KeyPattern],
                 overwrite: bool) -> None:
        self.local = local
        self.protected = protected_paths(local, patterns)
        self.overwrite = overwrite
        self.edits: list[_Edit] = []
        self.applied: list[KeyPath] = []
        self.conflicts: list[KeyPath] = []
        self.kept: list[KeyPath] = []
        self.overwritten: list[KeyPath] = []

    def is_protected(self, path: KeyPath) -> bool:
        return any(path[:size] in self.protected for size in range(1, len(path) + 1))

    def holds_protected(self, path: KeyPath) -> bool:
        return any(len(p) > len(path) and p[:len(path)] == path for p in self.protected)

    def take(self, path: KeyPath, value: Any, remote_parent: Any) -> None:
        after = MISSING
        if value is not MISSING and _get(self.local, path) is MISSING \
                and isinstance(remote_parent, dict):
            local_parent = _as_map(_get(self.local, path[:-1]))
            keys = list(remote_parent)
            for key in reversed(keys[:keys.index(path[-1])]):
                if key in local_parent:
                    after = key
                    break
        self.edits.append(_Edit(path, copy.deepcopy(value), after))
        self.applied.append(path)

    # -- three-way ---------------------------------------------------------------------

    def merge_maps(self, path: KeyPath, mine: Any, base: Any, theirs: Any) -> None:
        mine, base, theirs = _as_map(mine), _as_map(base), _as_map(theirs)
        local_node = _as_map(_get(self.local, path))
        keys = list(local_node) + [k for k in theirs if k not in local_node]
        keys += [k for k in base if k not in keys]
        for key in keys:
            self.merge_value((*path, key), mine.get(key, MISSING), base.get(key, MISSING),
                             theirs.get(key, MISSING), theirs)

    def merge_value(self, path: KeyPath, mine: Any, base: Any, theirs: Any,
                    remote_parent: Any) -> None:
        if self.is_protected(path) or same(theirs, base) or same(mine, theirs):
            return
        holds = self.holds_protected(path)
        if same(mine, base):
            if isinstance(mine, dict) and isinstance(theirs, dict):
                # edit leaf by leaf, so comments on the keys that stay keep their place
                self.merge_maps(path, mine, base, theirs)
            elif not holds:
                self.take(path, theirs, remote_parent)
            elif theirs is MISSING or isinstance(theirs, dict):
                self.merge_maps(path, mine, base, theirs)
            else:
                self.conflict(path, theirs, remote_parent, holds)
            return
        if isinstance(mine, dict) and isinstance(theirs, dict):
            self.merge_maps(path, mine, base, theirs)
            return
        self.conflict(path, theirs, remote_parent, holds)

    def conflict(self, path: KeyPath, theirs: Any, remote_parent: Any, holds: bool) -> None:
        if self.overwrite and not holds:
            self.take(path, theirs, remote_parent)
            self.overwritten.append(path)
        else:
            self.conflicts.append(path)

    # -- first pull --------------------------------------------------------------------

    def union_maps(self, path: KeyPath, mine: Any, theirs: Any) -> None:
        mine, theirs = _as_map(mine), _as_map(theirs)
        for key in theirs:
            self.union_value((*path, key), mine.get(key, MISSING), theirs[key], theirs)

    def union_value(self, path: KeyPath, mine: Any, theirs: Any, remote_parent: Any) -> None:
        if self.is_protected(path) or same(mine, theirs):
            return
        holds = self.holds_protected(path)
        if isinstance(theirs, dict) and (isinstance(mine, dict) or (mine is MISSING and holds)):
            self.union_maps(path, mine, theirs)
        elif mine is MISSING and not holds:
            self.take(path, theirs, remote_parent)
        elif self.overwrite and not holds:
            self.take(path, theirs, remote_parent)
            self.overwritten.append(path)
        else:
            self.kept.append(path)


def _apply_plain(data: dict[Any, Any], edits: Sequence[_Edit]) -> dict[Any, Any]:
    result = copy.deepcopy(data)
    for edit in edits:
        parent = _get(result, edit.path[:-1])
        key = edit.path[-1]
        if edit.value is MISSING:
            parent.pop(key, None)
        else:
            parent[key] = copy.deepcopy(edit.value)
    return result


class _Fallback(Exception):
    """The round-trip document cannot express the edit faithfully."""


def _apply_round_trip(document: Any, edits: Sequence[_Edit]) -> None:
    for edit in edits:
        parent: Any = document
        for key in edit.path[:-1]:
            if not isinstance(parent, dict) or key not in parent:
                raise _Fallback
            parent = parent[key]
        key = edit.path[-1]
        if not isinstance(parent, dict):
            raise _Fallback
        if edit.value is MISSING:
            if key in parent:
                del parent[key]
        elif key in parent:
            parent[key] = copy.deepcopy(edit.value)
        else:
            keys = list(parent)
            position = keys.index(edit.after) + 1 if edit.after in keys else len(keys)
            insert = getattr(parent, "insert", None)  # a round-trip map keeps key order
            if insert is None:
                raise _Fallback
            insert(position, key, copy.deepcopy(edit.value))


def _render(local_text: str, merged: dict[Any, Any], edits: Sequence[_Edit]) -> tuple[str, bool]:
    """The new local text, with comments kept when the round trip is faithful."""
    try:
        document, yaml = round_trip(local_text)
        if document is None:
            raise _Fallback
        _apply_round_trip(document, edits)
        text = dump_round_trip(yaml, document)
        if same(load_mapping(text, "merged config"), merged):
            return text, True
    except Exception:  # any round-trip quirk: fall back to plain, correct YAML
        pass
    return dump_plain(merged), False


def merge_config(local_text: str | None, base_projection: str | None, remote_projection: str,
                 *, overwrite_conflicts: bool = False,
                 host_keys: Sequence[str] = ()) -> ConfigMerge:
    """Merge a remote projection into the local config text (see the module docstring).

    `base_projection` None means this device never accepted a projection of this file (its
    first pull); `local_text` None means there is no local file yet. `accepted_projection` is
    what the engine stores as this device's new base once the result is installed: the
    remote projection, except that keys kept local as conflicts keep their old base value,
    so they are still conflicts on the next pull.
    """
    patterns = host_patterns(host_keys)
    # the remote as it travels (it becomes the accepted base, whose values this device carries
    # forward for its own host keys) and as this device may take it (its host keys stripped)
    received = project(load_mapping(remote_projection, "remote config projection",
                                    aliases=False), ())
    remote = project(received, patterns)
    if local_text is None:
        text = dump_plain(remote)
        return ConfigMerge(text, True, [path_name((key,)) for key in remote],
                           accepted_projection=dump_plain(received))
    local = load_mapping(local_text, "config.yaml")
    merger = _Merger(local, patterns, overwrite_conflicts)
    mine = project(local, patterns)
    accepted = copy.deepcopy(received)
    if base_projection is None:
        merger.union_maps((), mine, remote)
    else:
        base_received = load_mapping(base_projection, "accepted config projection", aliases=False)
        base = project(base_received, patterns)
        merger.merge_maps((), mine, base, remote)
        for path in merger.conflicts:  # kept local: still a conflict on the next pull
            _restore(accepted, base_received, path)
    result = ConfigMerge(local_text, False,
                         [path_name(p) for p in merger.applied if p not in merger.overwritten],
                         [path_name(p) for p in merger.conflicts],
                         [path_name(p) for p in merger.kept], dump_plain(accepted),
                         overwritten=[path_name(p) for p in merger.overwritten])
    if merger.edits:
        merged = _apply_plain(local, merger.edits)
        result.text, result.comments_kept = _render(local_text, merged, merger.edits)
        result.changed = result.text != local_text
    return result


def _restore(accepted: dict[Any, Any], base: dict[Any, Any], path: KeyPath) -> None:
    """Put the base's value (or absence) back at `path` in the accepted projection."""
    value = _get(base, path)
    parent: Any = accepted
    for key in path[:-1]:
        if not isinstance(parent.get(key), dict):
            parent[key] = {}
        parent = parent[key]
    if value is MISSING:
        parent.pop(path[-1], None)
    else:
        parent[path[-1]] = copy.deepcopy(value)

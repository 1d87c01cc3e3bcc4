"""What a fleet should look like: every pushed generation, and what each device last agreed to.

The model is written from roam's documented behaviour (docs/user-guide.md,
docs/decisions.md), not from its code. It predicts the manifest a push publishes (narrow
devices carry forward what they cannot see), and, path by path, what a pull leaves in a home:
untouched local changes, taken remote changes, conflicts kept local (or overwritten on
request), memory files merged entry by entry and config.yaml merged key by key with host keys
and secrets always the device's own.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import yaml

CONFIG = "config.yaml"
#: Each device's own plugin inventory: rewritten by every push, never installed by a pull.
INVENTORY = "roam/installed-plugins.json"
MEMORY = ("memories/MEMORY.md", "memories/USER.md")
DELIMITER = "\n§\n"
#: Keys of the campaign's config.yaml that never leave a device (host keys and secrets).
LOCAL_KEY_PREFIXES = ("terminal.", "display.interface", "plugins.", "providers.", "paths.")
MISSING = object()

Files = dict[str, bytes]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """A YAML mapping as dotted leaf keys (lists become tuples)."""
    flat: dict[str, Any] = {}
    if isinstance(value, dict):
        for key, child in value.items():
            flat.update(flatten(child, f"{prefix}{key}."))
        return flat
    flat[prefix.rstrip(".")] = tuple(value) if isinstance(value, list) else value
    return flat


def config_keys(text: str | bytes | None) -> dict[str, Any]:
    if text is None:
        return {}
    raw = text.decode() if isinstance(text, bytes) else text
    return flatten(yaml.safe_load(raw) or {})


def is_local_key(key: str) -> bool:
    return key.startswith(LOCAL_KEY_PREFIXES) or key in ("terminal", "display.interface")


def shared_keys(flat: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in flat.items() if not is_local_key(k)}


def local_keys(flat: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in flat.items() if is_local_key(k)}


def entries(data: bytes | None) -> list[str]:
    if data is None:
        return []
    return [e for e in (part.strip() for part in data.decode().split(DELIMITER)) if e]


@dataclass
class DeviceModel:
    """What one device last agreed with the store."""

    name: str
    narrow: bool = False
    local_rules: tuple[str, ...] = ()
    synced: int | None = None
    base: Files = field(default_factory=dict)
    conflicts: set[str] = field(default_factory=set)
    #: remote paths the rules hid at the last pull: never on this disk, so never deleted here
    unseen: set[str] = field(default_factory=set)
    accepted: dict[str, Any] | None = None  # None: never agreed on a config projection
    host: dict[str, Any] = field(default_factory=dict)
    #: memory files whose entries a pull kept local: open until pushed or overwritten (a
    #: later pull with the remote unchanged takes the remote file whole when overwriting)
    entry_open: set[str] = field(default_factory=set)

    def visible(self, rel: str) -> bool:
        """Whether this device shares `rel` (the campaign only uses shareable pool paths)."""
        return not any(rel.startswith(prefix) for prefix in self.local_rules)


@dataclass
class Expectation:
    """What a pull should leave: exact bytes per path (None: absent), or a merge to check."""

    files: dict[str, bytes | None] = field(default_factory=dict)
    merges: dict[str, tuple[bytes | None, bytes | None, bytes]] = field(default_factory=dict)
    config: dict[str, Any] | None = None
    conflicts: set[str] = field(default_factory=set)
    kept: set[str] = field(default_factory=set)
    accepted: dict[str, Any] | None = None
    #: config keys changed on both sides and kept local (each makes the pull exit 2)
    config_conflicts: int = 0


class FleetModel:
    """Every generation the fleet published, by number, as path → bytes."""

    def __init__(self) -> None:
        self.versions: dict[int, Files] = {0: {}}
        self.head = 0
        self.pushed: dict[str, set[bytes]] = {}

    def publish(self, generation: int, files: Files) -> None:
        assert generation == self.head + 1, (generation, self.head)
        self.versions[generation] = dict(files)
        self.head = generation
        for rel, data in files.items():
            self.pushed.setdefault(rel, set()).add(data)

    # -- push ------------------------------------------------------------------------------

    def predict_push(self, dev: DeviceModel, local: Files, projection: bytes | None,
                     forced: bool) -> Files:
        """The manifest a push publishes: what the device sees, plus carried-forward entries."""
        reference = self.versions[self.head] if forced else dev.base
        new: Files = {rel: data for rel, data in reference.items()
                      if not dev.visible(rel) or (rel in dev.unseen and rel not in local)}
        for rel, data in local.items():
            if rel == CONFIG:
                if projection is not None:
                    new[rel] = projection
            elif dev.visible(rel):
                new[rel] = data
        return new

    def after_push(self, dev: DeviceModel, generation: int, files: Files,
                   accepted: dict[str, Any]) -> None:
        self.publish(generation, files)
        dev.synced = generation
        dev.base = dict(files)
        dev.conflicts.clear()
        dev.entry_open.clear()
        dev.accepted = dict(accepted) if CONFIG in files else {}

    # -- pull ------------------------------------------------------------------------------

    def predict_pull(self, dev: DeviceModel, local: Files, overwrite: bool) -> Expectation:
        remote = self.versions[self.head]
        first = dev.synced is None
        base = {} if first else dev.base
        expect = Expectation(conflicts=set(dev.conflicts))
        for rel in sorted(set(remote) | set(base) | set(local)):
            if not dev.visible(rel) or rel == INVENTORY:
                continue
            if rel == CONFIG:
                if rel in remote:
                    expect.config, expect.accepted = merge_config(
                        config_keys(local.get(rel)), dev.accepted, config_keys(remote[rel]),
                        overwrite)
                    expect.config_conflicts = config_conflicts(
                        config_keys(local.get(rel)), dev.accepted, config_keys(remote[rel]),
                        overwrite)
                continue
            r, b, loc = remote.get(rel), base.get(rel), local.get(rel)
            if rel in dev.unseen and loc is None:
                b = None  # the rules hid it until now: absent here is not a deletion
            if loc == r:
                expect.files[rel] = loc
                expect.conflicts.discard(rel)
            elif rel in dev.conflicts:
                self._conflict(expect, rel, r, loc, overwrite)
            elif rel in dev.entry_open and not first and r == b and loc is not None:
                expect.files[rel] = r if overwrite else loc
            elif (r is None and b is None) or (not first and r == b):
                expect.files[rel] = loc  # a local change (or addition), published by a push
            elif (not first and loc == b) or (loc is None and b is None):
                expect.files[rel] = r
                expect.conflicts.discard(rel)
            elif rel in MEMORY and r is not None and loc is not None:
                expect.merges[rel] = (None if first else b, loc, r)
                expect.conflicts.discard(rel)
            else:
                self._conflict(expect, rel, r, loc, overwrite)
        return expect

    @staticmethod
    def _conflict(expect: Expectation, rel: str, r: bytes | None, loc: bytes | None,
                  overwrite: bool) -> None:
        if overwrite:
            expect.files[rel] = r
            expect.conflicts.discard(rel)
        else:
            expect.files[rel] = loc
            expect.conflicts.add(rel)
            expect.kept.add(rel)

    def after_pull(self, dev: DeviceModel, expect: Expectation) -> None:
        dev.synced = self.head
        dev.base = dict(self.versions[self.head])
        dev.unseen = {rel for rel in dev.base if not dev.visible(rel)}
        dev.conflicts = set(expect.conflicts)
        if expect.accepted is not None:
            dev.accepted = expect.accepted


def config_conflicts(local: dict[str, Any], accepted: dict[str, Any] | None,
                     remote: dict[str, Any], overwrite: bool) -> int:
    """How many shared keys `merge_config` keeps local as conflicts (a first merge has none)."""
    if accepted is None or overwrite:
        return 0
    mine = shared_keys(local)
    count = 0
    for key in set(mine) | set(accepted) | set(remote):
        loc, base, rem = (mine.get(key, MISSING), accepted.get(key, MISSING),
                          remote.get(key, MISSING))
        count += loc != rem and rem != base and loc != base  # as merge_config decides
    return count


def merge_config(local: dict[str, Any], accepted: dict[str, Any] | None,
                 remote: dict[str, Any], overwrite: bool) -> tuple[dict[str, Any], dict[str, Any]]:
    """Key-by-key merge of the shared keys; returns (expected shared keys, new accepted).

    The first merge (nothing accepted yet) is a union: local keys stay, remote-only keys are
    added, a key set differently on both sides keeps the local value unless `overwrite`.
    Later merges are three-way against the accepted projection: a key changed only remotely
    is taken, changed only locally is kept, changed on both sides is a conflict, kept local
    (its accepted value stays the old one, so it stays a conflict) unless `overwrite`.
    """
    mine = shared_keys(local)
    merged: dict[str, Any] = {}
    if accepted is None:
        merged = dict(mine)
        for key, value in remote.items():
            if key not in mine or overwrite:
                merged[key] = value
        return merged, dict(remote)
    new_accepted: dict[str, Any] = {}
    for key in set(mine) | set(accepted) | set(remote):
        loc, base, rem = (mine.get(key, MISSING), accepted.get(key, MISSING),
                          remote.get(key, MISSING))
        if loc == rem or rem == base:
            value, agreed = loc, rem
        elif loc == base or overwrite:
            value, agreed = rem, rem
        else:
            value, agreed = loc, base
        if value is not MISSING:
            merged[key] = value
        if agreed is not MISSING:
            new_accepted[key] = agreed
    return merged, new_accepted

"""The device's own record of the fleet: `state.json` and the rollback floor `floor.json`.

Both live under `<root>/roam/` and are replaced atomically, so a full disk or a crash leaves
the previous version intact. The floor is keyed by the backend's identity and survives the
deletion of `state.json`: a store can never be rolled back below what this device verified.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from roam_core.engine.fs import ensure_private_dir, write_atomic
from roam_core.errors import ConfigError, IntegrityError
from roam_core.store.manifest import FileEntry, Manifest

STATE_FILE = "state.json"
FLOOR_FILE = "floor.json"


@dataclass
class LocalState:
    """What this device last agreed with the store."""

    device: str
    store: str
    identity: str
    generation: int | None = None
    snapshot: str | None = None
    base: dict[str, dict[str, Any]] = field(default_factory=dict)
    projections: dict[str, str] = field(default_factory=dict)
    conflicts: dict[str, str] = field(default_factory=dict)
    last_push: int | None = None
    last_pull: int | None = None
    #: base paths this device's rules kept it from receiving (never on this disk)
    unseen: list[str] = field(default_factory=list)
    #: the stamp of the install that wrote this state: a journal naming it is complete
    install: str | None = None

    def base_manifest(self) -> Manifest:
        return {path: FileEntry.from_json(path, data, "state.json")
                for path, data in self.base.items()}

    def set_base(self, manifest: Manifest) -> None:
        self.base = {path: entry.as_json() for path, entry in sorted(manifest.items())}


def load_state(state_dir: Path) -> LocalState | None:
    path = state_dir / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path} is unreadable ({error}); move it aside, run roam init") from None
    try:
        return LocalState(**data)
    except TypeError:
        raise ConfigError(f"{path} is not roam state; move it aside, run roam init") from None


def save_state(state_dir: Path, state: LocalState) -> None:
    ensure_private_dir(state_dir)
    # a shallow dict and compact JSON: asdict's deep copy and the pure-Python indenting
    # encoder took seconds on a home of 20,000 files
    data = {item.name: getattr(state, item.name) for item in fields(state)}
    write_atomic(state_dir / STATE_FILE, json.dumps(data, separators=(",", ":")).encode())


def load_floor(state_dir: Path, identity: str) -> int:
    try:
        data = json.loads((state_dir / FLOOR_FILE).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return 0
    except (OSError, ValueError):
        raise IntegrityError(f"{state_dir / FLOOR_FILE} is damaged; refusing to guess") from None
    return int(data.get(identity, 0))


def raise_floor(state_dir: Path, identity: str, generation: int) -> None:
    """Record that `generation` was verified on `identity`; the floor never goes down."""
    path = state_dir / FLOOR_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        data = {}
    if generation > int(data.get(identity, -1)):
        data[identity] = generation
        ensure_private_dir(state_dir)
        write_atomic(path, json.dumps(data, indent=1, sort_keys=True).encode())

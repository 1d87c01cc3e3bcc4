"""The device's own record of the fleet: `state.json` and the rollback floor `floor.json`.

Both live under `<root>/roam/` and are replaced atomically, so a full disk or a crash leaves
the previous version intact. The floor is keyed by the store id sealed inside HEAD (the
backend's identity is kept beside it as a hint only), so one store reached under several
names has one floor; it survives the deletion of `state.json`, and `state.json` alone holds
it as well: a store can never be rolled back below what this device verified.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from roam_core.errors import ConfigError, IntegrityError
from roam_core.fs import ensure_private_dir, write_atomic
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
    #: merged files (configs, memories) -> the keys or entries kept local as conflicts
    entry_conflicts: dict[str, list[str]] = field(default_factory=dict)
    last_push: int | None = None
    last_pull: int | None = None
    #: base paths this device's rules kept it from receiving (never on this disk)
    unseen: list[str] = field(default_factory=list)
    #: the stamp of the install that wrote this state: a journal naming it is complete
    install: str | None = None
    #: this device's random id (chosen at init); `device` is only its name
    device_id: str | None = None

    @property
    def id(self) -> str:
        """The device id; a state written before ids keeps its name as its id."""
        return self.device_id or self.device

    def base_manifest(self) -> Manifest:
        return {path: FileEntry.from_json(path, data, "state.json")
                for path, data in self.base.items()}

    def set_base(self, manifest: Manifest) -> None:
        self.base = {path: entry.as_json() for path, entry in sorted(manifest.items())}


#: What each field of `state.json` may hold; anything else is a damaged file, not a default.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "device": (str,), "store": (str,), "identity": (str,), "generation": (int, type(None)),
    "snapshot": (str, type(None)), "base": (dict,), "projections": (dict,),
    "conflicts": (dict,), "entry_conflicts": (dict,), "last_push": (int, type(None)),
    "last_pull": (int, type(None)),
    "unseen": (list,), "install": (str, type(None)), "device_id": (str, type(None)),
}
RECOVERY_DOC = "docs/troubleshooting.md"


def load_state(state_dir: Path) -> LocalState | None:
    path = state_dir / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        raise ConfigError(f"{path} is unreadable ({error}); move it aside, run roam init "
                          f"(see {RECOVERY_DOC})") from None
    problem = _state_problem(data)
    if problem is not None:
        raise ConfigError(f"{path} is not roam state ({problem}); move it aside, run roam "
                          f"init (see {RECOVERY_DOC})")
    return LocalState(**data)


def _state_problem(data: object) -> str | None:
    """What makes `data` unusable as `LocalState`, or None when every field is sound."""
    if not isinstance(data, dict):
        return "not a JSON object"
    for name in ("device", "store", "identity"):
        if name not in data:
            return f"no {name}"
    for name, value in data.items():
        allowed = _FIELD_TYPES.get(name)
        if allowed is None:
            return f"unknown field {name!r}"
        if isinstance(value, bool) or not isinstance(value, allowed):
            return f"{name} is {type(value).__name__}"
    return None


def save_state(state_dir: Path, state: LocalState) -> None:
    ensure_private_dir(state_dir)
    # a shallow dict and compact JSON: asdict's deep copy and the pure-Python indenting
    # encoder took seconds on a home of 20,000 files
    data = {item.name: getattr(state, item.name) for item in fields(state)}
    write_atomic(state_dir / STATE_FILE, json.dumps(data, separators=(",", ":")).encode())


def load_floor(state_dir: Path, store: str, identity: str,
               state: LocalState | None = None) -> int:
    """The lowest generation the store `store` may serve to this device.

    The floor is keyed by the store id sealed inside HEAD, so every path, URL or alias that
    reaches the store shares it. `state.json`'s generation for the same store counts too
    (the higher wins), and so does an entry an earlier roam keyed by location (`identity`).
    """
    stores, locations = _read_floor(state_dir)
    floor = max(stores.get(store, {}).get("generation", 0), locations.get(identity, 0))
    if state is not None and state.store == store and state.generation is not None:
        floor = max(floor, state.generation)
    return floor


def raise_floor(state_dir: Path, store: str, identity: str, generation: int) -> None:
    """Record that `generation` of `store` was verified (reached as `identity`); never lowers."""
    stores, locations = _read_floor(state_dir)
    entry = stores.get(store, {})
    if generation <= entry.get("generation", -1) and entry.get("seen_as") == identity:
        return
    stores[store] = {"generation": max(generation, entry.get("generation", 0)),
                     "seen_as": identity}
    # an entry an earlier roam keyed by this location is now held by the store's own entry
    if locations.get(identity, 0) <= stores[store]["generation"]:
        locations.pop(identity, None)
    data: dict[str, Any] = {"v": 2, "stores": stores}
    if locations:
        data["locations"] = locations
    ensure_private_dir(state_dir)
    write_atomic(state_dir / FLOOR_FILE, json.dumps(data, indent=1, sort_keys=True).encode())


def _read_floor(state_dir: Path) -> tuple[dict[str, dict[str, Any]], dict[str, int]]:
    """floor.json as (store id → {generation, seen_as}, legacy location → generation).

    A damaged file is an error, never an empty floor: guessing would silently drop the
    rollback protection it exists for.
    """
    path = state_dir / FLOOR_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}, {}
    except (OSError, ValueError) as error:
        raise _damaged_floor(path, type(error).__name__) from None
    if not isinstance(data, dict):
        raise _damaged_floor(path, "not a JSON object")
    if data.get("v") != 2:  # written by an earlier roam: location → generation
        data = {"v": 2, "stores": {}, "locations": data}
    stores, locations = data.get("stores"), data.get("locations", {})
    if not isinstance(stores, dict) or not isinstance(locations, dict):
        raise _damaged_floor(path, "unknown layout")
    for value in locations.values():
        if not _generation(value):
            raise _damaged_floor(path, f"{value!r} is not a generation")
    for entry in stores.values():
        if not isinstance(entry, dict) or not _generation(entry.get("generation")) \
                or not isinstance(entry.get("seen_as", ""), str):
            raise _damaged_floor(path, f"{entry!r} is not a floor entry")
    return stores, locations


def _generation(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _damaged_floor(path: Path, why: str) -> IntegrityError:
    return IntegrityError(
        f"{path} is damaged ({why}): the rollback floor is unknown, so nothing is trusted; "
        f"restore the file from a backup, or move it aside to trust the store's HEAD as on "
        f"first use (see {RECOVERY_DOC})")

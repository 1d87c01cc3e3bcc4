"""The device's own record of the fleet: `state.db` and the rollback floor `floor.json`.

The state lives in SQLite (`roam_core.engine.statedb`): a save writes only the rows that
changed, in one transaction, so a full disk or a crash leaves the previous version intact;
`floor.json` is replaced atomically. The floor is keyed by the store id sealed inside HEAD
(the backend's identity is kept beside it as a hint only), so one store reached under several
names has one floor; it survives the deletion of `state.db`, and the state alone holds it as
well: a store can never be rolled back below what this device verified.
"""

from __future__ import annotations

import copy
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from roam_core.engine import statedb
from roam_core.errors import ConfigError, IntegrityError
from roam_core.fs import ensure_private_dir, write_atomic
from roam_core.store.manifest import Manifest

STATE_FILE = statedb.STATE_DB
FLOOR_FILE = "floor.json"


@dataclass
class LocalState:
    """What this device last agreed with the store.

    The base (every path of the last synced generation) is read from the database only when
    asked for (`base_manifest`): a status compares digests straight from the rows instead.
    """

    device: str
    store: str
    identity: str
    generation: int | None = None
    snapshot: str | None = None
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
    #: where this state was read from or last saved to, and the save count seen there
    _dir: Path | None = field(default=None, init=False, repr=False, compare=False)
    _serial: int = field(default=0, init=False, repr=False, compare=False)
    #: the base as set or read (None: not read yet), and as the database holds it
    _base: Manifest | None = field(default=None, init=False, repr=False, compare=False)
    _stored: Manifest | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def id(self) -> str:
        """The device id; a state written before ids keeps its name as its id."""
        return self.device_id or self.device

    @property
    def base(self) -> Manifest:
        return self.base_manifest()

    def base_manifest(self) -> Manifest:
        """The last synced generation's entries, read from the database on first use."""
        if self._base is None:
            self._base = self._stored = self._read_base()
        return self._base

    def set_base(self, manifest: Manifest) -> None:
        self._base = manifest

    def take_base(self) -> Manifest:
        """The base, let go of here: a caller replacing every entry may empty it as it goes.

        `set_base` the replacement; `save_state` then compares it with the database's rows
        (streamed) instead of a copy held in memory.
        """
        base = self.base_manifest()
        self._base = self._stored = None
        return base

    def iter_base_digests(self) -> Iterator[tuple[str, str, int]]:
        """(path, sha256, mode) of each base path in path order, one at a time.

        Straight from the rows, without an entry (or a table) per path: a status merges
        them with the walk, which comes in the same order. SQLite orders text by its UTF-8
        bytes, which is the order of Python's `str` comparison.
        """
        if self._base is not None or self._dir is None:
            for rel in sorted(self.base):
                entry = self.base[rel]
                yield rel, entry.sha256, entry.mode
            return
        with self._reading() as conn:
            yield from statedb.iter_digests(conn)

    def copy(self) -> LocalState:
        """A copy to change: its own small fields, the same (never mutated) base entries."""
        other = copy.copy(self)
        for name in ("projections", "conflicts", "entry_conflicts", "unseen"):
            setattr(other, name, copy.deepcopy(getattr(self, name)))
        return other

    def _read_base(self) -> Manifest:
        if self._dir is None:
            return {}
        with self._reading() as conn:
            return {entry.path: entry for entry in statedb.iter_base(conn)}

    def _reading(self) -> Any:
        return _Reading(self)


class StateMoved(ConfigError):
    """The state was saved again (by a push or pull) while this command was reading it."""


class _Reading:
    """A read transaction on the state a `LocalState` was loaded from, checked unchanged."""

    def __init__(self, state: LocalState) -> None:
        self.state = state
        self.conn: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        assert self.state._dir is not None
        path = self.state._dir / statedb.STATE_DB
        try:
            self.conn = statedb.open_state(self.state._dir)
            if self.conn is None:
                raise ConfigError(f"{path} vanished while roam was using it; run the command "
                                  "again")
            self.conn.execute("BEGIN")
            if statedb.serial(self.conn) != self.state._serial:
                raise StateMoved(f"{path} changed while roam was using it; run the command "
                                  "again")
        except sqlite3.Error as error:
            self.__exit__()
            raise statedb.damaged(path, error) from None
        except BaseException:
            self.__exit__()
            raise
        return self.conn

    def __exit__(self, *exc: object) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


#: What each field of the state may hold; anything else is a damaged file, not a default.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "device": (str,), "store": (str,), "identity": (str,), "generation": (int, type(None)),
    "snapshot": (str, type(None)), "projections": (dict,),
    "conflicts": (dict,), "entry_conflicts": (dict,), "last_push": (int, type(None)),
    "last_pull": (int, type(None)),
    "unseen": (list,), "install": (str, type(None)), "device_id": (str, type(None)),
}
RECOVERY_DOC = statedb.RECOVERY_DOC


def load_state(state_dir: Path) -> LocalState | None:
    path = state_dir / STATE_FILE
    try:
        conn = statedb.open_state(state_dir)
        if conn is None:
            return None
        try:
            meta = statedb.read_meta(conn)
        finally:
            conn.close()
    except sqlite3.Error as error:
        raise statedb.damaged(path, error) from None
    if not meta:
        return None  # made, but never saved to: a crash before the first commit
    try:
        number = int(meta.pop("serial", "0"))
        data = {name: json.loads(value) for name, value in meta.items()}
    except ValueError as error:
        raise statedb.damaged(path, error) from None
    check_fields(path, data)
    state = LocalState(**data)
    state._dir, state._serial = state_dir, number
    return state


def check_fields(path: Path, data: dict[str, Any]) -> None:
    problem = _state_problem(data)
    if problem is not None:
        raise ConfigError(f"{path} is not roam state ({problem}); move it aside, run roam "
                          f"init (see {RECOVERY_DOC})")


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
    """Write what changed since the state was read, in one transaction (the commit point).

    A state read from this folder and unchanged since (its `serial`) is compared with the
    base it read; any other is compared row by row with what is stored.
    """
    from roam_core.engine.journal import kill_point  # the journal imports this module

    meta = {item.name: json.dumps(getattr(state, item.name), separators=(",", ":"))
            for item in fields(state) if item.init}
    ours = state._dir == state_dir
    base = state._base if state._base is not None or ours else {}
    path = state_dir / STATE_FILE
    try:
        conn = statedb.create(state_dir)
    except sqlite3.Error as error:
        raise statedb.damaged(path, error) from None
    try:
        conn.execute("BEGIN IMMEDIATE")
        number = statedb.serial(conn)
        stored = state._stored if ours and number == state._serial else None
        if statedb.write_changes(conn, meta, base, stored):
            number += 1
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('serial', ?)", (str(number),))
        kill_point("state:written")
        statedb.commit(conn)
    except sqlite3.Error as error:
        raise OSError(f"{path}: {error}") from None
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.close()
    state._dir, state._serial = state_dir, number
    if base is not None:
        state._base = state._stored = base


@dataclass(frozen=True)
class Floors:
    """`floor.json` as read at one moment: read it, and the state, *before* HEAD.

    A floor is only ever raised to a generation the store served or accepted, so one read
    before HEAD is a true lower bound for that HEAD. Read after, it may hold a generation
    that another process of this home (a push beside an unlocked `status`, `history` or the
    service's check) published once this reader had read HEAD: no rollback, yet refused as
    one (docs/decisions.md, "The floor is read before HEAD").
    """

    stores: dict[str, dict[str, Any]]
    locations: dict[str, int]

    def of(self, store: str, identity: str, state: LocalState | None = None) -> int:
        """The lowest generation the store `store` may serve to this device.

        The floor is keyed by the store id sealed inside HEAD, so every path, URL or alias
        that reaches the store shares it. `state.json`'s generation for the same store counts
        too (the higher wins), and so does an entry an earlier roam keyed by location
        (`identity`).
        """
        floor = max(self.stores.get(store, {}).get("generation", 0),
                    self.locations.get(identity, 0))
        if state is not None and state.store == store and state.generation is not None:
            floor = max(floor, state.generation)
        return floor


def read_floors(state_dir: Path) -> Floors:
    """This device's floors as they are now (see `Floors` for when to read them)."""
    return Floors(*_read_floor(state_dir))


def load_floor(state_dir: Path, store: str, identity: str,
               state: LocalState | None = None) -> int:
    """The lowest generation the store `store` may serve to this device (`Floors.of`)."""
    return read_floors(state_dir).of(store, identity, state)


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

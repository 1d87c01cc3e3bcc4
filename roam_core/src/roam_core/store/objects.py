"""Object kinds, their keys in the backend, and the HEAD and snapshot records."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from roam_core import boundedjson
from roam_core.errors import IntegrityError

CHUNK_SIZE = 4 * 1024 * 1024
PACK_TARGET = 16 * 1024 * 1024
HEAD_REF = "HEAD"
#: The second ref: the deleters' lease and the marks pushers honour (engine/lease.py).
LEASE_REF = "LEASE"
#: The store format this roam founds stores with and can read: 1 (a tree is an object of its
#: own) or 2 (trees are sealed into tree packs, located by their index). HEAD carries it.
STORE_FORMAT = 2
STORE_FORMATS = (1, 2)


def canonical(value: Any) -> bytes:
    """The one JSON encoding whose bytes are hashed: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def parse_json(raw: bytes, what: str, versions: tuple[int, ...] = (1,)) -> dict[str, Any]:
    try:
        value = boundedjson.loads(raw, what)
    except (ValueError, UnicodeDecodeError):  # JSONLimitError is a ValueError
        raise IntegrityError(f"integrity error: {what} is not valid JSON") from None
    if not isinstance(value, dict) or value.get("v") not in versions \
            or type(value.get("v")) is not int:
        raise IntegrityError(f"integrity error: {what} has an unknown layout")
    return value


def pack_key(pack_id: str) -> str:
    return f"packs/{pack_id[:2]}/{pack_id}"


def index_key(pack_id: str) -> str:
    return f"index/{pack_id}"


def void_key(void_id: str) -> str:
    return f"voids/{void_id}"


def forget_key(record_id: str) -> str:
    return f"forgets/{record_id}"


def mark_key(mark_id: str) -> str:
    return f"marks/{mark_id}"


def tree_key(tree_id: str) -> str:
    return f"trees/{tree_id[:2]}/{tree_id}"


def snapshot_key(snapshot_id: str) -> str:
    return f"snapshots/{snapshot_id}"


@dataclass(frozen=True)
class Head:
    """The one mutable record: which snapshot is generation N of which store."""

    generation: int
    snapshot: str
    store: str
    device: str
    time: str
    version: str | None = None
    #: the store's format version (`STORE_FORMATS`), sealed in HEAD's header and its "v"
    format: int = 1

    def as_json(self) -> dict[str, Any]:
        return {"v": self.format, "generation": self.generation, "snapshot": self.snapshot,
                "store": self.store, "device": self.device, "time": self.time}

    @classmethod
    def from_json(cls, data: dict[str, Any], version: str | None) -> Head:
        try:
            head = cls(int(data["generation"]), str(data["snapshot"]), str(data["store"]),
                       str(data["device"]), str(data["time"]), version, int(data["v"]))
        except (KeyError, TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
            raise IntegrityError("integrity error: HEAD is malformed") from None
        if head.generation < 0:
            raise IntegrityError("integrity error: HEAD is malformed")
        return head


@dataclass(frozen=True)
class Snapshot:
    """One generation: its parent, who made it, the fleet roster and the root tree."""

    generation: int
    parent: str | None
    device: str
    created: str
    root: str
    roam_version: str
    hermes_version: str | None = None
    roster: dict[str, dict[str, Any]] = field(default_factory=dict)
    files: int = 0
    bytes: int = 0
    #: the pushing device's id; `device` is its name (snapshots before ids have no id)
    device_id: str | None = None

    def as_json(self) -> dict[str, Any]:
        found = {"v": 1, "generation": self.generation, "parent": self.parent,
                 "device": self.device, "created": self.created, "root": self.root,
                 "roam_version": self.roam_version, "hermes_version": self.hermes_version,
                 "roster": self.roster, "files": self.files, "bytes": self.bytes}
        if self.device_id is not None:
            found["device_id"] = self.device_id
        return found

    @classmethod
    def from_json(cls, data: dict[str, Any], what: str) -> Snapshot:
        try:
            roster = data.get("roster") or {}
            if not isinstance(roster, dict):
                raise TypeError
            return cls(int(data["generation"]), data.get("parent"), str(data["device"]),
                       str(data["created"]), str(data["root"]), str(data["roam_version"]),
                       data.get("hermes_version"), {str(k): dict(v) for k, v in roster.items()},
                       int(data.get("files", 0)), int(data.get("bytes", 0)),
                       None if data.get("device_id") is None else str(data["device_id"]))
        except (KeyError, TypeError, ValueError, OverflowError):  # OverflowError: int(inf)
            raise IntegrityError(f"integrity error: {what} is malformed") from None

"""The fleet roster: each device's random id, its name (a label, unique in the fleet), its row.

The roster travels in every snapshot, keyed by device id. A row carries the device's `name`;
a store written before ids keyed the roster by name and had no `name` field, so such a row's
key is both its id and its name — and a device whose state.json predates ids keeps its name as
its id. Nothing has to be rewritten for an old store to keep working (docs/format.md).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from typing import Any

from roam_core.errors import UserError

Roster = dict[str, dict[str, Any]]
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_NAME = 64


def new_device_id() -> str:
    """A random id, chosen once at `roam init`: names can repeat across machines, ids cannot."""
    return secrets.token_hex(8)


def name_of(roster: Roster, device_id: str) -> str:
    """The label a roster row shows (a legacy row's key is its name)."""
    row = roster.get(device_id) or {}
    return str(row.get("name") or device_id)


def names(roster: Roster) -> dict[str, str]:
    """Device id → name for every row."""
    return {device_id: name_of(roster, device_id) for device_id in roster}


def holder(roster: Roster, name: str, device_id: str | None) -> str | None:
    """The id of another device that already carries `name`, if any."""
    for other, label in names(roster).items():
        if label == name and other != device_id:
            return other
    return None


def check_name(name: str) -> str:
    """A name must be one short printable line; anything else is refused."""
    cleaned = name.strip()
    if not cleaned or len(cleaned) > MAX_NAME or _CONTROL.search(cleaned):
        raise UserError(f"device name {name!r} must be 1 to {MAX_NAME} printable characters")
    return cleaned


def taken(name: str, other: str, hint: str) -> UserError:
    return UserError(f"device name {name!r} is already taken by another device of this fleet "
                     f"(id {other}); {hint}")


def choose_name(roster: Roster, device_id: str, wanted: str, *, explicit: bool) -> str:
    """`wanted` when free; a taken explicit name is refused, a taken host name gets a suffix."""
    name = check_name(wanted)
    other = holder(roster, name, device_id)
    if other is None:
        return name
    if explicit:
        raise taken(name, other, "choose another with roam init --name NAME")
    for size in (4, 6, 8, 16):
        candidate = f"{name[:MAX_NAME - size - 1]}-{device_id[:size]}"
        if holder(roster, candidate, device_id) is None:
            return candidate
    raise taken(name, other, "choose another with roam init --name NAME")


def find(roster: Roster, word: str) -> str:
    """The id of the device named `word` or with id `word`; a one-line error otherwise."""
    if word in roster:
        return word
    matches = [device_id for device_id, label in names(roster).items() if label == word]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(sorted(names(roster).values())) or "none"
    raise UserError(f"no device {word!r} in this fleet's roster (devices: {known})")


def with_row(roster: Roster, device_id: str, name: str, row: dict[str, Any]) -> Roster:
    """A copy of the roster with this device's row replaced (its name checked unique)."""
    other = holder(roster, name, device_id)
    if other is not None:
        raise taken(name, other, "rename this device: roam devices rename NEW_NAME")
    updated = {key: dict(value) for key, value in roster.items()}
    updated[device_id] = {"name": name, **row}
    return updated


Mutation = Callable[[Roster], Roster]

"""The Hermes version guard: never install what a newer Hermes (major/minor) wrote.

Every generation records the pushing device's Hermes version and every roster row its
device's. A generation pushed with a newer Hermes major or minor than this device runs may
hold config keys and file layouts this Hermes does not understand, so `pull --apply` refuses
it unless `allow_newer_hermes: true`; a newer patch release proceeds. A device without Hermes
(or a generation without a version) has nothing to compare, so nothing is refused.
"""

from __future__ import annotations

import re

from roam_core.errors import UserError
from roam_core.settings import CoreSettings
from roam_core.store.objects import Snapshot

#: Hermes's own updater (`hermes update`), what Hermes itself recommends by default
UPGRADE = "hermes update"
_VERSION = re.compile(r"^\s*v?(\d+)\.(\d+)(?:\.(\d+))?")


def parse(version: str | None) -> tuple[int, int, int] | None:
    """(major, minor, patch) of a version string; None when it does not start like one."""
    found = _VERSION.match(version or "")
    if found is None:
        return None
    return int(found.group(1)), int(found.group(2)), int(found.group(3) or 0)


def newer_minor(theirs: str | None, ours: str | None) -> bool:
    """Whether `theirs` is a newer major/minor than `ours` (both known)."""
    a, b = parse(theirs), parse(ours)
    return a is not None and b is not None and a[:2] > b[:2]


def check_pull(snapshot: Snapshot, local: str | None, settings: CoreSettings) -> None:
    """Refuse installing `snapshot` when a newer Hermes major/minor pushed it."""
    if settings.allow_newer_hermes:
        return
    if newer_minor(snapshot.hermes_version, local):
        raise UserError(
            f"generation {snapshot.generation} was pushed from Hermes "
            f"{snapshot.hermes_version} (on {snapshot.device}), newer than Hermes {local} here, "
            f"so its settings may not be understood; upgrade Hermes here ({UPGRADE}), or "
            "accept it with roam config set allow_newer_hermes true")


def newest(snapshot: Snapshot) -> tuple[str, str] | None:
    """The fleet's newest Hermes version and the device that runs it, if any is known."""
    candidates = [(str(row.get("hermes_version")), str(row.get("name") or device_id))
                  for device_id, row in snapshot.roster.items() if row.get("hermes_version")]
    if snapshot.hermes_version:
        candidates.append((snapshot.hermes_version, snapshot.device))
    known = [(parse(version), version, device) for version, device in candidates
             if parse(version) is not None]
    if not known:
        return None
    _key, version, device = max(known, key=lambda item: item[0] or (0, 0, 0))
    return version, device

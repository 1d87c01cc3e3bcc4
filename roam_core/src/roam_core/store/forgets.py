"""Forget records: which generations `roam forget` dropped, by whom, when, under what policy.

One sealed record (kind `F`, key `forgets/<id>`) per forget, never changed and never deleted:
the store only ever learns more. A forgotten generation keeps its number; the chain of
generations steps over it through the parent the record carries, so history, restore and
check work the same before and after a prune deletes its snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roam_core import crypto
from roam_core.errors import IntegrityError
from roam_core.store.objects import forget_key
from roam_core.store.repository import Repository


@dataclass(frozen=True)
class Forgotten:
    """One forgotten generation, and the forget that dropped it."""

    generation: int
    snapshot: str
    parent: str | None
    by: str
    when: str
    policy: str

    def describe(self) -> str:
        return (f"generation {self.generation} was forgotten by {self.by} on "
                f"{self.when[:10]} under policy {self.policy}")


def write_forget(repo: Repository, device: str, device_id: str, when: str, policy: str,
                 generations: list[tuple[int, str, str | None]]) -> str:
    """Record that `generations` ((number, snapshot id, parent id), …) are forgotten."""
    value = {"v": 1, "device": device, "device_id": device_id, "time": when,
             "policy": policy,
             "generations": [{"generation": number, "snapshot": snapshot, "parent": parent}
                             for number, snapshot, parent in sorted(generations)]}
    return repo.write_record(crypto.KIND_FORGET, value, forget_key)


def _parse(record_id: str, data: dict[str, Any]) -> list[Forgotten]:
    try:
        found = []
        for item in data["generations"]:
            parent = item.get("parent")
            found.append(Forgotten(int(item["generation"]), str(item["snapshot"]),
                                   None if parent is None else str(parent),
                                   str(data["device"]), str(data["time"]),
                                   str(data["policy"])))
        return found
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
        raise IntegrityError(f"integrity error: forget record {record_id} is malformed"
                             ) from None


def forgotten(repo: Repository) -> dict[str, Forgotten]:
    """Every forgotten generation the store records, by snapshot id."""
    found: dict[str, Forgotten] = {}
    for key in sorted(repo.backend.list("forgets/")):
        record_id = key.rpartition("/")[2]
        data = repo.read_record(crypto.KIND_FORGET, record_id, key, "forgets")
        for item in _parse(record_id, data):
            found.setdefault(item.snapshot, item)
    return found

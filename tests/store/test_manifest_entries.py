"""File entries read from a tree: every field checked, whatever the tree's author wrote."""

from __future__ import annotations

from typing import Any

import pytest

from roam_core.errors import IntegrityError
from roam_core.store.manifest import FileEntry

GOOD = {"size": 3, "mode": 0o644, "sha256": "ab" * 32, "scope": "shared",
        "blobs": [["cd" * 32, "packs/ef/" + "ef" * 32, 0, 3]]}


def test_a_well_formed_entry_reads_back() -> None:
    entry = FileEntry.from_json("SOUL.md", GOOD, "tree t")
    assert entry.as_json() == GOOD


@pytest.mark.parametrize(("field", "value"), [
    ("sha256", "ab" * 32 + "\n"),  # `$` alone would let a trailing newline through
    ("sha256", "AB" * 32),
    ("sha256", "ab" * 31),
    ("size", -1),
    ("size", float("inf")),
    ("mode", 0o4755),
    ("blobs", [["cd" * 32, "packs/x", -1, 3]]),
    ("blobs", [["cd" * 32, "packs/x", 0, -3]]),
    ("blobs", [["cd" * 32, "packs/x", 0]]),
    ("blobs", "not a list"),
])
def test_a_malformed_field_is_an_integrity_error(field: str, value: Any) -> None:
    with pytest.raises(IntegrityError, match="tree t has a malformed"):
        FileEntry.from_json("SOUL.md", {**GOOD, field: value}, "tree t")


@pytest.mark.parametrize("data", [
    GOOD,
    {**GOOD, "size": True},  # JSON has no bools for sizes, but a hand-edited file might
    {**GOOD, "sha256": int("1" * 64)},
    {**GOOD, "blobs": [[1, "packs/x", 0, 3]]},
    {**GOOD, "blobs": [("cd" * 32, "packs/x", 0, 3)]},
    {key: value for key, value in GOOD.items() if key != "scope"},
    {**GOOD, "extra": 1},
])
def test_as_json_is_what_from_json_read_or_a_faithful_rebuild(data: dict[str, Any]) -> None:
    """An entry keeps the dict it was read from only when rebuilding would give it back."""
    try:
        entry = FileEntry.from_json("SOUL.md", data, "tree t")
    except IntegrityError:
        return  # refused outright is fine too
    rebuilt = {"size": entry.size, "mode": entry.mode, "sha256": entry.sha256,
               "scope": entry.scope, "blobs": [list(ref) for ref in entry.blobs]}
    assert entry.as_json() == rebuilt
    assert all(type(a) is type(b) for a, b in zip(entry.as_json().values(), rebuilt.values(),
                                                   strict=True))


def test_a_changed_copy_never_keeps_the_dict_it_was_read_from() -> None:
    """dataclasses.replace builds a new entry; the dict read for the old one must not follow
    (a tampered manifest once came out untampered that way in a test)."""
    from dataclasses import replace

    entry = FileEntry.from_json("SOUL.md", GOOD, "tree t")
    other = [["12" * 32, "packs/34/" + "34" * 32, 7, 3]]
    changed = replace(entry, blobs=tuple(tuple(ref) for ref in other))  # type: ignore[misc]
    assert changed.as_json()["blobs"] == other
    assert entry.as_json()["blobs"] == GOOD["blobs"]

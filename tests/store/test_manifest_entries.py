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

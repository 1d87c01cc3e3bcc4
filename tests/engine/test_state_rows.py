"""A base row's blob list is the text `json.dumps` (compact) writes, to the letter: a save
compares the rows it would write with the stored ones, so any other spelling of the same
list would rewrite every row once."""

from __future__ import annotations

import json

from roam_core.engine.statedb import entry_row
from roam_core.store.manifest import FileEntry

REFS = [
    (),
    (("a" * 64, "b" * 64, 0, 5),),
    (("pack-1", "k\u00e9y \"q\" \\", 10, 1 << 40), ("p2", "\udcff\U0001f600", 0, 0),
     ("p3", "x", 7, 8)),
]


def test_a_rows_blobs_are_compact_json() -> None:
    for refs in REFS:
        entry = FileEntry("skills/s/SKILL.md", 5, 0o644, "c" * 64, "shared", refs)
        row = entry_row(entry)
        assert row[:5] == ("skills/s/SKILL.md", 5, 0o644, "c" * 64, "shared")
        assert row[5] == json.dumps([list(ref) for ref in refs], separators=(",", ":"))
        assert [tuple(ref) for ref in json.loads(row[5])] == list(refs)

"""The tree note (`cache/trees/reached.json`) grows by what a generation changed (issue 22)."""

from __future__ import annotations

import json
from pathlib import Path

from roam_core.store import reached


def _tree(n: int) -> str:
    return f"{n:064x}"


def _folders(count: int, changed: int = 0) -> dict[str, str]:
    folders = {f"skills/s{i}": _tree(i + 1) for i in range(count)}
    for i in range(changed):
        folders[f"skills/s{i}"] = _tree(10_000 + i)
    folders[""] = _tree(99_999 + changed)
    return folders


def test_a_note_appends_what_changed_and_replays_to_the_last_generation(tmp_path: Path
                                                                       ) -> None:
    note = tmp_path / "reached.json"
    first = _folders(500)
    reached.remember(note, _tree(1), first[""], first)
    before = note.read_bytes()
    second = _folders(500, changed=3)
    del second["skills/s499"]
    reached.remember(note, _tree(2), second[""], second)
    after = note.read_bytes()
    # appended, never rewritten: three folders and the root changed, one gone, a line of a
    # few hundred bytes after the first map left as it was
    assert after.startswith(before)
    assert len(after) - len(before) < 1024 < len(before), (len(after), len(before))
    assert reached.recall(note) == (_tree(2), second[""], second)


def test_a_torn_or_foreign_line_leaves_the_note_at_the_generation_before(tmp_path: Path
                                                                       ) -> None:
    note = tmp_path / "reached.json"
    first, second = _folders(20), _folders(20, changed=2)
    reached.remember(note, _tree(1), first[""], first)
    reached.remember(note, _tree(2), second[""], second)
    lines = note.read_text().splitlines()
    note.write_text(lines[0] + "\n" + lines[1][:-10])  # a crash in the middle of the append
    assert reached.recall(note) == (_tree(1), first[""], first)
    foreign = {**json.loads(lines[1]), "from": _tree(7)}  # not a change of what is noted
    note.write_text(lines[0] + "\n" + json.dumps(foreign) + "\n")
    assert reached.recall(note) == (_tree(1), first[""], first)


def test_a_note_much_larger_than_its_map_is_folded_into_one(tmp_path: Path) -> None:
    note = tmp_path / "reached.json"
    for generation in range(1, 40):
        folders = _folders(10, changed=generation % 10)
        folders["skills/s0"] = _tree(50_000 + generation)
        reached.remember(note, _tree(generation), folders[""], folders)
        assert reached.recall(note) == (_tree(generation), folders[""], folders)
    one = len(json.dumps({"snapshot": _tree(1), "root": folders[""], "folders": folders}))
    assert note.stat().st_size <= (reached.COMPACT_AFTER + 1) * one
    # an earlier roam's note (one whole map, the whole file) reads as before
    note.write_text(json.dumps({"snapshot": _tree(3), "root": folders[""], "folders": folders}))
    assert reached.recall(note) == (_tree(3), folders[""], folders)

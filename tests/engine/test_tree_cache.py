"""What a device caches about its store never makes a push skip what the store lacks.

The trees of the generation a device last pushed or applied are remembered under
roam/cache/trees/reached.json; a push from that same generation skips re-sending them
without reading them. A stale or damaged note is ignored (the trees are read, as before).
The blob index cache only counts indexes the store lists.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fleet import Device, new_key, settings_for


def _two_devices(tmp_path: Path) -> tuple[Device, Device]:
    settings, key = settings_for("memory", tmp_path), new_key()
    desk = Device(tmp_path / "desk", "desk", settings, key)
    laptop = Device(tmp_path / "laptop", "laptop", settings, key)
    for number in range(30):
        desk.write(f"skills/s{number % 6}/part{number}/SKILL.md", f"skill {number}\n")
    desk.write("memories/MEMORY.md", "first\n")
    assert desk.roam("init", "--create-remote").code == 0
    assert desk.roam("push").code == 0
    assert laptop.roam("init").code == 0
    return desk, laptop


def test_push_after_push_and_after_pull_reads_no_tree(tmp_path: Path,
                                                      tree_reads: list[str]) -> None:
    desk, laptop = _two_devices(tmp_path)
    tree_reads.clear()
    desk.write("memories/MEMORY.md", "first\n§\nsecond\n")
    assert desk.roam("push").code == 0
    assert tree_reads == []

    assert laptop.roam("pull", "--apply", "--overwrite-conflicts").code == 0
    tree_reads.clear()
    laptop.write("skills/s1/part1/SKILL.md", "changed on the laptop\n")
    assert laptop.roam("push").code == 0
    assert tree_reads == []

    # the store is whole and the desk gets exactly what was pushed
    assert desk.roam("check", "--read-data").code == 0
    assert desk.roam("pull", "--apply").code == 0
    assert desk.read("skills/s1/part1/SKILL.md") == "changed on the laptop\n"
    assert desk.read("memories/MEMORY.md") == "first\n§\nsecond\n"


@pytest.mark.parametrize("damage", ["other snapshot", "not json", "missing"])
def test_a_stale_or_damaged_note_is_ignored(tmp_path: Path, tree_reads: list[str],
                                            damage: str) -> None:
    desk, _laptop = _two_devices(tmp_path)
    note = desk.root / "roam" / "cache" / "trees" / "reached.json"
    # JSON lines: the first a whole map, each later one what a generation changed
    assert json.loads(note.read_text().splitlines()[0])["folders"]
    if damage == "other snapshot":
        data = json.loads(note.read_text().splitlines()[0])
        note.write_text(json.dumps({**data, "snapshot": "0" * 64}))
    elif damage == "not json":
        note.write_text("{")
    else:
        note.unlink()
    tree_reads.clear()
    desk.write("skills/s2/part2/SKILL.md", "edited\n")
    assert desk.roam("push").code == 0
    assert tree_reads, "without a usable note the base trees are read from the store"
    assert desk.roam("check", "--read-data").code == 0


def test_a_home_pointed_at_a_new_store_uploads_every_blob_again(tmp_path: Path) -> None:
    # Two pushes fill the blob index cache from store A; the same home (same key) is then
    # founded on an empty store B. Blobs known from A must be uploaded to B.
    key = new_key()
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    desk = Device(tmp_path / "desk", "desk", {"backend": "local", "local_dir": str(first)}, key)
    desk.write("skills/x/SKILL.md", "hello\n")
    assert desk.roam("init", "--create-remote").code == 0
    assert desk.roam("push").code == 0
    desk.write("SOUL.md", "soul\n")
    assert desk.roam("push").code == 0
    Device(desk.root, "desk", {"backend": "local", "local_dir": str(second)}, key)
    assert desk.roam("init", "--create-remote").code == 0
    assert desk.roam("push").code == 0
    checked = desk.roam("check", "--read-data")
    assert checked.code == 0, checked.out


def test_a_damaged_blob_index_cache_is_rebuilt(tmp_path: Path) -> None:
    desk, _laptop = _two_devices(tmp_path)
    desk.write("SOUL.md", "second push\n")
    assert desk.roam("push").code == 0
    cache = desk.root / "roam" / "cache" / "indexes" / "known.jsonl"
    lines = cache.read_text().splitlines()
    assert lines and all(line.startswith('["') for line in lines)
    cache.write_text('["torn", [[1, 2\n' + "\n".join(lines[1:]) + "\n{}\n")
    desk.write("SOUL.md", "third push\n")
    assert desk.roam("push").code == 0
    assert desk.roam("check", "--read-data").code == 0
    assert len(cache.read_text().splitlines()) >= len(lines)

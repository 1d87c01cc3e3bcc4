"""A file's history and restore read the trees on its path, not every folder of the home."""

from __future__ import annotations

from pathlib import Path

from fleet import Device, new_key, settings_for

FOLDERS = 40




def test_history_and_restore_of_one_file_read_only_its_path(tmp_path: Path,
                                                            tree_reads: list[str]) -> None:
    desk = Device(tmp_path / "desk", "desk", settings_for("memory", tmp_path), new_key())
    for number in range(FOLDERS):
        desk.write(f"skills/group{number % 4}/skill{number}/SKILL.md", f"skill {number}\n")
    desk.write("memories/MEMORY.md", "first\n")
    assert desk.roam("init", "--create-remote").code == 0
    for version in range(3):
        desk.write("memories/MEMORY.md", f"version {version}\n")
        assert desk.roam("push").code == 0

    tree_reads.clear()
    history = desk.roam("history", "memories/MEMORY.md", "--json")
    assert history.code == 0, history.err
    assert len(history.json()) == 3
    generations = 4  # init's empty one and three pushes
    assert len(tree_reads) <= 2 * generations, tree_reads  # the root and memories/ in each

    tree_reads.clear()
    restored = desk.roam("restore", "memories/MEMORY.md", "--generation", "1", "--apply")
    assert restored.code == 0, restored.err
    assert desk.read("memories/MEMORY.md") == "version 0\n"
    assert len(tree_reads) <= 2

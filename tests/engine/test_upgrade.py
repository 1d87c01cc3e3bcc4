"""Format 2 migration: a version 1 store keeps working and `roam upgrade` moves it to 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet import Device, new_key, settings_for
from roam_core.store.objects import HEAD_REF
from roam_core.testing.memory import named_store

STORE: dict[str, str] = {}


def _store_keys(_device: Device, prefix: str) -> list[str]:
    return [key for key in named_store(STORE["name"]).objects if key.startswith(prefix)]


def _head_version(_device: Device) -> int:
    return named_store(STORE["name"]).refs[HEAD_REF][0][2]


def test_a_version_1_store_keeps_version_1_until_roam_upgrade(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_for("memory", tmp_path)
    STORE["name"] = settings["memory_store"]
    key = new_key()
    desk = Device(tmp_path / "desk", "desk", settings, key)
    laptop = Device(tmp_path / "laptop", "laptop", settings, key)
    desk.write("skills/one/SKILL.md", "one\n")
    desk.write("memories/MEMORY.md", "first\n")
    # founded as a version 1 roam would: every tree an object of its own
    monkeypatch.setattr("roam_core.store.repository.STORE_FORMAT", 1)
    assert desk.roam("init", "--create-remote").code == 0
    assert desk.roam("push").code == 0
    monkeypatch.undo()
    assert _head_version(desk) == 1
    loose = len(_store_keys(desk, "trees/"))
    assert loose >= 3

    # this roam pushes to it in version 1: an older device can still read every generation
    desk.write("memories/MEMORY.md", "second\n")
    assert desk.roam("push").code == 0
    assert _head_version(desk) == 1 and len(_store_keys(desk, "trees/")) > loose
    assert len(_store_keys(desk, "packs/")) == len(_store_keys(desk, "index/"))
    assert laptop.roam("init").code == 0
    assert laptop.roam("pull", "--apply").code == 0
    assert laptop.read("memories/MEMORY.md") == "second\n"

    upgraded = desk.roam("upgrade")
    assert upgraded.code == 0, upgraded.err
    assert "from format version 1 to 2" in upgraded.out
    assert _head_version(desk) == 2
    again = desk.roam("upgrade", "--json")
    assert again.code == 0 and again.json()["upgraded"] is False

    trees_before = len(_store_keys(desk, "trees/"))
    desk.write("memories/MEMORY.md", "third\n")
    assert desk.roam("push").code == 0
    assert len(_store_keys(desk, "trees/")) == trees_before  # the new trees went in a pack
    # the laptop reads the new packed trees beside the old loose ones
    pulled = laptop.roam("pull", "--apply")
    assert pulled.code == 0, pulled.err
    assert laptop.read("memories/MEMORY.md") == "third\n"
    assert laptop.read("skills/one/SKILL.md") == "one\n"
    assert laptop.roam("check").code == 0

"""Devices have random ids; names are unique labels in the roster (issue 25, item 1)."""

from __future__ import annotations

import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from fleet import Device, new_key, settings_for
from support.state_files import plant_legacy, read_state


def state(device: Device) -> dict[str, object]:
    return read_state(device.root)


def unnamed(tmp_path: Path, settings: dict[str, object], key: str, where: str) -> Device:
    """A device whose config names no device_name: its name comes from the host name."""
    device = Device(tmp_path / where, where, settings, key)
    text = (device.root / "config.yaml").read_text()
    (device.root / "config.yaml").write_text(
        "\n".join(line for line in text.splitlines() if "device_name" not in line) + "\n")
    return device


def test_a_name_taken_by_another_device_is_refused(make_device: Callable[..., Device],
                                                   tmp_path: Path) -> None:
    desk = make_device("desk")
    assert desk.roam("init", "--create-remote").code == 0
    desk.write("SOUL.md", "soul\n")
    assert desk.roam("push").code == 0
    # a second machine whose config also says device_name: desk
    twin = make_device("twin")
    text = (twin.root / "config.yaml").read_text().replace("device_name: twin",
                                                           "device_name: desk")
    (twin.root / "config.yaml").write_text(text)
    refused = twin.roam("init")
    assert refused.code == 1
    assert "desk" in refused.err and "--name" in refused.err
    assert len(refused.err.strip().splitlines()) == 1 and "Traceback" not in refused.err
    assert not (twin.root / "roam/state.db").exists()
    joined = twin.roam("init", "--name", "desk2")
    assert joined.code == 0, joined.err
    assert "desk2" in joined.out


def test_device_ids_are_random_and_key_the_roster(make_device: Callable[..., Device]) -> None:
    desk, laptop = make_device("desk"), make_device("laptop")
    desk.roam("init", "--create-remote")
    laptop.roam("init")
    ids = {state(desk)["device_id"], state(laptop)["device_id"]}
    assert len(ids) == 2 and all(isinstance(i, str) and len(i) >= 12 for i in ids)
    laptop.write("SOUL.md", "hello\n")
    assert laptop.roam("pull", "--apply").code == 0
    assert laptop.roam("push").code == 0
    rows = desk.roam("devices", "--json").json()
    assert {(r["id"], r["device"]) for r in rows} == {
        (state(desk)["device_id"], "desk"), (state(laptop)["device_id"], "laptop")}


def test_the_host_name_gets_a_suffix_when_taken(tmp_path: Path, backend_kind: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "gethostname", lambda: "clone")
    key, settings = new_key(), settings_for(backend_kind, tmp_path)
    first, second = (unnamed(tmp_path, settings, key, w) for w in ("a", "b"))
    assert first.roam("init", "--create-remote").code == 0
    assert state(first)["device"] == "clone"
    result = second.roam("init")
    assert result.code == 0, result.err
    name = str(state(second)["device"])
    assert name.startswith("clone-") and len(name) > len("clone-")
    assert name in result.out


def test_rename_and_forget(make_device: Callable[..., Device]) -> None:
    desk, laptop = make_device("desk"), make_device("laptop")
    desk.roam("init", "--create-remote")
    laptop.roam("init")
    laptop.roam("pull", "--apply")
    laptop.write("SOUL.md", "x\n")
    laptop.roam("push")
    desk.roam("pull", "--apply")
    taken = desk.roam("devices", "rename", "laptop")
    assert taken.code == 1 and "laptop" in taken.err and "Traceback" not in taken.err
    renamed = desk.roam("devices", "rename", "tower")
    assert renamed.code == 0, renamed.err
    rows = {r["id"]: r["device"] for r in laptop.roam("devices", "--json").json()}
    assert rows[state(desk)["device_id"]] == "tower"
    assert state(desk)["device"] == "tower"
    gone = desk.roam("devices", "forget", "laptop")
    assert gone.code == 0, gone.err
    rows = {r["id"]: r["device"] for r in desk.roam("devices", "--json").json()}
    assert list(rows.values()) == ["tower"]
    unknown = desk.roam("devices", "forget", "nosuch")
    assert unknown.code == 1 and "nosuch" in unknown.err


def _make_legacy(device: Device) -> None:
    """Rewrite the store's newest generation and the state the way roam wrote them before ids."""
    import os

    from roam_core.engine.session import Session
    from roam_core.home import resolve_home
    from roam_core.store.objects import Head, Snapshot

    os.environ["ROAM_ARCHIVE_KEY"] = device.key
    try:
        session = Session.open(resolve_home(str(device.root)), "push")
        head = session.repo.read_head()
        assert head is not None
        old = session.repo.load_snapshot(head.snapshot)
        roster = {str(row["name"]): {k: v for k, v in row.items() if k != "name"}
                  for row in old.roster.values()}
        legacy = Snapshot(head.generation + 1, head.snapshot, old.device, old.created, old.root,
                          old.roam_version, old.hermes_version, roster, old.files, old.bytes)
        snapshot_id = session.repo.write_snapshot(legacy)
        session.repo.write_head(Head(head.generation + 1, snapshot_id, head.store, old.device,
                                     old.created), head.version)
        session.close()
    finally:
        del os.environ["ROAM_ARCHIVE_KEY"]
    old_state = state(device)
    old_state.pop("device_id")
    old_state["generation"] = head.generation + 1
    old_state["snapshot"] = snapshot_id
    plant_legacy(device.root, old_state)  # migrated to state.db by the next command


def test_a_store_from_before_ids_upgrades_in_place(make_device: Callable[..., Device]) -> None:
    """A roster keyed by name and a state.json without an id keep working: the name is the id."""
    desk, laptop = make_device("desk"), make_device("laptop")
    desk.roam("init", "--create-remote")
    desk.write("SOUL.md", "one\n")
    desk.roam("push")
    _make_legacy(desk)
    assert [(r["id"], r["device"]) for r in desk.roam("devices", "--json").json()] == [
        ("desk", "desk")]
    desk.write("SOUL.md", "two\n")
    pushed = desk.roam("push")
    assert pushed.code == 0, pushed.err
    assert [(r["id"], r["device"]) for r in desk.roam("devices", "--json").json()] == [
        ("desk", "desk")]
    assert laptop.roam("init", "--name", "desk").code == 1   # the legacy row's name is taken
    assert laptop.roam("init").code == 0
    assert laptop.roam("pull", "--apply").code == 0
    assert laptop.read("SOUL.md") == "two\n"

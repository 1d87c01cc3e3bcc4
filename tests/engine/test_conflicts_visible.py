"""Issue 19 item 6: every conflict a pull keeps local exits 2 and stays listed by `status`.

A config key or memory entry changed on both sides and kept local used to exit 0, and
`status` did not list config conflicts, so scripts and auto sync could not see them.
"""

from __future__ import annotations

from fleet import Device

MEMORY = "memories/MEMORY.md"


def _pair(make_device) -> tuple[Device, Device]:
    a, b = make_device("a"), make_device("b")
    (a.root / "config.yaml").write_text(a.read("config.yaml") + "model: one\n")
    a.write(MEMORY, "likes tea\n§\nlives in Oslo")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    return a, b


def _config_conflict(make_device) -> Device:
    """b and a both changed the same config key; b's pull kept its value: b."""
    a, b = _pair(make_device)
    (a.root / "config.yaml").write_text(a.read("config.yaml").replace("model: one",
                                                                      "model: two"))
    assert a.roam("push").code == 0
    (b.root / "config.yaml").write_text(b.read("config.yaml").replace("model: one",
                                                                      "model: three"))
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 2, (pulled.out, pulled.err)
    assert "model: three" in b.read("config.yaml")
    return b


def test_config_key_conflict_exits_2_and_status_lists_it(make_device) -> None:
    b = _config_conflict(make_device)
    status = b.roam("status")
    assert "config.yaml: model" in status.out, status.out
    assert "roam pull --apply --overwrite-conflicts" in status.out
    report = b.roam("status", "--json").json()
    assert report["entry_conflicts"] == {"config.yaml": ["model"]}
    # still open on the next pull; gone once this device publishes its value
    assert b.roam("pull", "--apply").code == 2
    assert b.roam("push").code == 0
    assert "config.yaml: model" not in b.roam("status").out
    assert b.roam("status", "--json").json()["entry_conflicts"] == {}


def test_memory_entry_conflict_exits_2_and_status_lists_it(make_device) -> None:
    a, b = _pair(make_device)
    a.write(MEMORY, "likes tea\n§\nlives in Bergen")
    assert a.roam("push").code == 0
    b.write(MEMORY, "likes tea\n§\nlives in Tromsø")
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 2, (pulled.out, pulled.err)
    status = b.roam("status")
    assert MEMORY in status.out, status.out
    assert MEMORY in b.roam("status", "--json").json()["entry_conflicts"]


def test_status_lists_every_file_conflict(make_device) -> None:
    a, b = _pair(make_device)
    for number in range(45):
        a.write(f"skills/s{number:02}/SKILL.md", "a\n")
    assert a.roam("push").code == 0
    for number in range(45):
        b.write(f"skills/s{number:02}/SKILL.md", "b\n")
    assert b.roam("pull", "--apply").code == 2
    out = b.roam("status").out
    assert all(f"skills/s{number:02}/SKILL.md" in out for number in range(45)), out


def _still_open(device: Device, listed: str) -> None:
    """`status` lists the conflict with its command, and a later pull still exits 2."""
    status = device.roam("status")
    assert listed in status.out.partition("conflicts kept local")[2], status.out
    assert "roam pull --apply --overwrite-conflicts" in status.out, status.out
    again = device.roam("pull", "--apply")
    assert again.code == 2, (again.out, again.err)
    assert listed in device.roam("status").out


def test_memory_entry_conflict_stays_open_until_resolved(make_device) -> None:
    a, b = _pair(make_device)
    a.write(MEMORY, "likes tea\n§\nlives in Bergen")
    assert a.roam("push").code == 0
    b.write(MEMORY, "likes tea\n§\nlives in Tromsø")
    assert b.roam("pull", "--apply").code == 2
    _still_open(b, MEMORY)
    assert "lives in Tromsø" in b.read(MEMORY)
    resolved = b.roam("pull", "--apply", "--overwrite-conflicts")
    assert resolved.code == 0, (resolved.out, resolved.err)
    assert "lives in Bergen" in b.read(MEMORY)
    assert b.roam("pull", "--apply").code == 0
    assert "conflicts kept local" not in b.roam("status").out


def test_deletion_conflict_stays_open_until_resolved(make_device) -> None:
    a, b = _pair(make_device)
    a.write("skills/gone/SKILL.md", "v1\n")
    assert a.roam("push").code == 0
    assert b.roam("pull", "--apply").code == 0
    (a.root / "skills/gone/SKILL.md").unlink()
    assert a.roam("push").code == 0
    b.write("skills/gone/SKILL.md", "edited here\n")
    assert b.roam("pull", "--apply").code == 2
    _still_open(b, "skills/gone/SKILL.md")
    assert b.read("skills/gone/SKILL.md") == "edited here\n"
    assert b.roam("pull", "--apply", "--overwrite-conflicts").code == 0
    assert not b.exists("skills/gone/SKILL.md")
    assert b.roam("pull", "--apply").code == 0


def test_type_change_conflict_stays_open_until_resolved(make_device) -> None:
    a, b = _pair(make_device)
    a.write("skills/shape/notes", "a file\n")
    assert a.roam("push").code == 0
    assert b.roam("pull", "--apply").code == 0
    (a.root / "skills/shape/notes").unlink()
    a.write("skills/shape/notes/inside.md", "now a folder\n")
    assert a.roam("push").code == 0
    b.write("skills/shape/notes", "edited here\n")
    assert b.roam("pull", "--apply").code == 2
    _still_open(b, "skills/shape/notes")
    assert b.read("skills/shape/notes") == "edited here\n"
    assert b.roam("pull", "--apply", "--overwrite-conflicts").code == 0
    assert b.read("skills/shape/notes/inside.md") == "now a folder\n"
    assert b.roam("pull", "--apply").code == 0


def test_file_conflict_stays_open_until_resolved(make_device) -> None:
    a, b = _pair(make_device)
    a.write("SOUL.md", "a's soul\n")
    assert a.roam("push").code == 0
    b.write("SOUL.md", "b's soul\n")
    assert b.roam("pull", "--apply").code == 2
    _still_open(b, "SOUL.md")
    assert b.roam("push", "--force", "--yes").code == 0  # publishing this side resolves it
    assert "conflicts kept local" not in b.roam("status").out
    assert b.roam("pull", "--apply").code == 0


def test_config_key_conflict_stays_open_on_every_pull(make_device) -> None:
    b = _config_conflict(make_device)
    _still_open(b, "config.yaml: model")
    assert b.roam("pull", "--apply", "--overwrite-conflicts").code == 0
    assert "model: two" in b.read("config.yaml")
    assert b.roam("pull", "--apply").code == 0

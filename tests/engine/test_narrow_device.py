"""Carry-forward: a device whose rules hide a path never deletes it for the rest of the fleet."""

from __future__ import annotations

from fleet import Device


def _narrow(dev: Device, rules: str) -> None:
    (dev.root / "roam").mkdir(exist_ok=True)
    (dev.root / "roam" / "rules.yaml").write_text(rules)


def _hidden_from_b(make_device, private: str) -> tuple[Device, Device]:
    """A pushes skills/private/ and SOUL.md; B joins with a rule keeping skills/private/ local."""
    a, b = make_device("a"), make_device("b")
    a.write("skills/private/SKILL.md", private)
    a.write("SOUL.md", "s\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    _narrow(b, "local:\n  - skills/private/\n")
    assert b.roam("init").code == 0
    return a, b


def test_narrower_device_cannot_delete_what_it_cannot_see(make_device) -> None:
    a, b = make_device("a"), make_device("b")
    a.write("SOUL.md", "soul\n")
    a.write("skills/private/SKILL.md", "only for the desktop\n")
    a.write("skills/common/SKILL.md", "for everyone\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    _narrow(b, "local:\n  - skills/private/\n")
    assert b.roam("init").code == 0
    plan = b.roam("pull", "--json").json()
    kept = [item["path"] for item in plan["kept_local_by_rules"]]
    assert kept == ["skills/private/SKILL.md"]
    human = b.roam("pull", "--apply")
    assert human.code == 0, human.err
    assert "kept local by rules: skills/private/SKILL.md" in human.out
    assert not b.exists("skills/private/SKILL.md")
    assert b.read("skills/common/SKILL.md") == "for everyone\n"
    # B has its own file at the hidden path: it is B's, and it must not travel
    b.write("skills/private/SKILL.md", "the laptop's own private notes\n")
    b.write("SOUL.md", "soul, edited on the laptop\n")
    pushed = b.roam("push", "--json").json()
    assert pushed["carried_forward"] == 1
    assert "skills/private/SKILL.md" not in pushed["added"] + pushed["changed"]
    assert pushed["removed"] == []
    assert a.roam("pull", "--apply").code == 0
    assert a.read("skills/private/SKILL.md") == "only for the desktop\n"
    assert a.read("SOUL.md") == "soul, edited on the laptop\n"
    history = a.roam("history", "skills/private/SKILL.md", "--json").json()
    assert [row["generation"] for row in history] == [1]


def test_only_a_device_that_sees_a_path_can_delete_it(make_device) -> None:
    a, b = _hidden_from_b(make_device, "x\n")
    b.roam("pull", "--apply")
    b.write("SOUL.md", "s2\n")
    b.roam("push")
    a.roam("pull", "--apply")
    (a.root / "skills/private/SKILL.md").unlink()
    assert a.roam("push", "--json").json()["removed"] == ["skills/private/SKILL.md"]


def test_widening_rules_receives_hidden_paths_instead_of_deleting_them(make_device) -> None:
    a, b = _hidden_from_b(make_device, "kept from b until b widens its rules\n")
    assert b.roam("pull", "--apply").code == 0
    assert not b.exists("skills/private/SKILL.md")
    (b.root / "roam" / "rules.yaml").unlink()  # b now sees skills/private/
    assert b.roam("status", "--json").json()["changes"]["removed"] == []
    b.write("SOUL.md", "b's edit\n")
    pushed = b.roam("push", "--json").json()
    assert pushed["removed"] == [], "a path b never had is not a deletion"
    assert b.roam("pull", "--apply").code == 0
    assert b.read("skills/private/SKILL.md") == "kept from b until b widens its rules\n"
    assert a.roam("pull", "--apply").code == 0
    assert a.read("skills/private/SKILL.md") == "kept from b until b widens its rules\n"


def test_plugin_inventory_alone_is_not_a_push(make_device) -> None:
    a = make_device("a")
    a.write("SOUL.md", "s\n")
    a.roam("init", "--create-remote")
    assert a.roam("push").code == 0
    a.write("plugins/foo/plugin.yaml", "name: foo\nversion: 1\n")
    again = a.roam("push")
    assert again.code == 0 and "nothing to push" in again.out
    a.write("SOUL.md", "s2\n")
    pushed = a.roam("push", "--json").json()
    assert "roam/installed-plugins.json" in pushed["changed"]

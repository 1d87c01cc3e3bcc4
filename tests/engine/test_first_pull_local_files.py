"""A device's first pull never treats a file only it has as a conflict, nor deletes it.

Found while writing the user guide: on a first pull (no base yet), a shared file that exists
only locally was reported "kept local (changed here since last sync)", the pull exited 2,
and `--overwrite-conflicts` deleted it. The remote never had it: it is a local change.
"""

from __future__ import annotations


def _second_device_with_its_own_skill(make_device):
    a, b = make_device("a"), make_device("b")
    a.write("SOUL.md", "soul\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    b.write("skills/mine/SKILL.md", "only on b\n")
    assert b.roam("init").code == 0
    return a, b


def test_local_only_file_is_a_local_change_on_first_pull(make_device) -> None:
    _a, b = _second_device_with_its_own_skill(make_device)
    result = b.roam("pull", "--apply")
    assert result.code == 0, result.out + result.err
    assert "local change (publish with roam push): skills/mine/SKILL.md" in result.out
    assert "kept local" not in result.out
    assert b.read("skills/mine/SKILL.md") == "only on b\n"


def test_overwrite_conflicts_keeps_a_local_only_file(make_device) -> None:
    a, b = _second_device_with_its_own_skill(make_device)
    result = b.roam("pull", "--apply", "--overwrite-conflicts")
    assert result.code == 0, result.out + result.err
    assert b.read("skills/mine/SKILL.md") == "only on b\n"
    assert b.read("SOUL.md") == "soul\n"
    assert b.roam("push").code == 0
    assert a.roam("pull", "--apply").code == 0
    assert a.read("skills/mine/SKILL.md") == "only on b\n"

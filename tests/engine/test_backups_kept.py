"""Issue 19 item 4: a never-pushed local version replaced by an install stays recoverable.

`pull --apply --overwrite-conflicts` and `restore --apply` used to copy such a version only
into `roam/backups/<stamp>/`, which `backup_keep` pruning removed a few installs later.
"""

from __future__ import annotations

from fleet import Device


def _pair(make_device) -> tuple[Device, Device]:
    a, b = make_device("a"), make_device("b", backup_keep=1)
    a.write("SOUL.md", "soul v1\n")
    a.write("skills/n/SKILL.md", "n1\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    return a, b


def _churn(a: Device, b: Device, rounds: int) -> None:
    """Installs on B that each make (and prune) a backup folder."""
    for number in range(rounds):
        a.write("skills/n/SKILL.md", f"n{number + 2}\n")
        assert a.roam("push").code == 0
        assert b.roam("pull", "--apply").code == 0


def test_overwritten_unpushed_version_survives_pruning(make_device) -> None:
    a, b = _pair(make_device)
    b.write("SOUL.md", "only on b, never pushed\n")
    a.write("SOUL.md", "soul v2\n")
    assert a.roam("push").code == 0
    assert b.roam("pull", "--apply", "--overwrite-conflicts").code == 0
    assert b.read("SOUL.md") == "soul v2\n"
    _churn(a, b, 3)
    status = b.roam("status")
    assert "1 local version(s) kept only in backups" in status.out, status.out
    listed = b.roam("backups", "list", "--json").json()
    assert [item["files"] for item in listed] == [["SOUL.md"]]
    stamp = listed[0]["stamp"]
    shown = b.roam("backups", "show", stamp)
    assert shown.code == 0 and "SOUL.md" in shown.out
    restored = b.roam("backups", "restore", stamp, "SOUL.md")
    assert restored.code == 0, restored.err
    assert b.read("SOUL.md") == "only on b, never pushed\n"
    # what the restore replaced (the pulled v2) is in the store: nothing new is kept
    assert len(b.roam("backups", "list", "--json").json()) == 1
    assert b.roam("backups", "drop", stamp).code == 0
    assert b.roam("backups", "list", "--json").json() == []
    assert "kept only in backups" not in b.roam("status").out


def test_restore_over_unpushed_version_keeps_it(make_device) -> None:
    a, b = _pair(make_device)
    b.write("SOUL.md", "b's draft\n")
    assert b.roam("restore", "SOUL.md", "--generation", "1", "--apply").code == 0
    assert b.read("SOUL.md") == "soul v1\n"
    _churn(a, b, 3)
    listed = b.roam("backups", "list", "--json").json()
    assert [item["files"] for item in listed] == [["SOUL.md"]]
    stamp = listed[0]["stamp"]
    assert (b.root / "roam/backups" / stamp / "SOUL.md").read_text() == "b's draft\n"


def test_pushed_versions_are_still_pruned(make_device) -> None:
    a, b = _pair(make_device)
    _churn(a, b, 3)
    assert b.roam("backups", "list", "--json").json() == []
    assert len([p for p in (b.root / "roam/backups").iterdir() if p.is_dir()]) == 1


def test_backups_bad_input_is_one_line(make_device) -> None:
    _a, b = _pair(make_device)
    for args in (("show", "nope"), ("drop", "../x"), ("restore", "nope", "SOUL.md")):
        result = b.roam("backups", *args)
        assert result.code == 1 and "Traceback" not in result.err
        assert len(result.err.strip().splitlines()) == 1, result.err

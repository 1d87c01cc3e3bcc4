"""SIGKILL at every step of an install; the next command recovers the home exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleet import Device, new_key

BEFORE_COMMIT = ["journal:staged", "journal:stage:SOUL.md", "journal:synced", "journal:op:0",
                 "journal:op:1", "journal:op:2", "journal:installed"]
AFTER_COMMIT = ["journal:committed", "journal:done"]


def _pair(tmp_path: Path) -> tuple[Device, Device]:
    key = new_key()
    store = tmp_path / "store"
    store.mkdir()
    settings = {"backend": "local", "local_dir": str(store)}
    a = Device(tmp_path / "a", "a", settings, key)
    b = Device(tmp_path / "b", "b", settings, key)
    a.write("SOUL.md", "soul v1\n")
    a.write("skills/one/SKILL.md", "one v1\n")
    a.write("skills/gone/SKILL.md", "to be deleted\n")
    assert a.roam("init").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    a.write("SOUL.md", "soul v2\n")
    a.write("skills/one/SKILL.md", "one v2\n")
    a.write("skills/new/SKILL.md", "brand new\n")
    (a.root / "skills/gone/SKILL.md").unlink()
    assert a.roam("push").code == 0
    return a, b


@pytest.mark.parametrize("point", BEFORE_COMMIT + AFTER_COMMIT)
def test_sigkill_during_install_recovers_exactly(tmp_path: Path, point: str) -> None:
    _a, b = _pair(tmp_path)
    before = b.snapshot_bytes()
    killed = b.run("pull", "--apply", env={"ROAM_TEST_KILL_AT": point})
    assert killed.returncode == -9, (point, killed.stdout, killed.stderr)
    recovered = b.run("status")
    after = b.snapshot_bytes()
    if point in BEFORE_COMMIT:
        assert "roam: recovered: rolled back" in recovered.stderr, recovered.stderr
        assert after == before
    else:
        if point == "journal:committed":
            assert "roam: recovered: finished" in recovered.stderr
        assert after["SOUL.md"] == b"soul v2\n"
        assert after["skills/new/SKILL.md"] == b"brand new\n"
        assert "skills/gone/SKILL.md" not in after
    assert not any(".roam-tmp-" in rel for rel in after)
    final = b.run("pull", "--apply")
    assert final.returncode == 0, final.stderr
    done = b.snapshot_bytes()
    assert done["SOUL.md"] == b"soul v2\n" and done["skills/one/SKILL.md"] == b"one v2\n"
    assert "skills/gone/SKILL.md" not in done


def test_missing_backup_never_deletes(tmp_path: Path) -> None:
    import shutil

    _a, b = _pair(tmp_path)
    killed = b.run("pull", "--apply", env={"ROAM_TEST_KILL_AT": "journal:installed"})
    assert killed.returncode == -9
    shutil.rmtree(b.root / "roam" / "backups")
    recovered = b.run("status")
    assert "could not prove" in recovered.stderr
    assert (b.root / "SOUL.md").read_text() == "soul v2\n", "left as it is, not deleted"
    assert (b.root / "skills/new/SKILL.md").exists() is False  # new file: provably ours

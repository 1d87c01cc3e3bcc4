"""Every shape a real home has (issue 18): symlinks, unreadable folders, odd names, modes."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

from fleet import Device

NO_DAC = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search",
          "--inh-caps", "-dac_override,-dac_read_search"]


def _pair(make_device) -> tuple[Device, Device]:
    a, b = make_device("a"), make_device("b")
    a.write("SOUL.md", "soul\n")
    a.write("skills/s1/SKILL.md", "one\n")
    a.write("skills/s1/notes.md", "notes\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    return a, b


@pytest.fixture
def on_disk(backend_kind: str) -> None:
    """Tests that run roam in another process need a store another process can open."""
    if backend_kind == "memory":
        pytest.skip("the in-memory store lives in this process only")


def _without_dac(dev: Device, *args: str) -> subprocess.CompletedProcess[str]:
    """Run roam as root without the capabilities that read through permissions."""
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = dev.key
    return subprocess.run([*NO_DAC, sys.executable, "-m", "roam_core.cli.main", "--home",
                           str(dev.root), *args], env=env, capture_output=True, text=True,
                          timeout=120)


# -- symlinks ------------------------------------------------------------------------------


def test_symlinked_soul_is_reported_and_never_published_as_removed(make_device,
                                                                    tmp_path: Path) -> None:
    a, b = _pair(make_device)
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir()
    (dotfiles / "SOUL.md").write_text("soul from dotfiles\n")
    (a.root / "SOUL.md").unlink()
    (a.root / "SOUL.md").symlink_to(dotfiles / "SOUL.md")
    a.write("skills/s1/SKILL.md", "one, edited\n")
    status = a.roam("status", "--json").json()
    assert status["changes"]["removed"] == []
    assert {"path": "SOUL.md", "reason": "symbolic link (never followed)"} in status["skipped"]
    human = a.roam("status")
    assert human.out.splitlines()[0].startswith("warning: SOUL.md is a symbolic link"), human.out
    pushed = a.roam("push", "--json").json()
    assert pushed["removed"] == []
    assert {"path": "SOUL.md", "reason": "symbolic link (never followed)"} in pushed["skipped"]
    assert b.roam("pull", "--apply").code == 0
    assert b.read("SOUL.md") == "soul\n"


def test_symlinked_skill_folder_is_reported_by_push_status_and_rules(make_device,
                                                                     tmp_path: Path) -> None:
    a, _b = _pair(make_device)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "SKILL.md").write_text("dev\n")
    (a.root / "skills" / "dev").symlink_to(checkout)
    dry = a.roam("push", "--dry-run")
    assert "skipped: skills/dev (symbolic link (never followed))" in dry.out, dry.out
    rules = a.roam("rules", "--json")
    assert rules.code == 0, rules.err
    assert {"path": "skills/dev", "reason": "symbolic link (never followed)"} in \
        rules.json()["skipped"]
    assert "skills/dev" in a.roam("status").out


def test_remote_entry_at_a_symlinked_path_is_a_conflict_kept_local(make_device,
                                                                   tmp_path: Path) -> None:
    a, b = _pair(make_device)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "SKILL.md").write_text("dev\n")
    (b.root / "skills" / "dev").symlink_to(checkout)
    a.write("skills/dev/SKILL.md", "a's real folder\n")
    a.write("SOUL.md", "soul 2\n")
    assert a.roam("push").code == 0
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 2, pulled.err
    assert "skills/dev/SKILL.md" in pulled.out
    assert b.read("SOUL.md") == "soul 2\n"
    assert (checkout / "SKILL.md").read_text() == "dev\n"
    assert (b.root / "skills" / "dev").is_symlink()


# -- unreadable ----------------------------------------------------------------------------


def test_unreadable_folder_is_never_published_as_removed(make_device, on_disk) -> None:
    a, b = _pair(make_device)
    folder = a.root / "skills" / "s1"
    a.write("SOUL.md", "soul 2\n")
    folder.chmod(0)
    try:
        pushed = _without_dac(a, "push", "--json")
    finally:
        folder.chmod(0o755)
    assert "Traceback" not in pushed.stderr
    if pushed.returncode == 0:
        import json

        result = json.loads(pushed.stdout)
        assert result["removed"] == []
        assert any(item["path"] == "skills/s1" for item in result["skipped"])
    else:
        assert pushed.returncode == 1 and "skills/s1" in pushed.stderr
    assert b.roam("pull", "--apply").code == 0
    assert b.read("skills/s1/notes.md") == "notes\n"


def test_unreadable_file_stops_push_with_one_line(make_device, on_disk) -> None:
    a, _b = _pair(make_device)
    path = a.root / "skills" / "s1" / "notes.md"
    path.write_text("changed\n")
    path.chmod(0)
    pushed = _without_dac(a, "push")
    assert pushed.returncode == 1
    assert "Traceback" not in pushed.stderr
    assert "skills/s1/notes.md" in pushed.stderr


# -- everything skipped is said ------------------------------------------------------------


def test_odd_names_and_special_files_are_listed_with_reasons(make_device) -> None:
    a, _b = _pair(make_device)
    os.mkfifo(a.root / "skills" / "s1" / "pipe.md")
    with open(os.path.join(os.fsencode(a.root), b"skills/s1/caf\xe9.md"), "wb") as handle:
        handle.write(b"x")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(a.root / "skills" / "s1" / "sock.md"))
    try:
        for args in (("push", "--dry-run", "--json"), ("status", "--json"),
                     ("rules", "--json")):
            found = {item["path"]: item["reason"] for item in a.roam(*args).json()["skipped"]}
            assert found.get("skills/s1/pipe.md") == "not a regular file (FIFO)", (args, found)
            assert found.get("skills/s1/sock.md") == "not a regular file (socket)"
            assert found.get("skills/s1/caf\\xe9.md") == "file name is not valid UTF-8"
        human = a.roam("push")
        assert "skipped: skills/s1/pipe.md" in human.out
    finally:
        sock.close()


# -- type changes --------------------------------------------------------------------------


def test_file_becomes_folder_installs(make_device) -> None:
    a, b = _pair(make_device)
    (a.root / "skills/s1/notes.md").unlink()
    a.write("skills/s1/notes.md/inner.md", "inner\n")
    assert a.roam("push").code == 0
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 0, pulled.err
    assert b.read("skills/s1/notes.md/inner.md") == "inner\n"
    assert b.roam("status", "--json").json()["dirty"] == 0


def test_folder_becomes_file_installs(make_device) -> None:
    a, b = _pair(make_device)
    a.write("skills/s1/deep/x/inner.md", "inner\n")
    assert a.roam("push").code == 0
    assert b.roam("pull", "--apply").code == 0
    import shutil

    shutil.rmtree(a.root / "skills/s1/deep")
    a.write("skills/s1/deep", "now a file\n")
    assert a.roam("push").code == 0
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 0, pulled.err
    assert b.read("skills/s1/deep") == "now a file\n"


def test_type_change_over_a_local_edit_is_a_conflict_then_overwritten(make_device) -> None:
    a, b = _pair(make_device)
    (a.root / "skills/s1/notes.md").unlink()
    a.write("skills/s1/notes.md/inner.md", "inner\n")
    assert a.roam("push").code == 0
    b.write("skills/s1/notes.md", "b's edit\n")
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 2, pulled.err
    assert b.read("skills/s1/notes.md") == "b's edit\n"
    forced = b.roam("pull", "--apply", "--overwrite-conflicts")
    assert forced.code == 0, forced.err
    assert b.read("skills/s1/notes.md/inner.md") == "inner\n"
    backups = list((b.root / "roam" / "backups").rglob("notes.md"))
    assert any(p.is_file() and p.read_text() == "b's edit\n" for p in backups)


def test_folder_to_file_over_local_additions_is_a_conflict(make_device) -> None:
    a, b = _pair(make_device)
    import shutil

    shutil.rmtree(a.root / "skills/s1")
    a.write("skills/s1", "a file now\n")
    assert a.roam("push").code == 0
    b.write("skills/s1/mine.md", "only on b\n")
    pulled = b.roam("pull", "--apply")
    assert pulled.code == 2, pulled.err
    assert b.read("skills/s1/mine.md") == "only on b\n"
    forced = b.roam("pull", "--apply", "--overwrite-conflicts")
    assert forced.code == 0, forced.err
    assert b.read("skills/s1") == "a file now\n"
    backups = list((b.root / "roam" / "backups").rglob("mine.md"))
    assert any(p.read_text() == "only on b\n" for p in backups)


# -- modes and folders ---------------------------------------------------------------------


def test_modes_sync_the_executable_bit_only(make_device) -> None:
    a, b = _pair(make_device)
    (a.root / "skills/s1/run.sh").write_text("#!/bin/sh\n")
    (a.root / "skills/s1/run.sh").chmod(0o4777)
    (b.root / "SOUL.md").chmod(0o600)
    a.write("SOUL.md", "soul 2\n")
    assert a.roam("push").code == 0
    assert b.roam("pull", "--apply").code == 0
    mode = (b.root / "skills/s1/run.sh").stat().st_mode & 0o7777
    assert mode & 0o111 and not mode & 0o7022, oct(mode)
    assert (b.root / "SOUL.md").stat().st_mode & 0o777 == 0o600
    assert b.roam("status", "--json").json()["dirty"] == 0
    (b.root / "skills/s1/SKILL.md").chmod(0o640)
    assert b.roam("status", "--json").json()["dirty"] == 0


def test_config_created_by_pull_is_in_sync(make_device) -> None:
    a, b = make_device("a"), make_device("b")
    a.write("profiles/work/config.yaml", "model: x\n")
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    assert b.roam("init").code == 0
    assert b.roam("pull", "--apply").code == 0
    status = b.roam("status")
    assert "state:   in sync" in status.out, status.out


def test_folder_rename_leaves_no_empty_folder(make_device) -> None:
    a, b = _pair(make_device)
    (a.root / "skills/s1").rename(a.root / "skills/s2")
    assert a.roam("push").code == 0
    assert b.roam("pull", "--apply").code == 0
    assert not (b.root / "skills/s1").exists()
    assert b.read("skills/s2/notes.md") == "notes\n"


@pytest.mark.parametrize("depth", [70])
def test_too_deep_folder_is_refused_before_upload(make_device, depth: int) -> None:
    a, b = _pair(make_device)
    rel = "skills/s1/" + "/".join(["d"] * depth) + "/x.md"
    a.write(rel, "deep\n")
    pushed = a.roam("push")
    assert pushed.code == 1
    assert "nest" in pushed.err and "skills/s1/d/d" in pushed.err
    assert b.roam("pull", "--apply").code == 0
    # status and rules name it too, before anyone tries to push
    for verb in ("status", "rules"):
        listed = a.roam(verb, "--json").json()["skipped"]
        assert [item["path"] for item in listed
                if "nests deeper" in item["reason"]] == ["skills/s1/" + "/".join(["d"] * 63)
                                                           + "/..."], (verb, listed)
        assert "nests deeper" in a.roam(verb).out


def test_history_and_check_go_on_past_a_generation_too_deep_to_read(
        make_device, monkeypatch: pytest.MonkeyPatch) -> None:
    from roam_core.engine import push as push_module

    a, _b = _pair(make_device)
    deep = "skills/s1/" + "/".join(["d"] * 70)
    monkeypatch.setattr(push_module, "check_limits", lambda files: None)  # an older roam
    a.write(f"{deep}/x.md", "deep\n")
    assert a.roam("push").code == 0
    monkeypatch.undo()
    import shutil

    shutil.rmtree(a.root / "skills/s1/d")
    a.write("SOUL.md", "soul 3\n")
    assert a.roam("push").code == 0
    history = a.roam("history", "--json")
    assert history.code == 0, history.err
    assert [row["generation"] for row in history.json()][:1] == [3]
    soul = a.roam("history", "SOUL.md", "--json")
    assert soul.code == 0, soul.err
    check = a.roam("check", "--json")
    assert "Traceback" not in check.err
    report = check.json()
    assert report["snapshots"] == 4, report  # every generation looked at
    assert [p["message"] for p in report["problems"]] == ["nests deeper than 64 levels"]
    assert _b.roam("pull", "--apply").code == 0
    assert _b.read("SOUL.md") == "soul 3\n"

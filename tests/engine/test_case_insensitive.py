"""Two shared paths that differ only in case, pulled onto a case-folding file system (issue 18).

The home lives on a real FAT file system in a loop image: the kernel's vfat where it can
be mounted, else fusefat (FUSE), installed with apt when missing; skipped with the reason
where neither can be mounted.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from fleet import Device, new_key, settings_for
from support.apt import ensure_installed


def _run(*command: str) -> bool:
    try:
        return subprocess.run(command, capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@contextlib.contextmanager
def fat_mount(tmp: Path) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a FAT image needs root")
    reason = ensure_installed("/sbin/mkfs.vfat", "dosfstools")
    if reason:
        pytest.skip(reason)
    image, mount = tmp / "fat.img", tmp / "fat"
    mount.mkdir()
    with open(image, "wb") as handle:
        handle.truncate(32 << 20)
    if not _run("/sbin/mkfs.vfat", str(image)):
        pytest.skip("mkfs.vfat failed")
    mounted = _run("mount", "-o", "loop", str(image), str(mount))
    if not mounted and ensure_installed("/usr/bin/fusefat", "fusefat") is None:
        mounted = _run("/usr/bin/fusefat", "-o", "rw+", str(image), str(mount))
    if not mounted:
        pytest.skip("neither the kernel's vfat nor fusefat can mount a FAT image here")
    try:
        yield mount
    finally:
        _run("umount", str(mount)) or _run("umount", "-l", str(mount))


def _pushed(tmp_path: Path, files: dict[str, str]) -> Device:
    """Device a, which pushed `files` (a path ending in .sh is executable) to a local store."""
    a = Device(tmp_path / "a", "a", settings_for("local", tmp_path), new_key())
    for rel, text in files.items():
        a.write(rel, text).chmod(0o755 if rel.endswith(".sh") else 0o644)
    assert a.roam("init", "--create-remote").code == 0
    assert a.roam("push").code == 0
    return a


@contextlib.contextmanager
def fat_device(tmp_path: Path, a: Device, *folders: str) -> Iterator[Device]:
    """Device b on a FAT home, initialised on a's store.

    fusefat 0.1a loses a renamed folder's contents, so no new folder is staged and renamed
    into place here: the `folders` the pull writes into are made first.
    """
    with fat_mount(tmp_path) as mount:
        b = Device(mount / "home", "b", settings_for("local", tmp_path), a.key)
        for folder in folders:
            (b.root / folder).mkdir(parents=True)
        with sqlite_off_fat(tmp_path, b.root / "roam"):
            assert b.roam("init").code == 0
            yield b
        shutil.rmtree(mount / "home")


@contextlib.contextmanager
def sqlite_off_fat(tmp_path: Path, state_dir: Path) -> Iterator[None]:
    """roam's SQLite files bind-mounted from outside the FAT image; the rest of roam/ on it.

    fusefat 0.1a corrupts a file that SQLite grows past two pages (a fresh database with
    three tables reads back "malformed"; the kernel's vfat, missing here, does not). The
    database files are not what these tests are about; `roam/` itself stays on FAT, so its
    probe of whether the file system keeps modes still probes FAT.
    """
    outside = tmp_path / "sqlite-off-fat"
    (outside / "cache").mkdir(parents=True)
    (outside / "state.db").touch()
    (state_dir / "cache").mkdir(parents=True)
    (state_dir / "state.db").touch()
    mounts = [(outside / "state.db", state_dir / "state.db"),
              (outside / "cache", state_dir / "cache")]
    done = []
    try:
        for source, target in mounts:
            assert _run("mount", "--bind", str(source), str(target)), target
            done.append(target)
        yield
    finally:
        for target in reversed(done):
            _run("umount", str(target)) or _run("umount", "-l", str(target))


def test_paths_differing_only_in_case_are_kept_local_on_a_case_folding_home(
        tmp_path: Path) -> None:
    a = _pushed(tmp_path, {"SOUL.md": "soul\n", "skills/Notes/SKILL.md": "upper\n",
                           "skills/notes/SKILL.md": "lower\n",
                           "skills/other/SKILL.md": "other\n"})
    with fat_device(tmp_path, a, "skills/other") as b:
        pulled = b.roam("pull", "--apply")
        assert pulled.code == 2, pulled.out + pulled.err
        assert "skills/Notes differs only in case from skills/notes" in pulled.out, pulled.out
        assert b.read("skills/other/SKILL.md") == "other\n"
        assert b.read("SOUL.md") == "soul\n"
        again = b.roam("pull", "--apply")
        assert again.code == 2, again.out + again.err
        dry = b.roam("push", "--dry-run", "--json").json()
        assert dry["removed"] == [], dry
    assert a.roam("pull", "--apply").code == 0
    assert a.read("skills/Notes/SKILL.md") == "upper\n"


def test_a_home_whose_file_system_keeps_no_modes_never_sees_a_mode_change(
        tmp_path: Path) -> None:
    """On FAT every file reads as one mode; like git's core.fileMode, roam then ignores it."""
    a = _pushed(tmp_path, {"SOUL.md": "soul\n", "skills/tool/SKILL.md": "skill\n",
                           "skills/tool/run.sh": "#!/bin/sh\n"})
    with fat_device(tmp_path, a, "skills/tool") as b:
        pulled = b.roam("pull", "--apply")
        assert pulled.code == 0, pulled.out + pulled.err
        status = b.roam("status")
        assert "state:   in sync" in status.out, status.out
        assert b.roam("push", "--dry-run", "--json").json()["changed"] == []
        b.write("SOUL.md", "soul, edited on FAT\n")
        b.write("skills/tool/new.md", "new\n")
        dry = b.roam("push", "--dry-run", "--json").json()
        assert (dry["changed"], dry["added"]) == (["SOUL.md"], ["skills/tool/new.md"]), dry
        assert b.roam("push").code == 0
        assert "state:   in sync" in b.roam("status").out
    assert a.roam("pull", "--apply").code == 0
    assert a.read("SOUL.md") == "soul, edited on FAT\n"
    assert (a.root / "SOUL.md").stat().st_mode & 0o777 == 0o644
    assert (a.root / "skills/tool/new.md").stat().st_mode & 0o111 == 0
    assert (a.root / "skills/tool/run.sh").stat().st_mode & 0o100
    assert "state:   in sync" in a.roam("status").out

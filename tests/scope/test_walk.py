"""The walk: shared files only, sorted, never entering what cannot be shared or following links."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from scope_helpers import write

from roam_core.scope import ScopeModel


def scandir_spy(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every folder the walk lists."""
    seen: list[str] = []
    real = os.scandir

    def spy(path: str | os.PathLike[str] = ".") -> object:
        seen.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", spy)
    return seen


def test_walk_lists_shared_files_sorted(tmp_path: Path,
                                        scope_of: Callable[..., ScopeModel]) -> None:
    for rel in ("SOUL.md", "config.yaml", "memories/MEMORY.md", "skills/a-b/SKILL.md",
                "skills/a/SKILL.md", "profiles/w/SOUL.md", "roam/installed-plugins.json",
                ".env", "state.db", "notes.txt", "roam/state.json", "logs/x.log"):
        write(tmp_path, rel)
    rels = [entry.rel for entry in scope_of(tmp_path).walk()]
    assert rels == sorted(rels)
    assert rels == ["SOUL.md", "config.yaml", "memories/MEMORY.md", "profiles/w/SOUL.md",
                    "roam/installed-plugins.json", "skills/a-b/SKILL.md", "skills/a/SKILL.md"]


def test_entries_carry_path_and_lstat(tmp_path: Path,
                                      scope_of: Callable[..., ScopeModel]) -> None:
    write(tmp_path, "SOUL.md", b"persona")
    (entry,) = scope_of(tmp_path).walk()
    assert entry.path == tmp_path / "SOUL.md"
    assert entry.stat.st_size == len(b"persona")


def test_a_big_ignored_venv_is_never_entered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             scope_of: Callable[..., ScopeModel]) -> None:
    write(tmp_path, "SOUL.md")
    write(tmp_path, "skills/a/SKILL.md")
    for base in ("venv", "skills/a/node_modules", "sessions", "profiles/w/home", "logs",
                 "notes", "roam/backups"):
        for index in range(30):
            write(tmp_path, f"{base}/pkg{index}/deep/file.py")
    model = scope_of(tmp_path)
    seen = scandir_spy(monkeypatch)
    rels = [entry.rel for entry in model.walk()]
    assert rels == ["SOUL.md", "skills/a/SKILL.md"]
    listed = sorted(os.path.relpath(path, tmp_path) for path in seen)
    # only folders that can hold shared files: the root, roam/, profiles/ and profiles/w, skills
    assert listed == [".", "profiles", "profiles/w", "roam", "skills", "skills/a"]


def test_the_walk_prunes_even_when_the_folder_is_unreadable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        scope_of: Callable[..., ScopeModel]) -> None:
    write(tmp_path, "venv/lib/x.py")
    real = os.scandir

    def refuse_venv(path: str | os.PathLike[str] = ".") -> object:
        if "venv" in os.fspath(path):
            raise AssertionError("the walk entered venv/")
        return real(path)

    model = scope_of(tmp_path)
    monkeypatch.setattr(os, "scandir", refuse_venv)
    assert list(model.walk()) == []
    assert model.skipped == []


def test_symlink_pointing_outside_is_never_followed(tmp_path: Path,
                                                    scope_of: Callable[..., ScopeModel]) -> None:
    home = tmp_path / "home"
    outside = tmp_path / "outside"
    write(outside, "secret/SKILL.md", b"outside the home")
    write(outside, "id.txt", b"outside")
    write(home, "skills/real/SKILL.md")
    (home / "skills" / "linked").symlink_to(outside / "secret")
    (home / "SOUL.md").symlink_to(outside / "id.txt")
    (home / "memories").mkdir()
    (home / "memories" / "MEMORY.md").symlink_to("/etc/hostname")
    (home / "elsewhere").symlink_to(outside)  # not shareable anyway: not reported
    model = scope_of(home)
    rels = [entry.rel for entry in model.walk()]
    assert rels == ["skills/real/SKILL.md"]
    assert sorted(model.skipped) == [
        ("SOUL.md", "symbolic link (never followed)"),
        ("memories/MEMORY.md", "symbolic link (never followed)"),
        ("skills/linked", "symbolic link (never followed)"),
    ]


def test_names_that_are_not_utf8_are_skipped_and_reported(
        tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    write(tmp_path, "memories/MEMORY.md")
    bad = os.fsencode(tmp_path / "memories") + b"/caf\xe9.md"
    with open(bad, "wb") as handle:
        handle.write(b"x")
    with open(os.fsencode(tmp_path) + b"/junk\xff", "wb") as handle:
        handle.write(b"x")  # not on the allowlist: not worth reporting
    model = scope_of(tmp_path)
    assert [entry.rel for entry in model.walk()] == ["memories/MEMORY.md"]
    assert model.skipped == [("memories/caf\\xe9.md", "file name is not valid UTF-8")]


def test_control_characters_and_special_files(tmp_path: Path,
                                              scope_of: Callable[..., ScopeModel]) -> None:
    write(tmp_path, "skills/a/line\nbreak.md")
    os.mkfifo(tmp_path / "SOUL.md")
    model = scope_of(tmp_path)
    assert list(model.walk()) == []
    assert sorted(model.skipped) == [("SOUL.md", "not a regular file (FIFO)"),
                                     ("skills/a/line\nbreak.md",
                                      "file name holds control characters")]


def test_a_missing_home_walks_to_nothing(tmp_path: Path,
                                         scope_of: Callable[..., ScopeModel]) -> None:
    assert list(scope_of(tmp_path / "nope").walk()) == []


def test_could_share(tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    model = scope_of(tmp_path)
    assert model.could_share("skills")
    assert model.could_share("profiles/w")
    assert model.could_share("roam")  # for roam/installed-plugins.json only
    assert not model.could_share("roam/backups")
    assert not model.could_share("venv")
    assert not model.could_share("skills/x/node_modules")
    assert not model.could_share("profiles/w/home")
    assert not model.could_share("hooks")
    assert not model.could_share("../x")


def test_walk_hands_files_over_in_rel_order_without_sorting_them_whole(
        tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    """Each folder's names are sorted with a subfolder's as `name/`, so its files come at
    their place in `rel` order: status merges them with the base rows as they come, and
    nothing sorts every entry (issue 22). Names here sort just around "/" (0x2F)."""
    names = ["b-c.md", "b.md", "b/x.md", "b/c/d.md", "b0.md", "b/c.md", "bb/y.md",
             "b/c-d/e.md", "B.md", "b/+.md", "é.md", "b/c/d/deep.md", "a/b/c/d/e.md"]
    for name in names:
        write(tmp_path, f"skills/s/{name}")
    model = scope_of(tmp_path)
    rels = [entry.rel for entry in model.walk()]
    expected = sorted(f"skills/s/{name}" for name in names)
    assert rels == expected
    runs = [(prefix, [name for name, _st in run]) for prefix, _base, run in model.walk_runs()]
    assert [prefix + name for prefix, run in runs for name in run] == expected
    # one run per stretch of a folder's files between its subfolders, never split further
    assert ("skills/s/", ["B.md"]) in runs
    assert ("skills/s/", ["b-c.md", "b.md"]) in runs

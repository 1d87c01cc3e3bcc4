"""Read-only verbs never create files or folders in the home, initialised or not."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from campaign.harness import settings_yaml

from support.cli import roam_env, run_roam

READERS = [("status",), ("history",), ("devices",), ("doctor",), ("rules",), ("diff",),
           ("check",), ("config", "list"), ("config", "get"), ("auto", "status"),
           ("sessions", "list"), ("mirror", "status")]


def _tree(root: Path) -> list[str]:
    if not root.exists():
        return ["(absent)"]
    return sorted(os.path.relpath(os.path.join(folder, name), root)
                  for folder, dirs, files in os.walk(root) for name in dirs + files)


@pytest.mark.parametrize("words", READERS, ids=lambda w: " ".join(w))
def test_a_reader_leaves_an_uninitialised_home_as_it_was(tmp_path: Path, words) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "store").mkdir()
    settings = {"backend": "local", "local_dir": str(tmp_path / "store")}
    (home / "config.yaml").write_text(settings_yaml("desk", settings))
    before = _tree(home)
    result = run_roam("--home", str(home), *words, env=roam_env(ROAM_ARCHIVE_KEY="0" * 64))
    assert "Traceback" not in result.stderr
    assert _tree(home) == before, (words, result.stderr)


@pytest.mark.parametrize("words", [("status",), ("history",), ("doctor",), ("devices",)],
                         ids=lambda w: " ".join(w))
def test_a_reader_on_a_missing_home_creates_nothing(tmp_path: Path, words) -> None:
    home = tmp_path / "no-hermes-here"
    result = run_roam("--home", str(home), *words, env=roam_env(ROAM_ARCHIVE_KEY="0" * 64))
    assert result.returncode == 1
    assert not home.exists(), _tree(home)
    assert "run roam init" in result.stderr + result.stdout


def test_status_says_run_roam_init(tmp_path: Path) -> None:
    result = run_roam("--home", str(tmp_path), "status")
    assert result.returncode == 1
    assert "not initialised — run roam init" in result.stderr

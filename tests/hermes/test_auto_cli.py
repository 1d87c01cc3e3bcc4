"""`roam auto on|off|status`: terminal-only switches, root home only, refused before init."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from roam_core.settings import load_settings
from support.inprocess import run_verb


def test_refuses_before_init(make_home: Callable[..., Path]) -> None:
    root = make_home("a")
    result = run_verb(["auto", "on"], home=root)
    assert result.code == 1 and "roam init" in result.error
    assert load_settings(root)["auto_push"] is False


def test_on_off_status_keep_comments(make_home: Callable[..., Path]) -> None:
    root = make_home("a")
    assert run_verb(["init", "--create-remote"], home=root).ok
    original = (root / "config.yaml").read_text()
    (root / "config.yaml").write_text("# my settings, keep me\nmodel:\n  default: x  # why\n"
                                      + original)
    on = run_verb(["auto", "on"], home=root)
    assert on.ok and "auto sync on" in on.stdout
    settings = load_settings(root)
    assert settings["auto_push"] is True and settings["auto_pull_shared"] is True
    text = (root / "config.yaml").read_text()
    assert text.startswith("# my settings, keep me\n") and "default: x  # why" in text
    status = run_verb(["auto", "status", "--json"], home=root).json()
    assert status["auto_push"] is True and status["initialized"] is True
    off = run_verb(["auto", "off"], home=root)
    assert off.ok
    settings = load_settings(root)
    assert settings["auto_push"] is False and settings["auto_pull_shared"] is False
    assert "auto push: off" in run_verb(["auto", "status"], home=root).stdout


def test_refused_from_a_profile_home(make_home: Callable[..., Path]) -> None:
    root = make_home("a")
    assert run_verb(["init", "--create-remote"], home=root).ok
    profile = root / "profiles" / "work"
    profile.mkdir(parents=True)
    result = run_verb(["auto", "on"], home=profile)
    assert result.code == 1 and "root home" in result.error
    assert load_settings(root)["auto_push"] is False


def run_roam(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "roam_core.cli.main", *args],
                          capture_output=True, text=True, timeout=60)


def test_real_cli_process(make_home: Callable[..., Path]) -> None:
    result = run_roam("--home", str(make_home("a")), "auto", "status")
    assert result.returncode == 0 and "auto push: off" in result.stdout
    bad = run_roam("auto", "sideways")
    assert bad.returncode == 64 and "invalid choice" in bad.stderr

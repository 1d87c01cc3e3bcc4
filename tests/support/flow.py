"""The two-device story every backend's CLI flow test tells, through real `roam` subprocesses."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from support.cli import run_roam

Roam = Callable[..., subprocess.CompletedProcess[str]]


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """Assert a roam command succeeded without a traceback; return its stdout."""
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stdout


def configured_device(root: Path, settings: Mapping[str, object], env: dict[str, str]) -> Roam:
    """A new home at `root` whose settings are written with `roam config set`."""
    root.mkdir(parents=True)

    def roam(*args: str) -> subprocess.CompletedProcess[str]:
        return run_roam("--home", str(root), *args, env=env, timeout=180)

    for key, value in settings.items():
        ok(roam("config", "set", key, str(value)))
    return roam


def exchange(a: Roam, b: Roam, home_a: Path, home_b: Path) -> None:
    """A founds and pushes, B joins and pulls, B edits, A is behind (exit 2), both converge."""
    (home_a / "SOUL.md").write_text("soul v1\n")
    (home_a / "memories").mkdir()
    (home_a / "memories" / "MEMORY.md").write_text("remember this\n")

    assert "founded" in ok(a("init", "--create-remote"))
    ok(a("push"))
    assert "joined" in ok(b("init"))
    ok(b("pull", "--apply"))
    assert (home_b / "SOUL.md").read_text() == "soul v1\n"
    assert (home_b / "memories" / "MEMORY.md").read_text() == "remember this\n"

    # B answers with an edit; A is now behind and may not push until it pulls (exit 2).
    (home_b / "SOUL.md").write_text("soul v2 from the desktop\n")
    ok(b("push"))
    (home_a / "memories" / "MEMORY.md").write_text("laptop note\n")
    behind = a("push")
    assert behind.returncode == 2, (behind.stdout, behind.stderr)
    ok(a("pull", "--apply"))
    assert (home_a / "SOUL.md").read_text() == "soul v2 from the desktop\n"
    ok(a("push"))
    ok(b("pull", "--apply"))
    assert (home_b / "memories" / "MEMORY.md").read_text() == "laptop note\n"

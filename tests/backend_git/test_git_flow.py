"""Two devices through the real `roam` CLI (subprocesses) on each git transport."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Callable
from pathlib import Path

from support.cli import roam_env, run_roam

KEY_ENV = "ROAM_ARCHIVE_KEY"


def _ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    return result.stdout


def _device(root: Path, name: str, url: str, env: dict[str, str]) -> Callable[..., object]:
    root.mkdir(parents=True)

    def roam(*args: str) -> subprocess.CompletedProcess[str]:
        return run_roam("--home", str(root), *args, env=env, timeout=180)

    for key, value in (("device_name", name), ("backend", "git"), ("git_remote", url)):
        _ok(roam("config", "set", key, value))
    return roam


def test_two_devices_push_and_pull_through_git(remote_url: str, tmp_path: Path) -> None:
    env = roam_env(**{KEY_ENV: secrets.token_hex(32)})
    a = _device(tmp_path / "a", "laptop", remote_url, env)
    b = _device(tmp_path / "b", "desktop", remote_url, env)
    (tmp_path / "a" / "SOUL.md").write_text("soul v1\n")
    (tmp_path / "a" / "memories").mkdir()
    (tmp_path / "a" / "memories" / "MEMORY.md").write_text("remember this\n")

    assert "founded" in _ok(a("init", "--create-remote"))
    _ok(a("push"))
    assert "joined" in _ok(b("init"))
    _ok(b("pull", "--apply"))
    assert (tmp_path / "b" / "SOUL.md").read_text() == "soul v1\n"
    assert (tmp_path / "b" / "memories" / "MEMORY.md").read_text() == "remember this\n"

    # B answers with an edit; A is now behind and may not push until it pulls (exit 2).
    (tmp_path / "b" / "SOUL.md").write_text("soul v2 from the desktop\n")
    _ok(b("push"))
    (tmp_path / "a" / "memories" / "MEMORY.md").write_text("laptop note\n")
    behind = a("push")
    assert behind.returncode == 2, (behind.stdout, behind.stderr)
    _ok(a("pull", "--apply"))
    assert (tmp_path / "a" / "SOUL.md").read_text() == "soul v2 from the desktop\n"
    _ok(a("push"))
    _ok(b("pull", "--apply"))
    assert (tmp_path / "b" / "memories" / "MEMORY.md").read_text() == "laptop note\n"

    # Every object that went through git (the mirror holds them all) is ciphertext.
    mirror = tmp_path / "a" / "roam" / "git-mirror"
    everything = subprocess.run(
        ["git", f"--git-dir={mirror}", "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True, check=True, timeout=60).stdout
    for plaintext in (b"soul v1", b"soul v2", b"remember this", b"laptop note",
                      env[KEY_ENV].encode()):
        assert plaintext not in everything

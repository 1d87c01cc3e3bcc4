"""Two devices through the real `roam` CLI (subprocesses) on each git transport."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

from support.cli import roam_env
from support.flow import Roam, configured_device, exchange

KEY_ENV = "ROAM_ARCHIVE_KEY"



def _device(root: Path, name: str, url: str, env: dict[str, str]) -> Roam:
    return configured_device(root, {"device_name": name, "backend": "git", "git_remote": url},
                             env)


def test_two_devices_push_and_pull_through_git(remote_url: str, tmp_path: Path) -> None:
    env = roam_env(**{KEY_ENV: secrets.token_hex(32)})
    a = _device(tmp_path / "a", "laptop", remote_url, env)
    b = _device(tmp_path / "b", "desktop", remote_url, env)
    exchange(a, b, tmp_path / "a", tmp_path / "b")

    # Every object that went through git (the mirror holds them all) is ciphertext.
    mirror = tmp_path / "a" / "roam" / "git-mirror"
    everything = subprocess.run(
        ["git", f"--git-dir={mirror}", "cat-file", "--batch-all-objects", "--batch"],
        capture_output=True, check=True, timeout=60).stdout
    for plaintext in (b"soul v1", b"soul v2", b"remember this", b"laptop note",
                      env[KEY_ENV].encode()):
        assert plaintext not in everything

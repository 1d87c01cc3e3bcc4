"""Two devices through the real `roam` CLI (subprocesses) on each git transport."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

from support.cli import roam_env
from support.flow import Roam, configured_device, exchange, ok
from support.git_remotes import bare_repo, file_url

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


def test_a_home_over_the_host_s_push_limit_travels_in_parts(tmp_path: Path) -> None:
    """A host that takes 1.5 MiB a push (GitHub takes 2 GiB): the first push goes in parts."""
    repo = bare_repo(tmp_path / "remote")
    subprocess.run(["git", f"--git-dir={repo}", "config", "receive.maxInputSize",
                    str(1536 * 1024)], check=True, timeout=30)
    env = roam_env(**{KEY_ENV: secrets.token_hex(32)})
    a = _device(tmp_path / "a", "laptop", file_url(repo), env)
    assets = tmp_path / "a" / "skills" / "media" / "assets"
    assets.mkdir(parents=True)
    blobs = {f"clip{n}.bin": secrets.token_bytes(600 * 1024) for n in range(6)}
    for name, data in blobs.items():
        (assets / name).write_bytes(data)
    ok(a("config", "set", "git_max_object_mb", "1"))
    ok(a("init", "--create-remote"))
    # one push of 3.5 MiB: the host refuses it, the line says which setting to lower
    refused = a("push")
    assert refused.returncode != 0 and "git_max_push_mb" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    ok(a("config", "set", "git_max_push_mb", "1"))
    ok(a("push"))
    b = _device(tmp_path / "b", "desktop", file_url(repo), env)
    ok(b("init"))
    ok(b("pull", "--apply"))
    got = tmp_path / "b" / "skills" / "media" / "assets"
    assert {name: (got / name).read_bytes() for name in blobs} == blobs

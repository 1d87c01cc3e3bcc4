"""Two devices through the real `roam` CLI (subprocesses) on each git transport."""

from __future__ import annotations

import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from support.cli import roam_env
from support.flow import Roam, configured_device, exchange, ok
from support.git_remotes import bare_repo, file_url, smart_http

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


#: What the test's hosts take in one push, as GitHub takes 2 GiB.
PUSH_LIMIT = 1536 * 1024


@pytest.fixture(params=["receive.maxInputSize", "HTTP 413"])
def limited_remote(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A remote refusing a push over PUSH_LIMIT: git's own limit, or a web server's 413."""
    if request.param == "receive.maxInputSize":
        repo = bare_repo(tmp_path / "remote")
        subprocess.run(["git", f"--git-dir={repo}", "config", "receive.maxInputSize",
                        str(PUSH_LIMIT)], check=True, timeout=30)
        yield file_url(repo)
        return
    root = tmp_path / "served"
    repo = bare_repo(root)
    with smart_http(root, max_body=PUSH_LIMIT) as base:
        yield base + repo.name


def test_a_home_over_the_host_s_push_limit_travels_in_parts(limited_remote: str,
                                                            tmp_path: Path) -> None:
    """The first push of a home over the host's limit goes in parts once told to."""
    env = roam_env(**{KEY_ENV: secrets.token_hex(32)})
    a = _device(tmp_path / "a", "laptop", limited_remote, env)
    assets = tmp_path / "a" / "skills" / "media" / "assets"
    assets.mkdir(parents=True)
    blobs = {f"clip{n}.bin": secrets.token_bytes(600 * 1024) for n in range(6)}
    for name, data in blobs.items():
        (assets / name).write_bytes(data)
    ok(a("config", "set", "git_max_object_mb", "1"))
    ok(a("init", "--create-remote"))
    # one push of 3.5 MiB: the host refuses it, the line says which setting to lower
    refused = a("push")
    assert refused.returncode == 1 and "git_max_push_mb" in refused.stderr, refused.stderr
    assert "unreachable" not in refused.stderr and "Traceback" not in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    ok(a("config", "set", "git_max_push_mb", "1"))
    ok(a("push"))
    b = _device(tmp_path / "b", "desktop", limited_remote, env)
    ok(b("init"))
    ok(b("pull", "--apply"))
    got = tmp_path / "b" / "skills" / "media" / "assets"
    assert {name: (got / name).read_bytes() for name in blobs} == blobs

"""Two devices through the real `roam` CLI (subprocesses) on moto and on SeaweedFS."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path

import pytest

from support.cli import roam_env, run_roam
from support.flow import Roam, configured_device, exchange, ok
from support.s3_servers import S3Server

pytest_plugins = ("support.s3_servers",)

KEY_ENV = "ROAM_ARCHIVE_KEY"



def _device(root: Path, name: str, server: S3Server, bucket: str,
            env: dict[str, str]) -> Roam:
    return configured_device(root, {**server.settings(bucket), "device_name": name}, env)


def _env(server: S3Server, **extra: str) -> dict[str, str]:
    env = roam_env(**{KEY_ENV: secrets.token_hex(32), **server.env(), **extra})
    return {k: v for k, v in env.items() if not k.startswith("AWS_")}


@pytest.mark.slow
def test_two_devices_push_and_pull_through_s3(s3_server: S3Server, tmp_path: Path) -> None:
    bucket = s3_server.fresh_bucket(create=False)
    env = _env(s3_server)
    a = _device(tmp_path / "a", "laptop", s3_server, bucket, env)
    b = _device(tmp_path / "b", "desktop", s3_server, bucket, env)
    exchange(a, b, tmp_path / "a", tmp_path / "b")

    # Everything in the bucket is ciphertext, under the prefix, and no credential is on disk.
    client = s3_server.client()
    keys = [item["Key"] for page in client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket) for item in page.get("Contents", ())]
    assert keys and all(key.startswith("roam/") for key in keys)
    stored = b"".join(client.get_object(Bucket=bucket, Key=key)["Body"].read() for key in keys)
    for plaintext in (b"soul v1", b"soul v2", b"remember this", b"laptop note",
                      env[KEY_ENV].encode(), s3_server.secret_access_key.encode()):
        assert plaintext not in stored
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert s3_server.secret_access_key.encode() not in path.read_bytes(), path


def test_wrong_credentials_at_init_exit_1_with_one_line(seaweedfs_s3: S3Server,
                                                        tmp_path: Path) -> None:
    bucket = seaweedfs_s3.fresh_bucket()
    wrong = "not-the-secret-5e2b7a"
    env = _env(seaweedfs_s3, ROAM_S3_SECRET_ACCESS_KEY=wrong)
    roam = _device(tmp_path / "a", "laptop", seaweedfs_s3, bucket, env)
    _one_line_refusal(roam("init", "--create-remote"), bucket, wrong, env[KEY_ENV],
                      seaweedfs_s3.secret_access_key)


@pytest.mark.parametrize("command", [("push",), ("pull",), ("status",), ("doctor",)])
def test_wrong_credentials_later_exit_1_with_one_line(seaweedfs_s3: S3Server, tmp_path: Path,
                                                      command: tuple[str, ...]) -> None:
    bucket = seaweedfs_s3.fresh_bucket()
    good = _env(seaweedfs_s3)
    ok(_device(tmp_path / "a", "laptop", seaweedfs_s3, bucket, good)("init"))
    (tmp_path / "a" / "SOUL.md").write_text("soul\n")
    wrong = "not-the-secret-5e2b7a"
    env = {**good, "ROAM_S3_SECRET_ACCESS_KEY": wrong}
    result = run_roam("--home", str(tmp_path / "a"), *command, env=env, timeout=180)
    if command == ("doctor",):
        assert result.returncode == 1, (result.stdout, result.stderr)
        assert "SignatureDoesNotMatch" in result.stdout + result.stderr
        assert wrong not in result.stdout + result.stderr
        return
    _one_line_refusal(result, bucket, wrong, good[KEY_ENV], seaweedfs_s3.secret_access_key)


def _one_line_refusal(result: subprocess.CompletedProcess[str], bucket: str,
                      *secrets_: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "SignatureDoesNotMatch" in lines[0] and bucket in lines[0], lines[0]
    for secret in secrets_:
        assert secret not in result.stderr + result.stdout

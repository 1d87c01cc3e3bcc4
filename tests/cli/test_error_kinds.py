"""Errors say what they are: key, configuration and network failures each have a prefix."""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path

from campaign.harness import settings_yaml

from roam_core.errors import describe_os_error
from support.cli import roam_env, run_roam


def test_a_wrong_length_key_is_a_key_error_not_an_unreachable_remote(local_home) -> None:
    assert run_roam("--home", str(local_home.root), "init", env=local_home.env).returncode == 0
    short = base64.b64encode(secrets.token_bytes(16)).decode()
    result = run_roam("--home", str(local_home.root), "status",
                      env=roam_env(ROAM_ARCHIVE_KEY=short))
    assert result.returncode == 1
    assert "roam: key error: ROAM_ARCHIVE_KEY decodes to 16 bytes" in result.stderr
    assert "unreachable" not in result.stderr


def test_a_hex_key_of_the_wrong_length_says_so(local_home) -> None:
    result = run_roam("--home", str(local_home.root), "init",
                      env=roam_env(ROAM_ARCHIVE_KEY=secrets.token_hex(31)))
    assert result.returncode == 1
    assert "looks like a hex key of 62 characters; a hex key is exactly 64" in result.stderr


def test_a_missing_setting_is_a_configuration_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text(settings_yaml("desk", {"backend": "s3"}))
    env = roam_env(ROAM_ARCHIVE_KEY=secrets.token_hex(32))
    result = run_roam("--home", str(home), "init", env=env)
    assert result.returncode == 1
    assert result.stderr.startswith("roam: configuration error: backend s3 needs the setting "
                                    "s3_bucket"), result.stderr


def test_a_closed_port_is_a_network_error(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    settings = {"backend": "s3", "s3_bucket": "roam-test", "s3_region": "us-east-1",
                "s3_endpoint_url": "http://127.0.0.1:9"}
    (home / "config.yaml").write_text(settings_yaml("desk", settings))
    env = roam_env(ROAM_ARCHIVE_KEY=secrets.token_hex(32), ROAM_S3_ACCESS_KEY_ID="a",
                   ROAM_S3_SECRET_ACCESS_KEY="b")
    result = run_roam("--home", str(home), "init", env=env)
    assert result.returncode == 1
    assert "remote unreachable" in result.stderr, result.stderr
    assert result.stderr.count("remote unreachable") == 1


def test_os_errors_print_without_empty_parentheses() -> None:
    full = OSError(28, os.strerror(28))
    assert describe_os_error(full) == "No space left on device"
    assert describe_os_error(OSError(13, os.strerror(13), "/x")) == "Permission denied: /x"

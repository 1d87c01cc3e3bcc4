"""`CoreSettings`: core's settings as one frozen, typed record, built once per operation."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from roam_core.engine.session import Session
from roam_core.errors import ConfigError
from roam_core.home import resolve_home
from roam_core.settings import DEFAULTS, CoreSettings, load_settings


def _home(tmp_path: Path, block: str) -> Path:
    root = tmp_path / ".hermes"
    root.mkdir()
    (root / "config.yaml").write_text(
        "plugins:\n  entries:\n    roam:\n      settings:\n"
        + "".join(f"        {line}\n" for line in block.splitlines()))
    return root


def test_the_record_is_typed_from_the_settings_block(tmp_path: Path) -> None:
    root = _home(tmp_path, "backend: s3\ndevice_name: desk\nsync_cron: true\n"
                           "auto_push: 'true'\nredact_env_values: false\nmax_file_mb: 7\n")
    core = CoreSettings.build(load_settings(root))
    assert (core.backend, core.device_name) == ("s3", "desk")
    assert core.sync_cron is True and core.sync_sessions is False
    assert core.auto_push is False  # only a literal true switches: text "true" does not
    assert core.redact_env_values is False
    assert core.number("max_file_mb") == 7.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        core.sync_cron = False  # type: ignore[misc]


def test_defaults_fill_what_the_block_leaves_out(tmp_path: Path) -> None:
    core = CoreSettings.build(load_settings(_home(tmp_path, "device_name: ''\n")))
    assert core.backend == DEFAULTS["backend"] and core.device_name is None
    assert core.redact_env_values is True and core.unknown == ()
    assert core.number("backup_keep") == DEFAULTS["backup_keep"]


def test_unknown_keys_are_reported_and_known_plugin_names_are_not(tmp_path: Path) -> None:
    settings = load_settings(_home(tmp_path, "local_dir: /x\nsync_crom: true\n"))
    assert CoreSettings.build(settings).unknown == ("local_dir", "sync_crom")
    assert CoreSettings.build(settings, known={"local_dir"}).unknown == ("sync_crom",)


def test_a_bad_number_fails_only_where_it_is_read(tmp_path: Path) -> None:
    core = CoreSettings.build(load_settings(_home(tmp_path, "sessions_max_mb: lots\n")))
    assert core.sync_sessions is False  # the record itself builds
    with pytest.raises(ConfigError, match="sessions_max_mb"):
        core.number("sessions_max_mb")


def test_an_operation_reads_the_record_of_its_home(tmp_path: Path) -> None:
    root = _home(tmp_path, "device_name: laptop\nsync_sessions: true\n")
    session = Session.open(resolve_home(root), "status")
    try:
        assert session.core.device_name == "laptop" and session.core.sync_sessions is True
        assert session.default_name == "laptop"
    finally:
        session.close()

"""roam's settings block in config.yaml: every malformed file is one `ConfigError` line."""

from __future__ import annotations

from pathlib import Path

import pytest

from roam_core.errors import ConfigError
from roam_core.settings import DEFAULTS, load_settings, number, write_settings

DEEP = "a: " + "[" * 600 + "]" * 600 + "\n"  # past the interpreter's recursion limit


def test_missing_config_gives_the_defaults(tmp_path: Path) -> None:
    assert load_settings(tmp_path) == DEFAULTS


def test_settings_are_read_and_written_keeping_comments(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("# mine\nmodel: {default: m}\n")
    write_settings(tmp_path, {"device_name": "laptop"})
    assert load_settings(tmp_path)["device_name"] == "laptop"
    assert (tmp_path / "config.yaml").read_text().startswith("# mine\n")


@pytest.mark.parametrize("reader", [load_settings,
                                    lambda root: write_settings(root, {"backend": "local"})])
@pytest.mark.parametrize(("text", "message"), [
    ("a: [1,\n", "config.yaml:2: "),
    (DEEP, "config.yaml: nested too deeply"),
])
def test_malformed_config_is_one_config_error(tmp_path: Path, reader: object, text: str,
                                              message: str) -> None:
    (tmp_path / "config.yaml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        reader(tmp_path)  # type: ignore[operator]
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("key", ["ROAM_ARCHIVE_KEY", "ROAM_S3_SECRET_ACCESS_KEY",
                                 "ROAM_DISCORD_BOT_TOKEN", "api_key"])
def test_config_set_refuses_to_write_a_secret(tmp_path: Path, key: str,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    from roam_core.cli.main import main

    value = "canary-secret-value-4e1f0b2c9d"
    assert main(["--home", str(tmp_path), "config", "set", key, value]) == 1
    err = capsys.readouterr().err
    assert "roam never writes secrets" in err and value not in err
    assert not (tmp_path / "config.yaml").exists()


def test_config_set_still_writes_ordinary_settings(tmp_path: Path) -> None:
    from roam_core.cli.main import main

    assert main(["--home", str(tmp_path), "config", "set", "device_name", "laptop"]) == 0
    assert load_settings(tmp_path)["device_name"] == "laptop"


@pytest.mark.parametrize(("key", "value", "message"), [
    ("max_file_mb", "lots", "setting max_file_mb must be a number of at least 0, not 'lots'"),
    ("backup_keep", "-1", "must be a number of at least 0"),
    ("push_debounce_seconds", ".inf", "must be a number of at least 0"),
    ("sessions_max_mb", "true", "must be a number"),
    ("auto_push", "tru", "setting auto_push is a switch: true or false, not 'tru'"),
])
def test_config_set_refuses_a_value_the_setting_cannot_take(
        tmp_path: Path, key: str, value: str, message: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    from roam_core.cli.main import main

    assert main(["--home", str(tmp_path), "config", "set", key, value]) == 1
    assert message in capsys.readouterr().err
    assert not (tmp_path / "config.yaml").exists()


def test_number_reads_a_numeric_setting() -> None:
    assert number({"max_file_mb": 2.5}, "max_file_mb") == 2.5
    assert number({"max_file_mb": "7"}, "max_file_mb") == 7
    assert number({"max_file_mb": None}, "max_file_mb") == DEFAULTS["max_file_mb"]
    with pytest.raises(ConfigError, match="max_file_mb"):
        number({"max_file_mb": [1]}, "max_file_mb")

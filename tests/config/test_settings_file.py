"""roam's settings block in config.yaml: every malformed file is one `ConfigError` line."""

from __future__ import annotations

from pathlib import Path

import pytest

from roam_core.errors import ConfigError
from roam_core.settings import DEFAULTS, load_settings, write_settings

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

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

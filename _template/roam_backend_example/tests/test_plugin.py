"""roam finds the installed plugin through its entry point, and uses it end to end."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from roam_core.plugin import ConfigError, PluginContext, PluginManager


def _roam(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ROAM_", "HERMES_"))}
    env["ROAM_ARCHIVE_KEY"] = "00" * 32
    return subprocess.run([sys.executable, "-m", "roam_core.cli.main", "--home", str(home),
                           *args], env=env, capture_output=True, text=True, timeout=120)


def test_the_entry_point_registers_the_backend() -> None:
    backends = PluginManager().storage_backends()
    assert "example" in backends
    assert backends["example"].settings[0].name == "example_path"


def test_missing_setting_is_a_one_line_config_error(tmp_path: Path) -> None:
    plugin = PluginManager().backend("example")
    context = PluginContext(home=tmp_path, state_dir=tmp_path / "roam", secret=lambda _: None)
    with pytest.raises(ConfigError, match="example_path"):
        plugin.factory({}, context)


def test_roam_lists_and_uses_it(tmp_path: Path) -> None:
    listed = _roam("backends", "list", home=tmp_path)
    assert listed.returncode == 0 and "example" in listed.stdout, listed.stderr
    desktop, laptop = tmp_path / "desktop", tmp_path / "laptop"
    store = tmp_path / "store.sqlite"
    for home in (desktop, laptop):
        home.mkdir()
        for key, value in (("backend", "example"), ("example_path", str(store)),
                           ("device_name", home.name)):
            assert _roam("config", "set", key, value, home=home).returncode == 0
    (desktop / "SOUL.md").write_text("example soul\n")
    for args, home in ((("init", "--create-remote"), desktop), (("push",), desktop),
                       (("init",), laptop), (("pull", "--apply"), laptop)):
        result = _roam(*args, home=home)
        assert result.returncode == 0, result.stdout + result.stderr
    assert (laptop / "SOUL.md").read_text() == "example soul\n"

"""`roam config set|unset|list`: a typed registry of core's and every plugin's settings."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

from roam_core.hookspecs import hookimpl
from roam_core.manager import get_manager
from roam_core.settings import registry
from roam_core.types import BackendPlugin, Setting
from support.cli import run_roam


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").write_text("# mine\nmodel: x\n")
    return home


def test_unknown_key_is_refused_with_the_closest_match(tmp_path: Path) -> None:
    home = _home(tmp_path)
    result = run_roam("config", "set", "backnd", "s3", "--home", str(home))
    assert result.returncode == 1
    assert "unknown setting 'backnd'" in result.stderr
    assert "did you mean 'backend'?" in result.stderr
    assert "backnd" not in (home / "config.yaml").read_text()


def test_backend_must_be_installed(tmp_path: Path) -> None:
    home = _home(tmp_path)
    result = run_roam("config", "set", "backend", "nosuch", "--home", str(home))
    assert result.returncode == 1
    assert "no backend named 'nosuch' is installed" in result.stderr
    assert "local" in result.stderr  # the installed ones are named
    assert "nosuch" not in (home / "config.yaml").read_text()
    assert run_roam("config", "set", "backend", "s3", "--home", str(home)).returncode == 0


def test_values_are_type_checked(tmp_path: Path) -> None:
    home = _home(tmp_path)
    for key, value in (("backup_keep", "many"), ("auto_push", "maybe"),
                       ("mirror_sinks", "[nosuch]"), ("s3_prefix", "[1, 2]")):
        result = run_roam("config", "set", key, value, "--home", str(home))
        assert result.returncode == 1, (key, result.stderr)
        assert result.stderr.startswith("roam: configuration error: "), result.stderr
        assert key not in (home / "config.yaml").read_text()


def test_plugin_settings_set_unset_and_list(tmp_path: Path) -> None:
    home = _home(tmp_path)
    assert run_roam("config", "set", "s3_bucket", "my-bucket", "--home", str(home)).returncode == 0
    assert run_roam("config", "set", "backup_keep", "9", "--home", str(home)).returncode == 0
    rows = {row["name"]: row for row in json.loads(
        run_roam("config", "list", "--json", "--home", str(home)).stdout)}
    assert rows["s3_bucket"] == {"name": "s3_bucket", "value": "my-bucket", "default": None,
                                 "source": "config.yaml", "plugin": "s3",
                                 "help": rows["s3_bucket"]["help"]}
    assert rows["backup_keep"]["value"] == 9 and rows["backup_keep"]["default"] == 5
    assert rows["backup_keep"]["plugin"] == "core"
    assert rows["max_file_mb"]["source"] == "default"
    text = run_roam("config", "list", "--home", str(home)).stdout
    assert "s3_bucket" in text and "config.yaml" in text
    assert run_roam("config", "unset", "backup_keep", "--home", str(home)).returncode == 0
    assert "backup_keep" not in (home / "config.yaml").read_text()
    assert (home / "config.yaml").read_text().startswith("# mine\nmodel: x\n")


def test_unset_removes_a_typo_written_by_hand(tmp_path: Path) -> None:
    home = _home(tmp_path)
    (home / "config.yaml").write_text(
        "plugins:\n  entries:\n    roam:\n      settings:\n        backnd: s3\n")
    listed = run_roam("config", "list", "--home", str(home))
    assert "backnd" in listed.stdout and "unknown" in listed.stdout
    assert run_roam("config", "unset", "backnd", "--home", str(home)).returncode == 0
    assert "backnd" not in (home / "config.yaml").read_text()
    missing = run_roam("config", "unset", "nothing_here", "--home", str(home))
    assert missing.returncode == 1 and "not set" in missing.stderr


class _Shadowing:
    """A backend plugin that tries to declare core's `backend` setting."""

    @staticmethod
    @hookimpl
    def roam_storage_backends() -> Iterator[BackendPlugin]:
        yield BackendPlugin(name="shadow", summary="declares core's setting",
                            factory=lambda settings, context: None,  # type: ignore
                            settings=(Setting("backend", "mine now", default="shadow"),
                                      Setting("shadow_dir", "its own", default="/x")))


def test_a_plugin_cannot_shadow_a_core_setting() -> None:
    get_manager().register(_Shadowing, name="shadow")
    found = registry(get_manager())
    assert found.settings["backend"].plugin == "core"
    assert found.settings["backend"].default == "local"
    assert found.settings["shadow_dir"].plugin == "shadow"
    assert any("shadow" in problem and "backend" in problem for problem in found.problems)


def test_the_operation_deadline_is_a_setting_and_says_a_rerun_resumes(local_home) -> None:
    home, env = str(local_home.root), local_home.env
    assert run_roam("--home", home, "init", env=env).returncode == 0
    (local_home.root / "SOUL.md").write_text("me\n")
    limit = run_roam("--home", home, "config", "set", "operation_timeout_seconds", "0")
    assert limit.returncode == 0
    ran_out = run_roam("--home", home, "push", env=env)
    assert ran_out.returncode == 1
    assert "push ran out of time after 0 s (operation_timeout_seconds); run roam push again " \
           "to resume" in ran_out.stderr, ran_out.stderr
    assert run_roam("--home", home, "config", "unset", "operation_timeout_seconds").returncode == 0
    pushed = run_roam("--home", home, "push", env=env)
    assert pushed.returncode == 0 and "pushed generation 1" in pushed.stdout, pushed.stderr


def test_config_help_lists_core_and_plugin_settings() -> None:
    text = run_roam("config", "set", "--help").stdout
    assert re.search(r"\n  backend +core +where the encrypted store lives", text), text
    assert re.search(r"\n  s3_bucket +s3 +the bucket that holds the store", text)
    assert re.search(r"\n  local_dir +local ", text)

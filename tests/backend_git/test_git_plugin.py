"""Registration, settings, identity and lazy loading of the git backend."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from roam_backend_git.backend import GitBackend
from roam_backend_git.config import (
    is_ssh_url,
    parse_settings,
    redact_text,
    redact_url,
    url_has_credentials,
)
from roam_core.errors import ConfigError, UserError
from roam_core.manager import get_manager
from roam_core.types import PluginContext


def _context(tmp_path: Path) -> PluginContext:
    return PluginContext(home=tmp_path, state_dir=tmp_path / "roam", secret=lambda _n: None)


def test_the_git_backend_is_registered_with_its_settings() -> None:
    plugin = get_manager().backend("git")
    names = {setting.name: setting for setting in plugin.settings}
    assert set(names) == {"git_remote", "git_branch", "git_transfer_timeout",
                          "git_max_object_mb", "git_max_push_mb"}
    assert names["git_remote"].required
    assert names["git_branch"].default == "roam"
    assert names["git_transfer_timeout"].default == 600
    assert names["git_max_object_mb"].default == 50
    assert names["git_max_push_mb"].default == 1024  # under GitHub's 2 GiB a push
    assert not any(setting.secret for setting in plugin.settings)


def test_factory_builds_without_touching_disk_or_network(tmp_path: Path) -> None:
    plugin = get_manager().backend("git")
    backend = plugin.factory({"git_remote": "https://127.0.0.1:9/none.git"}, _context(tmp_path))
    assert isinstance(backend, GitBackend)
    assert backend.mirror.path == tmp_path / "roam" / "git-mirror"
    assert not (tmp_path / "roam").exists()
    assert backend.identity() == "https://127.0.0.1:9/none.git#roam"


def test_the_mirror_is_private(tmp_path: Path) -> None:
    from support.git_remotes import bare_repo, file_url

    plugin = get_manager().backend("git")
    url = file_url(bare_repo(tmp_path / "remote"))
    backend = plugin.factory({"git_remote": url}, _context(tmp_path))
    assert backend.read_ref("HEAD") is None
    assert (tmp_path / "roam" / "git-mirror").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("settings,error", [
    ({}, UserError),
    ({"git_remote": "  "}, UserError),
    ({"git_remote": "--upload-pack=touch /tmp/x"}, ConfigError),
    ({"git_remote": "x", "git_branch": "bad..name"}, ConfigError),
    ({"git_remote": "x", "git_branch": "-x"}, ConfigError),
    ({"git_remote": "x", "git_transfer_timeout": "soon"}, ConfigError),
    ({"git_remote": "x", "git_transfer_timeout": 0}, ConfigError),
    ({"git_remote": "x", "git_max_object_mb": 1.5}, ConfigError),
    ({"git_remote": "x", "git_max_push_mb": "lots"}, ConfigError),
    ({"git_remote": "x", "git_max_push_mb": 2.5}, ConfigError),
    ({"git_remote": "x", "git_max_object_mb": 20, "git_max_push_mb": 10}, ConfigError),
])
def test_bad_settings_are_one_line_user_errors(settings: dict, error: type,
                                               tmp_path: Path) -> None:
    with pytest.raises(error) as caught:
        parse_settings(settings, tmp_path)
    assert "\n" not in str(caught.value)


def test_settings_defaults_and_relative_paths(tmp_path: Path) -> None:
    parsed = parse_settings({"git_remote": "stores/me.git", "git_transfer_timeout": "30",
                             "git_max_object_mb": "20", "git_branch": "sync/roam"}, tmp_path)
    assert parsed.remote == str(tmp_path / "stores" / "me.git")
    assert parsed.transfer_timeout == 30 and parsed.max_object_size == 20 * 1024 * 1024
    assert parsed.branch == "sync/roam"
    assert parsed.max_push_size == 1024 * 1024 * 1024
    # an object larger than the default push: one push still carries it whole
    assert parse_settings({"git_remote": "x", "git_max_object_mb": "2000"},
                          tmp_path).max_push_mb == 2000
    assert parse_settings({"git_remote": "git@host:me/s.git"}, tmp_path).remote == \
        "git@host:me/s.git"


@pytest.mark.parametrize("url,public", [
    ("https://user:tok3n@github.com/me/s.git", "https://github.com/me/s.git"),
    ("https://ghp_tok3n@github.com/me/s.git", "https://github.com/me/s.git"),
    ("http://u:p@127.0.0.1:8080/s.git", "http://127.0.0.1:8080/s.git"),
    ("ssh://git@host:2222/me/s.git", "ssh://git@host:2222/me/s.git"),
    ("ssh://git:pw@host/me/s.git", "ssh://git@host/me/s.git"),
    ("git@github.com:me/s.git", "git@github.com:me/s.git"),
    ("file:///srv/s.git", "file:///srv/s.git"),
    ("/srv/s.git", "/srv/s.git"),
])
def test_identity_strips_credentials(url: str, public: str, tmp_path: Path) -> None:
    assert redact_url(url) == public
    backend = GitBackend(parse_settings({"git_remote": url}, tmp_path), tmp_path / "m")
    assert backend.identity() == f"{public}#roam"
    assert "tok3n" not in backend.identity() and ":p@" not in backend.identity()
    assert url_has_credentials(url) == (url != public)


def test_free_text_is_redacted() -> None:
    url = "https://alice:pw-123@example.org/s.git"
    text = f"fatal: unable to access '{url}/': boom; also https://tok@x.org/y"
    cleaned = redact_text(text, url)
    assert "pw-123" not in cleaned and "tok@" not in cleaned
    assert "https://example.org/s.git" in cleaned


def test_ssh_urls_are_recognised() -> None:
    assert is_ssh_url("git@github.com:me/s.git")
    assert is_ssh_url("ssh://git@host/s.git")
    assert is_ssh_url("host.example:s.git")
    assert not is_ssh_url("https://host/s.git")
    assert not is_ssh_url("/srv/s.git")
    assert not is_ssh_url("file:///srv/s.git")


def test_loading_the_plugin_imports_neither_the_backend_nor_gitpython() -> None:
    probe = ("import sys, roam_backend_git.plugin as p\n"
             "list(p.roam_storage_backends())\n"
             "print('roam_backend_git.backend' in sys.modules, 'git' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    assert out == ["False", "False"]

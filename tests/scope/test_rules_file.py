"""roam/rules.yaml: precedence, profile exclusion, host keys, and every kind of mistake."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from scope_helpers import write

from roam_core.errors import ConfigError
from roam_core.scope import ScopeModel
from roam_core.scope.rulesfile import TEMPLATE, parse_rules
from roam_core.types import Scope


def rules(root: Path, text: str) -> Path:
    return write(root, "roam/rules.yaml", text)


def test_user_rules_come_before_defaults(tmp_path: Path,
                                         scope_of: Callable[..., ScopeModel]) -> None:
    rules(tmp_path, "local:\n  - skills/experimental/\nshared:\n  - hooks/\n  - notes.txt\n")
    model = scope_of(tmp_path)
    assert model.explain("skills/experimental/x/SKILL.md")[0] is Scope.LOCAL
    assert "rules.yaml:2" in model.explain("skills/experimental/x/SKILL.md")[1]
    assert model.classify("skills/other/SKILL.md") is Scope.SHARED
    assert model.classify("hooks/on_start.py") is Scope.SHARED
    assert model.classify("notes.txt") is Scope.SHARED
    assert model.optional_items()["hooks"] is True


def test_first_user_rule_wins_in_written_order(tmp_path: Path,
                                               scope_of: Callable[..., ScopeModel]) -> None:
    rules(tmp_path, "ignored: [hooks/__pycache__/]\nshared: [hooks/]\n")
    model = scope_of(tmp_path)
    assert model.classify("hooks/__pycache__/h.pyc") is Scope.IGNORED
    assert model.classify("hooks/h.py") is Scope.SHARED


def test_user_rules_cannot_beat_the_hard_rules(tmp_path: Path,
                                               scope_of: Callable[..., ScopeModel]) -> None:
    rules(tmp_path, "shared: [profiles/work/, skills/]\n")
    model = scope_of(tmp_path)
    assert model.classify("profiles/work/.env") is Scope.IGNORED
    assert model.classify("profiles/work/auth.json") is Scope.IGNORED
    assert model.classify("skills/x/.env") is Scope.IGNORED
    assert model.classify("profiles/work/sessions/s.jsonl") is Scope.SHARED  # user's choice


def test_excluding_a_profile(tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    for name in ("personal", "work"):
        write(tmp_path, f"profiles/{name}/SOUL.md")
    rules(tmp_path, "local: [profiles/work/]\n")
    model = scope_of(tmp_path)
    assert model.profiles() == [("personal", False), ("work", True)]
    assert model.classify("profiles/work/SOUL.md") is Scope.LOCAL
    assert model.classify("profiles/personal/SOUL.md") is Scope.SHARED
    assert [entry.rel for entry in model.walk()] == ["profiles/personal/SOUL.md"]


def test_host_keys_are_read(tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    rules(tmp_path, "host_keys:\n  - display.skin\n  - 'mcp_servers.*.args'\n")
    assert scope_of(tmp_path).host_keys == ("display.skin", "mcp_servers.*.args")


def test_the_template_parses_and_changes_nothing(tmp_path: Path,
                                                 scope_of: Callable[..., ScopeModel]) -> None:
    parsed = parse_rules(TEMPLATE, "rules.yaml")
    assert parsed.rules == [] and parsed.host_keys == []
    rules(tmp_path, TEMPLATE)
    assert scope_of(tmp_path).classify("hooks/x.py") is Scope.IGNORED


def test_empty_file_and_empty_lists(tmp_path: Path) -> None:
    assert parse_rules("", "r").rules == []
    assert parse_rules("# only a comment\n", "r").rules == []
    assert parse_rules("shared:\nlocal: []\n", "r").rules == []


@pytest.mark.parametrize(("text", "line", "message"), [
    ("shared: [hooks/\nlocal: x\n", 2, "expected ','"),
    ("shared:\n  - hooks/\nsharde:\n  - x\n", 3, "unknown key 'sharde'"),
    ("local: profiles/work/\n", 1, "must be a list"),
    ("shared:\n  - hooks/\n  - {a: 1}\n", 3, "string pattern"),
    ("ignored:\n  - 12\n", 2, "string pattern"),
    ("- a\n- b\n", 1, "expected a mapping"),
    ("local: [a]\nlocal: [b]\n", 2, "given twice"),
    ("local:\n  - /etc/\n", 2, "relative to the home"),
    ("local:\n  - a/../b\n", 2, "'..' segment"),
    ("shared:\n  - hooks/\n  - roam/\n", 3, "refusing to share 'roam/'"),
    ("shared:\n  - roam/state.json\n", 2, "roam's own state"),
    ("shared:\n  - .env\n", 2, "refusing to share '.env': it would share .env"),
    ("shared:\n  - auth.json*\n", 2, "credentials never travel"),
    ("shared:\n  - profiles/*/.env\n", 2, "credentials never travel"),
    ("shared:\n  - '**'\n", 2, "refusing to share '\\*\\*'"),
    ("shared:\n  - '*'\n", 2, "it would share .env"),
    ("host_keys:\n  - 'display..skin'\n", 2, "dotted key path"),
    ("host_keys: display.skin\n", 1, "must be a list"),
    ("shared:\n  - hooks/\n  - 'skills/[z-a]*'\n", 3, "bad character range z-a"),
])
def test_mistakes_name_file_and_line(tmp_path: Path, scope_of: Callable[..., ScopeModel],
                                     text: str, line: int, message: str) -> None:
    path = rules(tmp_path, text)
    with pytest.raises(ConfigError, match=message) as caught:
        scope_of(tmp_path)
    assert str(caught.value).startswith(f"{path}:{line}: ")
    assert "\n" not in str(caught.value)


def test_folder_rules_around_credentials_are_accepted(tmp_path: Path,
                                                     scope_of: Callable[..., ScopeModel]) -> None:
    rules(tmp_path, "shared:\n  - profiles/*/\n  - skills/**\n  - roam/installed-plugins.json\n")
    model = scope_of(tmp_path)
    assert model.classify("profiles/a/.env") is Scope.IGNORED
    assert model.classify("profiles/a/anything.txt") is Scope.SHARED


def test_not_utf8_rules_file(tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    rules(tmp_path, b"shared: [\xff]\n")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"rules\.yaml: cannot read"):
        scope_of(tmp_path)

from __future__ import annotations

import json
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from roam_core.errors import PluginError
from roam_core.hookspecs import hookimpl
from roam_core.manager import PluginManager, hook_names
from roam_core.testing.memory import MemoryBackend
from roam_core.types import BackendPlugin
from support.cli import roam_env, run_roam


def _fake_dist(root: Path, name: str, module_source: str, group_line: str) -> None:
    (root / f"{name}.py").write_text(textwrap.dedent(module_source))
    info = root / f"{name}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[roam.plugins]\n{group_line}\n")


GOOD = '''
"""A third-party backend for tests."""
from roam_core.hookspecs import hookimpl
from roam_core.types import BackendPlugin
from roam_core.testing.memory import MemoryBackend

@hookimpl
def roam_storage_backends():
    yield BackendPlugin(name="thirdparty", summary="made by someone else",
                        factory=lambda settings, context: MemoryBackend())
'''


def test_installed_backends_are_listed_with_distributions() -> None:
    result = run_roam("backends", "list", "--json")
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    for name, dist in (("local", "roam-backend-local"), ("s3", "roam-backend-s3"),
                       ("git", "roam-backend-git")):
        assert rows[name]["distribution"] == dist
        assert rows[name]["version"] == "0.1.0"
        assert rows[name]["status"] == "active"


def test_sinks_list_shows_discord() -> None:
    result = run_roam("sinks", "list")
    assert result.returncode == 0
    header, *lines = result.stdout.splitlines()
    assert header.split() == ["Name", "Distribution", "Version", "Status", "Summary"]
    assert any(line.split()[:2] == ["discord", "roam-sink-discord"] for line in lines)


def test_third_party_plugin_from_dist_info_is_listed(tmp_path: Path) -> None:
    _fake_dist(tmp_path, "thirdparty_roam", GOOD, "thirdparty = thirdparty_roam")
    env = roam_env(PYTHONPATH=str(tmp_path))
    result = run_roam("backends", "list", "--json", env=env)
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["thirdparty"]["distribution"] == "thirdparty_roam"
    assert rows["thirdparty"]["version"] == "1.2.3"
    assert rows["thirdparty"]["status"] == "active"


def test_plugin_that_raises_on_import_is_broken_and_listing_exits_zero(tmp_path: Path) -> None:
    _fake_dist(tmp_path, "crashy_roam", "raise RuntimeError('boom at import')\n",
               "crashy = crashy_roam")
    env = roam_env(PYTHONPATH=str(tmp_path))
    result = run_roam("plugins", "list", "--json", env=env)
    assert result.returncode == 0, result.stderr
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["crashy"]["status"] == "broken"
    assert "boom at import" in rows["crashy"]["error"]
    assert rows["local"]["status"] == "active"
    human = run_roam("backends", "list", env=env)
    assert human.returncode == 0
    assert any(line.split()[:1] == ["crashy"] and "broken" in line
               for line in human.stdout.splitlines())


def test_disabled_plugins_are_not_loaded(tmp_path: Path) -> None:
    env = roam_env(ROAM_DISABLED_PLUGINS="s3, git")
    rows = {row["name"]: row for row in json.loads(
        run_roam("plugins", "list", "--json", env=env).stdout)}
    assert rows["s3"]["status"] == "disabled"
    assert rows["git"]["status"] == "disabled"
    assert rows["local"]["status"] == "active"


def test_missing_backend_error_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROAM_DISABLED_PLUGINS", "s3")
    manager = PluginManager()
    with pytest.raises(PluginError, match="disabled"):
        manager.backend("s3")
    monkeypatch.setenv("ROAM_DISABLED_PLUGINS", "")
    manager = PluginManager()
    with pytest.raises(PluginError, match=r"pip install 'roam-core\[s3\]'"):
        manager._missing("backend", "s3", {})
    with pytest.raises(PluginError, match="no backend named 'nope'"):
        manager.backend("nope")


def test_duplicate_backend_names_fail_naming_both_distributions() -> None:
    class Twin:
        @hookimpl
        def roam_storage_backends(self) -> Iterator[BackendPlugin]:
            yield BackendPlugin("local", "an impostor", lambda s, c: MemoryBackend())

    manager = PluginManager()
    manager.register(Twin(), name="twin", distribution="twin-dist")
    with pytest.raises(PluginError) as caught:
        manager.storage_backends()
    assert "roam-backend-local" in str(caught.value) and "twin-dist" in str(caught.value)


def test_misspelled_hook_is_an_error() -> None:
    typo = types.ModuleType("typo")
    typo.roam_storage_backend = hookimpl(lambda: iter(()))  # type: ignore[attr-defined]
    manager = PluginManager()
    with pytest.raises(Exception, match="unknown hook"):
        manager.register(typo, name="typo")


def test_a_hook_that_raises_marks_the_plugin_broken_not_roam() -> None:
    class Faulty:
        @hookimpl
        def roam_storage_backends(self) -> Iterator[BackendPlugin]:
            raise RuntimeError("plugin bug")
            yield  # pragma: no cover

    manager = PluginManager()
    manager.register(Faulty(), name="faulty")
    assert "local" in manager.storage_backends()
    status = {info.name: info.status for info in manager.plugins()}
    assert status["faulty"] == "broken"


def test_scope_rule_providers_sorted_by_name_not_install_order() -> None:
    from roam_core.types import Scope, ScopeRule, ScopeRuleSet

    class Zed:
        @hookimpl
        def roam_scope_rules(self, home: Path) -> Iterator[ScopeRuleSet]:
            yield ScopeRuleSet("aaa-first", (ScopeRule("x/", Scope.LOCAL),))

    manager = PluginManager()
    manager.register(Zed(), name="zed")
    providers = [rule_set.provider for rule_set in manager.scope_rules(Path("."))]
    assert providers == sorted(providers) and "aaa-first" in providers


def test_empty_listing_message(monkeypatch: pytest.MonkeyPatch,
                               capsys: pytest.CaptureFixture[str]) -> None:
    from roam_core import manager as manager_module
    from roam_core.cli.main import main

    monkeypatch.setattr(manager_module, "_default", PluginManager(group="roam.nothing-here"))
    assert main(["sinks", "list"]) == 0
    assert capsys.readouterr().out.strip() == "No sinks installed."
    assert main(["backends", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_session_sinks_facade_and_missing_sink_hint() -> None:
    from roam_core.types import SinkPlugin

    class Echo:
        @hookimpl
        def roam_session_sinks(self) -> Iterator[SinkPlugin]:
            yield SinkPlugin("echo", "prints events", lambda settings, context: None)

    manager = PluginManager()
    manager.register(Echo(), name="echo-plugin", distribution="echo-dist")
    sinks = manager.session_sinks()
    assert {"echo", "discord"} <= set(sinks)
    assert manager.sink("echo").summary == "prints events"
    rows = {row.name: row for row in manager.listing("sink")}
    assert rows["echo"].distribution == "echo-dist"
    with pytest.raises(PluginError, match="no sink named 'slack'"):
        manager.sink("slack")


TYPO = '''
"""A plugin whose author misspelled the hook's name."""
from roam_core.hookspecs import hookimpl

@hookimpl
def roam_storage_backend():
    yield from ()
'''

UNKNOWN_ARGUMENT = '''
"""A plugin whose hook asks for an argument the spec does not offer."""
from roam_core.hookspecs import hookimpl

@hookimpl
def roam_scope_rules(home, colour):
    yield from ()
'''


@pytest.mark.parametrize("source", [TYPO, UNKNOWN_ARGUMENT], ids=["misspelled", "unknown-arg"])
def test_an_invalid_third_party_plugin_is_broken_and_every_command_works(
        tmp_path: Path, source: str) -> None:
    _fake_dist(tmp_path, "sloppy_roam", source, "sloppy = sloppy_roam")
    env = roam_env(PYTHONPATH=str(tmp_path))
    listed = run_roam("plugins", "list", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["sloppy"]["status"] == "broken"
    assert rows["sloppy"]["error"]
    assert rows["local"]["status"] == "active"
    for argv in (("backends", "list"), ("rules", "list"), ("status",)):
        result = run_roam(*argv, env=env)
        assert "Traceback" not in result.stderr, (argv, result.stderr)
        assert result.returncode in (0, 1), (argv, result.returncode, result.stderr)
        assert "Validation" not in result.stderr


def test_a_hook_may_take_a_subset_of_the_spec_arguments() -> None:
    from roam_core.types import Scope, ScopeRule, ScopeRuleSet

    class Homeless:
        @hookimpl
        def roam_scope_rules(self) -> Iterator[ScopeRuleSet]:
            yield ScopeRuleSet("homeless", (ScopeRule("x/", Scope.LOCAL),))

    manager = PluginManager()
    manager.register(Homeless(), name="homeless")
    providers = [rule_set.provider for rule_set in manager.scope_rules(Path("."))]
    assert "homeless" in providers
    assert {info.name: info.status for info in manager.plugins()}["homeless"] == "active"


def test_rules_listing_evaluates_providers_against_the_home(tmp_path: Path) -> None:
    from roam_core.types import ScopeRuleSet

    seen: list[Path] = []

    class Watcher:
        @hookimpl
        def roam_scope_rules(self, home: Path) -> Iterator[ScopeRuleSet]:
            seen.append(home)
            yield ScopeRuleSet("watcher", ())

    manager = PluginManager()
    manager.register(Watcher(), name="watcher")
    rows = {row.name: row for row in manager.listing("rules", home=tmp_path)}
    assert "watcher" in rows
    assert seen == [tmp_path]


def test_hook_kinds_come_from_the_hookspecs() -> None:
    from roam_core import hookspecs
    from roam_core.manager import hook_kinds

    kinds = hook_kinds()
    assert set(kinds) == set(hook_names())
    assert all(getattr(hookspecs, name).roam_kind == kind for name, kind in kinds.items())

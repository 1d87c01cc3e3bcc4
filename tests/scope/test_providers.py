"""Providers through the `roam_scope_rules` hook: strictest answer wins, order never matters."""

from __future__ import annotations

import types
from collections.abc import Callable
from pathlib import Path

import pytest
from scope_helpers import bare_manager, write

from roam_core.hookspecs import hookimpl
from roam_core.manager import PluginManager, get_manager
from roam_core.scope import ScopeModel, load_scope
from roam_core.scope.builtin import hermes_rules
from roam_core.types import Scope, ScopeRule, ScopeRuleSet


def provider(name: str, *rules: ScopeRule) -> types.ModuleType:
    seen_homes: list[Path] = []

    @hookimpl
    def roam_scope_rules(home: Path):  # type: ignore[no-untyped-def]
        seen_homes.append(home)
        yield ScopeRuleSet(name, rules, summary=f"{name} rules")

    module = types.ModuleType(f"{name}_rules")  # a plugin is a module, as entry points load
    module.roam_scope_rules = roam_scope_rules  # type: ignore[attr-defined]
    module.seen = seen_homes  # type: ignore[attr-defined]
    return module


def manager_with(*plugins: tuple[str, object]) -> PluginManager:
    manager = bare_manager()
    for name, plugin in plugins:
        manager.register(plugin, name)
    return manager


LOOSE = provider("aaa-loose", ScopeRule("extras/", Scope.SHARED, "extras"),
                 ScopeRule("skills/", Scope.SHARED, "skills again"),
                 ScopeRule("logs/", Scope.SHARED, "share logs"),
                 ScopeRule("**", Scope.SHARED, "everything"))
STRICT = provider("zzz-strict", ScopeRule("skills/private/", Scope.LOCAL, "private skills"),
                  ScopeRule("extras/big/", Scope.IGNORED, "too big"))


@pytest.mark.parametrize("order", [(LOOSE, STRICT), (STRICT, LOOSE)])
def test_strictest_answer_wins_whatever_the_order(tmp_path: Path, order: tuple) -> None:
    manager = manager_with(*((f"p{i}", plugin) for i, plugin in enumerate(order)))
    model = load_scope(tmp_path, manager, {})
    assert model.classify("extras/a.txt") is Scope.SHARED       # a provider may add paths
    assert model.classify("extras/big/a.bin") is Scope.IGNORED  # the stricter one wins
    assert model.classify("skills/private/x/SKILL.md") is Scope.LOCAL
    assert model.classify("logs/agent.log") is Scope.IGNORED     # hermes says never
    assert model.classify(".env") is Scope.IGNORED               # hard rule
    assert model.classify("roam/state.json") is Scope.IGNORED
    assert model.classify("venv/x") is Scope.IGNORED
    assert model.classify("unknown.txt") is Scope.SHARED         # only because of `**`
    assert LOOSE.seen[-1] == tmp_path


def test_provider_tiers_follow_device_settings(tmp_path: Path) -> None:
    tiered = provider("tiered", ScopeRule("journal/", Scope.SHARED, "journal", tier="sync_journal"))
    manager = manager_with(("tiered", tiered))
    off = load_scope(tmp_path, manager, {})
    on = load_scope(tmp_path, manager, {"sync_journal": True})
    assert off.classify("journal/a.md") is Scope.IGNORED
    assert on.classify("journal/a.md") is Scope.SHARED
    assert off.optional_items()["sync_journal"] is False
    assert on.optional_items()["sync_journal"] is True
    inactive = [rule for rule in off.rules() if not rule.active]
    assert [rule.pattern for rule in inactive if rule.source == "tiered"] == ["journal/"]


def test_builtin_rules_are_present_even_without_their_entry_point(
        tmp_path: Path, scope_of: Callable[..., ScopeModel]) -> None:
    model = scope_of(tmp_path)  # a manager that found no entry points at all
    assert model.classify("SOUL.md") is Scope.SHARED
    sources = {rule.source for rule in model.rules()}
    assert {"core", "hermes"} <= sources


def test_the_entry_point_provides_the_hermes_rules(tmp_path: Path) -> None:
    names = {row.name for row in get_manager().listing("rules", home=tmp_path)}
    assert {"hermes", "hermes-skills"} <= names
    sets = get_manager().scope_rules(tmp_path)
    assert [s.provider for s in sets] == sorted(s.provider for s in sets)
    assert sum(1 for s in sets if s.provider == "hermes") == 1
    model = load_scope(tmp_path, get_manager(), {})
    hermes = [r for r in model.rules() if r.source == "hermes"]
    assert len(hermes) == len(hermes_rules())  # once, although core would add it if missing


def test_settings_default_to_the_homes_config(tmp_path: Path) -> None:
    write(tmp_path, "config.yaml",
          "plugins:\n  entries:\n    roam:\n      settings:\n        sync_cron: true\n")
    model = load_scope(tmp_path, bare_manager())
    assert model.classify("cron/jobs.json") is Scope.SHARED

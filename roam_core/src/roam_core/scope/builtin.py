"""The built-in Hermes scope rules: an allowlist of what a Hermes home shares."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from roam_core.hookspecs import hookimpl
from roam_core.types import Scope, ScopeRule, ScopeRuleSet

#: Never synced, whatever any rule says.
NEVER = (
    ScopeRule("roam/", Scope.IGNORED, "roam's own state never travels"),
    ScopeRule(".env", Scope.IGNORED, "secrets"),
    ScopeRule("auth.json", Scope.IGNORED, "credentials"),
    ScopeRule("state.db", Scope.IGNORED, "session database"),
)

SHARED = (
    ScopeRule("SOUL.md", Scope.SHARED, "persona"),
    ScopeRule("memories/", Scope.SHARED, "memories"),
    ScopeRule("skills/", Scope.SHARED, "skills"),
    ScopeRule("skins/", Scope.SHARED, "skins"),
    ScopeRule("config.yaml", Scope.SHARED, "config (shared projection)"),
)


@hookimpl
def roam_scope_rules(home: Path) -> Iterator[ScopeRuleSet]:
    yield ScopeRuleSet(
        provider="hermes",
        rules=NEVER + SHARED + (ScopeRule("**", Scope.IGNORED, "not on the allowlist"),),
        summary="what a Hermes home shares (allowlist)",
    )
